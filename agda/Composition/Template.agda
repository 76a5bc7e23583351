{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The wiring of a train-template (certificates/wiring.py): the
-- abstract run of the schedule implies that the composed program
-- computes the reference step R.
--
-- Values form a commutative monoid (gradient and loss sums) with an
-- abstract scaling of the loss seed.  Every register holds a value and
-- the tag the checker gives it (act, gact, label, grad, loss,
-- gathered).  `Carries v τ` says what a tag means: v is the value the
-- reference step R gives that tag.  An event of the run reads
-- registers, the checker's condition `Ok` relates the input tags to
-- the output tags (what wiring.Run.do_<op> and Run.fire check), and the
-- program computes the output values from the input values (the block
-- implementations of a TP group, a send/recv, a sum).
--
--   * Gradient accumulation (`sum-∪`, `add-sound`, `addAll-sound`,
--     `grad-exact`): a sum over a (replica, micro-batch) mask is split
--     by disjoint masks; a gradient tagged with the full mask at the
--     sequential scale is R's gradient.
--   * Composition of blocks (`local`, `simulation`, `update-exact`,
--     `metric-exact`): each event preserves "every register carries
--     its tag's reference value", given the block refinement facts; so
--     every optimizer input and loss metric the checker accepts is R's.
------------------------------------------------------------------------
open import Data.Nat using (ℕ; zero; suc; _∸_; _≤_; s≤s; z≤n)
open import Data.Fin using (Fin; zero; suc)
open import Data.List using (List; []; _∷_; map; foldl; replicate; upTo)
open import Data.List.Relation.Unary.All using (All; []; _∷_)
open import Data.Product using (_×_; _,_; proj₁; proj₂)
open import Data.Maybe using (Maybe; just; nothing)
open import Relation.Binary.Definitions using (DecidableEquality)
open import Relation.Binary.PropositionalEquality

module Composition.Template
  -- values: a commutative monoid
  (V : Set) (_+_ : V → V → V) (ε : V)
  (+-assoc : ∀ a b d → (a + b) + d ≡ a + (b + d))
  (+-comm  : ∀ a b → a + b ≡ b + a)
  (+-idˡ   : ∀ a → ε + a ≡ a)
  -- scales (exact rationals in the checker), the seed scaling, c = 1/(M*dp*B*S*H)
  (S : Set) (sc : S → V → V) (c : S)
  -- L layers; n (replica, micro-batch) pairs; each pair's input slice and labels
  (L n : ℕ) (x y : Fin n → V)
  -- block specs; layer l's parameters are fixed inside F l, Bg l, Bθ l, O l
  (F  : ℕ → V → V)              -- fwd: out
  (Bg : ℕ → V → V → V)          -- bwd: g_in
  (Bθ : ℕ → ℕ → V → V → V)      -- bwd: shard t of grad.<p>
  (Hl Hg : V → V → V)           -- loss: loss, g
  (O  : ℕ → ℕ → V → V)          -- sgd: shard t of new.<p>, from shard t of the gradient
  -- block impls: member t of a TP group, given every member's inputs
  (Fi : ℕ → ℕ → List V → V)
  (Bgi Bθi : ℕ → ℕ → List (V × V) → V)
  (Hli Hgi : ℕ → List (V × V) → V)
  (Oi : ℕ → ℕ → List V → V)
  (gather : List V → V)         -- an all_gather's result
  -- the block refinement facts (replayed by chain.replay_refinement, with
  -- the interface of wiring.check_interface: inputs replicated over the
  -- group, outputs replicated, gradients and updates sharded by member)
  (fwd-ref  : ∀ l t vs a → All (_≡ a) vs → Fi l t vs ≡ F l a)
  (bwd-ref  : ∀ l t ps a g → All (_≡ (a , g)) ps → Bgi l t ps ≡ Bg l a g × Bθi l t ps ≡ Bθ l t a g)
  (loss-ref : ∀ t ps a y' → All (_≡ (a , y')) ps → Hgi t ps ≡ Hg a y' × Hli t ps ≡ Hl a y')
  (sgd-ref  : ∀ l t k gs (G : ℕ → V) → gs ≡ map G (upTo k) → Oi l t gs ≡ O l t (G t))
  -- registers ((rank, name, indices) in the checker)
  (Loc : Set) (_≟L_ : DecidableEquality Loc)
  where

open import Data.Bool using (Bool; true; false; _∧_; _∨_; not; T)
open import Data.Unit using (⊤; tt)
open import Data.Vec using (Vec; []; _∷_)
import Data.Vec as Vec
open import Data.Nat.Properties using (n∸n≡0)
open import Function.Base using (_∘_)
open import Relation.Nullary using (yes; no)

------------------------------------------------------------------------
-- Masks of (replica, micro-batch) pairs and sums over them

Mask : Set
Mask = Vec Bool n

full : Mask
full = Vec.replicate true

single : ∀ {k} → Fin k → Vec Bool k
single zero    = true ∷ Vec.replicate false
single (suc i) = false ∷ single i

_∪_ : ∀ {k} → Vec Bool k → Vec Bool k → Vec Bool k
[]      ∪ []        = []
(a ∷ m) ∪ (b ∷ m') = (a ∨ b) ∷ (m ∪ m')

-- wiring.Run.add: `a & b == 0`
Disjoint : ∀ {k} → Vec Bool k → Vec Bool k → Set
Disjoint []      []        = ⊤
Disjoint (a ∷ m) (b ∷ m') = T (not (a ∧ b)) × Disjoint m m'

sumOver : ∀ {k} → (Fin k → V) → Vec Bool k → V
sumOver g []          = ε
sumOver g (true ∷ m)  = g zero + sumOver (g ∘ suc) m
sumOver g (false ∷ m) = sumOver (g ∘ suc) m

-- the sequential sum over every pair
sumAll : ∀ {k} → (Fin k → V) → V
sumAll {zero}  g = ε
sumAll {suc k} g = g zero + sumAll (g ∘ suc)

+-idʳ : ∀ a → a + ε ≡ a
+-idʳ a = trans (+-comm a ε) (+-idˡ a)

+-swap : ∀ a b d → a + (b + d) ≡ b + (a + d)
+-swap a b d = trans (sym (+-assoc a b d)) (trans (cong (_+ d) (+-comm a b)) (+-assoc b a d))

sum-none : ∀ {k} (g : Fin k → V) → sumOver g (Vec.replicate false) ≡ ε
sum-none {zero}  g = refl
sum-none {suc k} g = sum-none (g ∘ suc)

sum-single : ∀ {k} (g : Fin k → V) i → sumOver g (single i) ≡ g i
sum-single g zero    = trans (cong (g zero +_) (sum-none (g ∘ suc))) (+-idʳ (g zero))
sum-single g (suc i) = sum-single (g ∘ suc) i

sum-full : ∀ {k} (g : Fin k → V) → sumOver g (Vec.replicate true) ≡ sumAll g
sum-full {zero}  g = refl
sum-full {suc k} g = cong (g zero +_) (sum-full (g ∘ suc))

-- a sum over the union of disjoint masks is the sum of the two sums
sum-∪ : ∀ {k} (g : Fin k → V) m m' → Disjoint m m' → sumOver g (m ∪ m') ≡ sumOver g m + sumOver g m'
sum-∪ g []          []           tt      = sym (+-idˡ ε)
sum-∪ g (true ∷ m)  (true ∷ m')  (() , _)
sum-∪ g (true ∷ m)  (false ∷ m') (_ , d) =
  trans (cong (g zero +_) (sum-∪ (g ∘ suc) m m' d)) (sym (+-assoc _ _ _))
sum-∪ g (false ∷ m) (true ∷ m')  (_ , d) =
  trans (cong (g zero +_) (sum-∪ (g ∘ suc) m m' d)) (+-swap (g zero) _ _)
sum-∪ g (false ∷ m) (false ∷ m') (_ , d) = sum-∪ (g ∘ suc) m m' d

------------------------------------------------------------------------
-- The reference step R, per pair i

act-ref : ℕ → Fin n → V                     -- input of layer l
act-ref zero    i = x i
act-ref (suc l) i = F l (act-ref l i)

-- cotangent into layer l with k = L ∸ l layers below the loss
cot′ : ℕ → ℕ → Fin n → S → V
cot′ zero    l i s = sc s (Hg (act-ref l i) (y i))
cot′ (suc k) l i s = Bg l (act-ref l i) (cot′ k (suc l) i s)

cot : ℕ → Fin n → S → V
cot l = cot′ (L ∸ l) l

gc : ℕ → ℕ → S → Fin n → V                  -- pair i's contribution to shard t of layer l's gradient
gc l t s i = Bθ l t (act-ref l i) (cot (suc l) i s)

lc : S → Fin n → V                          -- pair i's loss
lc s i = sc s (Hl (act-ref L i) (y i))

Gseq : ℕ → ℕ → V                            -- shard t of R's gradient of layer l
Gseq l t = sumAll (gc l t c)

Lseq : V                                    -- R's loss metric
Lseq = sumAll (lc c)

∸-suc : ∀ m l → suc l ≤ m → m ∸ l ≡ suc (m ∸ suc l)
∸-suc (suc m) zero    (s≤s _) = refl
∸-suc (suc m) (suc l) (s≤s p) = ∸-suc m l p

cot-step : ∀ l i s → suc l ≤ L → cot l i s ≡ Bg l (act-ref l i) (cot (suc l) i s)
cot-step l i s lt = cong (λ k → cot′ k l i s) (∸-suc L l lt)

cot-top : ∀ i s → cot L i s ≡ sc s (Hg (act-ref L i) (y i))
cot-top i s = cong (λ k → cot′ k L i s) (n∸n≡0 L)

------------------------------------------------------------------------
-- Tags and what they mean

data Tag : Set where
  act      : ℕ → Fin n → Tag                -- act[l, d, m]
  gact     : ℕ → Fin n → S → Tag            -- gact[l, d, m, s]
  label    : Fin n → Tag                    -- label[d, m]
  grad     : ℕ → ℕ → Mask → S → Tag         -- grad[l, t, mask, s]
  loss     : Mask → S → Tag                 -- loss[mask, s]
  gathered : Tag

Carries : V → Tag → Set
Carries v (act l i)      = v ≡ act-ref l i
Carries v (gact l i s)   = v ≡ cot l i s
Carries v (label i)      = v ≡ y i
Carries v (grad l t m s) = v ≡ sumOver (gc l t s) m
Carries v (loss m s)     = v ≡ sumOver (lc s) m
Carries v gathered       = ⊤

data Goods : List V → List Tag → Set where
  []  : Goods [] []
  _∷_ : ∀ {v τ vs τs} → Carries v τ → Goods vs τs → Goods (v ∷ vs) (τ ∷ τs)

------------------------------------------------------------------------
-- Gradient accumulation (wiring.Run.add, do_acc, fire for all_reduce)

-- equal tensors (layer, shard) at equal scales over disjoint masks
data Add : Tag → Tag → Tag → Set where
  grad+ : ∀ {l t m m' s} → Disjoint m m' → Add (grad l t m s) (grad l t m' s) (grad l t (m ∪ m') s)
  loss+ : ∀ {m m' s} → Disjoint m m' → Add (loss m s) (loss m' s) (loss (m ∪ m') s)

add-sound : ∀ {v w τ τ' τ''} → Add τ τ' τ'' → Carries v τ → Carries w τ' → Carries (v + w) τ''
add-sound (grad+ {l} {t} {m} {m'} {s} d) p q = trans (cong₂ _+_ p q) (sym (sum-∪ (gc l t s) m m' d))
add-sound (loss+ {m} {m'} {s} d)         p q = trans (cong₂ _+_ p q) (sym (sum-∪ (lc s) m m' d))

-- fire: p0 = add(p0, p) over the group's members in order
data AddAll : Tag → List Tag → Tag → Set where
  done : ∀ {τ} → AddAll τ [] τ
  more : ∀ {τ τ₁ τ₂ τs τ'} → Add τ τ₁ τ₂ → AddAll τ₂ τs τ' → AddAll τ (τ₁ ∷ τs) τ'

addAll-sound : ∀ {v vs τ τs τ'} → AddAll τ τs τ' → Carries v τ → Goods vs τs → Carries (foldl _+_ v vs) τ'
addAll-sound done       p []       = p
addAll-sound (more a r) p (q ∷ qs) = addAll-sound r (add-sound a p q) qs

-- what do_opt and do_metric demand: the full mask at the sequential scale
grad-exact : ∀ {v l t} → Carries v (grad l t full c) → v ≡ Gseq l t
grad-exact {l = l} {t} p = trans p (sum-full (gc l t c))

loss-exact : ∀ {v} → Carries v (loss full c) → v ≡ Lseq
loss-exact p = trans p (sum-full (lc c))

------------------------------------------------------------------------
-- Events: the checker's condition on tags and the program's values

data Ev : Set where
  inX inY : Fin n → Loc → Ev                        -- input x / y of a pair
  mv      : Loc → Loc → Ev                          -- a send/recv pair; acc into an empty register
  accE    : Loc → Loc → Ev                          -- into += from
  fwdE    : (l k : ℕ) → List Loc → List Loc → Ev    -- TP group of k: each member's in / out
  bwdE    : (l k : ℕ) → List Loc → List Loc → Ev    -- each member's in, seed / out, grad
  lossE   : S → (k : ℕ) → List Loc → List Loc → Ev  -- each member's in, label / out, loss
  arE agE : (k : ℕ) → List Loc → Ev                 -- all_reduce / all_gather of k members

reads writes : Ev → List Loc
reads (inX _ _)        = []
reads (inY _ _)        = []
reads (mv r _)         = r ∷ []
reads (accE r r')      = r ∷ r' ∷ []
reads (fwdE _ _ rs _)  = rs
reads (bwdE _ _ rs _)  = rs
reads (lossE _ _ rs _) = rs
reads (arE _ rs)       = rs
reads (agE _ rs)       = rs
writes (inX _ w)        = w ∷ []
writes (inY _ w)        = w ∷ []
writes (mv _ w)         = w ∷ []
writes (accE r _)       = r ∷ []
writes (fwdE _ _ _ ws)  = ws
writes (bwdE _ _ _ ws)  = ws
writes (lossE _ _ _ ws) = ws
writes (arE _ rs)       = rs
writes (agE _ rs)       = rs

pairUp : List V → List (V × V)
pairUp (a ∷ g ∷ vs) = (a , g) ∷ pairUp vs
pairUp _            = []

both : ∀ {A : Set} → (ℕ → A) → (ℕ → A) → List ℕ → List A
both f g []       = []
both f g (t ∷ ts) = f t ∷ g t ∷ both f g ts

-- the program: member t of a block runs the block impl's rank t
prog : Ev → List V → List V
prog (inX i _)        _            = x i ∷ []
prog (inY i _)        _            = y i ∷ []
prog (mv _ _)         vs           = vs
prog (accE _ _)       (v ∷ w ∷ _)  = v + w ∷ []
prog (accE _ _)       _            = []
prog (fwdE l k _ _)   vs           = map (λ t → Fi l t vs) (upTo k)
prog (bwdE l k _ _)   vs           = both (λ t → Bgi l t (pairUp vs)) (λ t → Bθi l t (pairUp vs)) (upTo k)
prog (lossE s k _ _)  vs           = both (λ t → sc s (Hgi t (pairUp vs))) (λ t → sc s (Hli t (pairUp vs))) (upTo k)
prog (arE k _)        []           = []
prog (arE k _)        (v ∷ vs)     = replicate k (foldl _+_ v vs)
prog (agE k _)        vs           = replicate k (gather vs)

data Pairs (P Q : Tag) : List Tag → Set where
  []   : Pairs P Q []
  pair : ∀ {τs} → Pairs P Q τs → Pairs P Q (P ∷ Q ∷ τs)

-- the checks of wiring.Run.do_<op> (a block's `need`, and `fire`: every
-- member of a TP group presents the same inputs)
data Ok : Ev → List Tag → List Tag → Set where
  inX-ok  : ∀ {i w} → Ok (inX i w) [] (act 0 i ∷ [])
  inY-ok  : ∀ {i w} → Ok (inY i w) [] (label i ∷ [])
  mv-ok   : ∀ {r w τ} → Ok (mv r w) (τ ∷ []) (τ ∷ [])
  acc-ok  : ∀ {r r' τ τ' τ''} → Add τ τ' τ'' → Ok (accE r r') (τ ∷ τ' ∷ []) (τ'' ∷ [])
  fwd-ok  : ∀ {l k rs ws i τs} → All (_≡ act l i) τs →
            Ok (fwdE l k rs ws) τs (map (λ _ → act (suc l) i) (upTo k))
  bwd-ok  : ∀ {l k rs ws i s τs} → suc l ≤ L → Pairs (act l i) (gact (suc l) i s) τs →
            Ok (bwdE l k rs ws) τs (both (λ _ → gact l i s) (λ t → grad l t (single i) s) (upTo k))
  loss-ok : ∀ {s k rs ws i τs} → Pairs (act L i) (label i) τs →
            Ok (lossE s k rs ws) τs (both (λ _ → gact L i s) (λ _ → loss (single i) s) (upTo k))
  ar-ok   : ∀ {k rs τ τs τ'} → AddAll τ τs τ' → Ok (arE k rs) (τ ∷ τs) (replicate k τ')
  ag-ok   : ∀ {k rs τs} → Ok (agE k rs) τs (replicate k gathered)

reps-vals : ∀ {l i vs τs} → All (_≡ act l i) τs → Goods vs τs → All (_≡ act-ref l i) vs
reps-vals []          []       = []
reps-vals (refl ∷ es) (p ∷ gs) = p ∷ reps-vals es gs

pairs-vals : ∀ {P Q p q vs τs} → (∀ {v} → Carries v P → v ≡ p) → (∀ {v} → Carries v Q → v ≡ q) →
             Pairs P Q τs → Goods vs τs → All (_≡ (p , q)) (pairUp vs)
pairs-vals hp hq []        []             = []
pairs-vals hp hq (pair ps) (u ∷ w ∷ gs)   = cong₂ _,_ (hp u) (hq w) ∷ pairs-vals hp hq ps gs

goods-map : ∀ {f : ℕ → V} {g : ℕ → Tag} ts → (∀ t → Carries (f t) (g t)) → Goods (map f ts) (map g ts)
goods-map []       h = []
goods-map (t ∷ ts) h = h t ∷ goods-map ts h

goods-both : ∀ {f g : ℕ → V} {f' g' : ℕ → Tag} ts → (∀ t → Carries (f t) (f' t)) →
             (∀ t → Carries (g t) (g' t)) → Goods (both f g ts) (both f' g' ts)
goods-both []       hf hg = []
goods-both (t ∷ ts) hf hg = hf t ∷ hg t ∷ goods-both ts hf hg

goods-rep : ∀ {v τ} k → Carries v τ → Goods (replicate k v) (replicate k τ)
goods-rep zero    p = []
goods-rep (suc k) p = p ∷ goods-rep k p

-- each event the checker accepts maps inputs that carry their tags to
-- outputs that carry theirs
local : ∀ {e vs τs τs'} → Ok e τs τs' → Goods vs τs → Goods (prog e vs) τs'
local inX-ok     []             = refl ∷ []
local inY-ok     []             = refl ∷ []
local mv-ok      gs             = gs
local (acc-ok a) (p ∷ q ∷ [])   = add-sound a p q ∷ []
local {fwdE l k _ _} {vs} (fwd-ok {i = i} es) gs =
  goods-map (upTo k) (λ t → fwd-ref l t vs (act-ref l i) (reps-vals es gs))
local {bwdE l k _ _} {vs} (bwd-ok {i = i} {s} lt ps) gs =
  goods-both (upTo k) (λ t → trans (proj₁ (ref t)) (sym (cot-step l i s lt)))
                      (λ t → trans (proj₂ (ref t)) (sym (sum-single (gc l t s) i)))
  where ref = λ t → bwd-ref l t (pairUp vs) _ _ (pairs-vals (λ e → e) (λ e → e) ps gs)
local {lossE s k _ _} {vs} (loss-ok {i = i} ps) gs =
  goods-both (upTo k) (λ t → trans (cong (sc s) (proj₁ (ref t))) (sym (cot-top i s)))
                      (λ t → trans (cong (sc s) (proj₂ (ref t))) (sym (sum-single (lc s) i)))
  where ref = λ t → loss-ref t (pairUp vs) _ _ (pairs-vals (λ e → e) (λ e → e) ps gs)
local (ar-ok {k} a) (p ∷ gs)    = goods-rep k (addAll-sound a p gs)
local (ag-ok {k})   gs          = goods-rep k tt

------------------------------------------------------------------------
-- The abstract run: registers, steps, and the simulation lemma

St : Set
St = Loc → Maybe (V × Tag)

empty : St
empty _ = nothing

set : St → Loc → V → Tag → St
set σ r v τ r' with r' ≟L r
... | yes _ = just (v , τ)
... | no  _ = σ r'

write : St → List Loc → List V → List Tag → St
write σ (r ∷ rs) (v ∷ vs) (τ ∷ τs) = write (set σ r v τ) rs vs τs
write σ _        _        _        = σ

-- reading an empty register is an error (wiring.Run.get)
data Reads (σ : St) : List Loc → List V → List Tag → Set where
  []  : Reads σ [] [] []
  _∷_ : ∀ {r v τ rs vs τs} → σ r ≡ just (v , τ) → Reads σ rs vs τs → Reads σ (r ∷ rs) (v ∷ vs) (τ ∷ τs)

data Step (e : Ev) (σ : St) : St → Set where
  step : ∀ {vs τs τs'} → Reads σ (reads e) vs τs → Ok e τs τs' →
         Step e σ (write σ (writes e) (prog e vs) τs')

data Run : List Ev → St → St → Set where
  []  : ∀ {σ} → Run [] σ σ
  _∷_ : ∀ {e es σ σ' σ''} → Step e σ σ' → Run es σ' σ'' → Run (e ∷ es) σ σ''

-- every register carries its tag's reference value
Good : St → Set
Good σ = ∀ r {v τ} → σ r ≡ just (v , τ) → Carries v τ

empty-good : Good empty
empty-good r ()

set-good : ∀ {σ} r {v τ} → Good σ → Carries v τ → Good (set σ r v τ)
set-good r g p r' e with r' ≟L r
set-good r g p r' refl | yes _ = p
set-good r g p r' e    | no  _ = g r' e

write-good : ∀ {σ} rs {vs τs} → Good σ → Goods vs τs → Good (write σ rs vs τs)
write-good []       g gs       = g
write-good (r ∷ rs) g []       = g
write-good (r ∷ rs) g (p ∷ gs) = write-good rs (set-good r g p) gs

reads-good : ∀ {σ rs vs τs} → Good σ → Reads σ rs vs τs → Goods vs τs
reads-good g []       = []
reads-good g (e ∷ rd) = g _ e ∷ reads-good g rd

simulation : ∀ {es σ σ'} → Run es σ σ' → Good σ → Good σ'
simulation []                              g = g
simulation (_∷_ {e = e} (step rd ok) run) g =
  simulation run (write-good (writes e) g (local ok (reads-good g rd)))

------------------------------------------------------------------------
-- The end of the wiring argument

-- the TP group of an optimizer step reads member t's gradient tagged
-- grad[l, t, full, c] (do_opt): member t's new shard is R's
update-exact : ∀ {es σ} → Run es empty σ → ∀ l k rs gs →
               Reads σ rs gs (map (λ t → grad l t full c) (upTo k)) →
               ∀ t → Oi l t gs ≡ O l t (Gseq l t)
update-exact {σ = σ} run l k rs gs rd t = sgd-ref l t k gs (Gseq l) (vals (upTo k) (reads-good good rd))
  where
    good = simulation run empty-good
    vals : ∀ ts {gs'} → Goods gs' (map (λ t → grad l t full c) ts) → gs' ≡ map (Gseq l) ts
    vals []       []       = refl
    vals (t ∷ ts) (p ∷ ps) = cong₂ _∷_ (grad-exact p) (vals ts ps)

-- a loss metric reads loss[full, c] (do_metric): it is R's
metric-exact : ∀ {es σ} → Run es empty σ → ∀ r {v} → σ r ≡ just (v , loss full c) → v ≡ Lseq
metric-exact run r e = loss-exact (simulation run empty-good r e)
