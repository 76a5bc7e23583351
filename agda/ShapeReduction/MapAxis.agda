{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Shape reduction of map axes (issue 12): the theorem behind the
-- reduced-shape check of certificates/shapes.py.
--
-- Fix one axis.  A tensor is seen through its slices along the axis:
-- `Fin n → A`, where A holds the rest of the tensor (its other axes,
-- and the slices of the other inputs).  The axis is cut into r regions
-- (the intervals between the recorded offsets: shard boundaries,
-- slice and pad offsets, split sizes); `reg : Fin n → Fin r` says which
-- region each index is in.  An obligation is *map-axis* when output
-- element i is computed from input element i by one per-region
-- function, the same at every size: it depends on i only through the
-- region of i.  Then agreement at a reduced size in which every region
-- still occurs gives agreement at the full size (`map-reduction`).
-- Composition and fan-out keep the property (`map-compose`,
-- `map-pair`).  Section 4 states it in the checker's coordinates
-- (each tensor's own regions, element = region and offset): a whole
-- cone of operators, as the checker cuts it, is map-axis when each
-- operator is (`cone-map`), and reduces (`cone-reduction`).  Summed
-- axes are not covered (`summed-not-covered`).  Several axes: apply the
-- theorem one axis at a time (the other axes are part of V, at any
-- size).
------------------------------------------------------------------------
module ShapeReduction.MapAxis where

open import Data.Nat using (ℕ; zero; suc; _+_; _*_; _≤_; s≤s; z≤n)
open import Data.Nat.Solver using (module +-*-Solver)
open import Data.Fin using (Fin; zero; suc; splitAt; raise)
open import Data.Fin.Properties using (splitAt-raise) renaming (_≟_ to _≟ᶠ_)
open import Data.Sum using (inj₁; inj₂; [_,_]′)
open import Data.Product using (Σ; ∃; _×_; _,_; proj₁; proj₂)
open import Data.List using (List; []; _∷_; map)
open import Data.List.Properties using (map-cong) renaming (map-compose to map-∘)
open import Data.Vec using (Vec; []; _∷_; lookup; sum)
open import Data.Empty using (⊥-elim)
open import Relation.Nullary using (¬_; yes; no)
open import Relation.Binary.PropositionalEquality

------------------------------------------------------------------------
-- 1. Map-axis functions

-- The checker's semantics of an obligation at every size n, given the
-- region map of that size.
Family : ℕ → Set → Set → Set
Family r A B = ∀ {n} → (Fin n → Fin r) → (Fin n → A) → Fin n → B

-- `Map f` : the map-axis function with per-region functions f, at the
-- size and with the region map it is given.
Map : ∀ {r A B} → (Fin r → A → B) → Family r A B
Map f reg x i = f (reg i) (x i)

-- F is map-axis: at every size, F agrees pointwise with `Map f` for one
-- f that does not depend on the size.
IsMap : ∀ {r A B} → Family r A B → Set
IsMap {r} {A} {B} F =
  Σ (Fin r → A → B) λ f → ∀ {n} (reg : Fin n → Fin r) x i → F reg x i ≡ Map f reg x i

Map-map : ∀ {r A B} (f : Fin r → A → B) → IsMap (Map f)
Map-map f = f , λ reg x i → refl

-- G after F, over the same regions
map-compose : ∀ {r A B C} {F : Family r A B} {G : Family r B C} →
              IsMap F → IsMap G → IsMap (λ reg x → G reg (F reg x))
map-compose {F = F} (f , pf) (g , pg) =
  (λ k a → g k (f k a)) ,
  λ reg x i → trans (pg reg (F reg x) i) (cong (g (reg i)) (pf reg x i))

-- fan-out: two functions of the same input, paired (fan-in is
-- `map-compose` after `map-pair`)
map-pair : ∀ {r A B C} {F : Family r A B} {G : Family r A C} →
           IsMap F → IsMap G → IsMap (λ reg x i → F reg x i , G reg x i)
map-pair (f , pf) (g , pg) =
  (λ k a → f k a , g k a) , λ reg x i → cong₂ _,_ (pf reg x i) (pg reg x i)

-- an operator that sees only some of the offsets: its regions are
-- unions of the obligation's regions (π maps each region to its own)
map-coarsen : ∀ {r r₁ A B} (π : Fin r → Fin r₁) {F : Family r₁ A B} →
              IsMap F → IsMap (λ {n} reg → F {n} (λ i → π (reg i)))
map-coarsen π (f , pf) = (λ k → f (π k)) , λ reg → pf (λ i → π (reg i))

------------------------------------------------------------------------
-- 2. The reduction theorem

-- every region that reg hits, reg' hits too
Covers : ∀ {n n' r} → (Fin n' → Fin r) → (Fin n → Fin r) → Set
Covers reg' reg = ∀ i → ∃ λ j → reg' j ≡ reg i

-- the obligation's assumption (its input relations), index by index
Holds : ∀ {n r} {A : Set} → (Fin r → A → Set) → (Fin n → Fin r) → (Fin n → A) → Set
Holds P reg x = ∀ i → P (reg i) (x i)

-- the reduced input built from a full one: index j₀ reads the full
-- index i, every other index j a full index of the same region as j
private
  pick : ∀ {n n'} → (Fin n' → Fin n) → Fin n' → Fin n → Fin n' → Fin n
  pick back j₀ i j with j ≟ᶠ j₀
  ... | yes _ = i
  ... | no  _ = back j

  pick-at : ∀ {n n'} (back : Fin n' → Fin n) j₀ i → pick back j₀ i j₀ ≡ i
  pick-at back j₀ i with j₀ ≟ᶠ j₀
  ... | yes _ = refl
  ... | no ne = ⊥-elim (ne refl)

  pick-reg : ∀ {n n' r} (reg : Fin n → Fin r) (reg' : Fin n' → Fin r) (back : Fin n' → Fin n) →
             (∀ j → reg (back j) ≡ reg' j) → ∀ j₀ i → reg' j₀ ≡ reg i →
             ∀ j → reg (pick back j₀ i j) ≡ reg' j
  pick-reg reg reg' back eb j₀ i e j with j ≟ᶠ j₀
  ... | yes refl = sym e
  ... | no  _    = eb j

-- Two map-axis obligations that agree at the reduced size (for every
-- input satisfying the assumption) agree at the full size, when the
-- reduced size has the same regions: every region of the full size
-- occurs at the reduced size and conversely.
map-reduction :
  ∀ {r A B} {F G : Family r A B} (P : Fin r → A → Set) → IsMap F → IsMap G →
  ∀ {n n'} (reg : Fin n → Fin r) (reg' : Fin n' → Fin r) →
  Covers reg' reg → Covers reg reg' →
  (∀ x' → Holds P reg' x' → ∀ j → F reg' x' j ≡ G reg' x' j) →
  ∀ x → Holds P reg x → ∀ i → F reg x i ≡ G reg x i
map-reduction {F = F} {G} P (f , pf) (g , pg) reg reg' cov back small x hx i =
  let j₀ , e = cov i
      b      = λ j → proj₁ (back j)
      x'     = λ j → x (pick b j₀ i j)
      er     = pick-reg reg reg' b (λ j → proj₂ (back j)) j₀ i e
      hx'    = λ j → subst (λ k → P k (x' j)) (er j) (hx (pick b j₀ i j))
      at     = cong x (pick-at b j₀ i)
  in begin
    F reg x i                 ≡⟨ pf reg x i ⟩
    f (reg i) (x i)           ≡⟨ cong₂ f (sym e) (sym at) ⟩
    f (reg' j₀) (x' j₀)       ≡⟨ sym (pf reg' x' j₀) ⟩
    F reg' x' j₀              ≡⟨ small x' hx' j₀ ⟩
    G reg' x' j₀              ≡⟨ pg reg' x' j₀ ⟩
    g (reg' j₀) (x' j₀)       ≡⟨ cong₂ g e at ⟩
    g (reg i) (x i)           ≡⟨ sym (pg reg x i) ⟩
    G reg x i                 ∎
  where open ≡-Reasoning

-- Without an assumption (the input relations substituted into the
-- obligation), one direction of covering is enough.
map-reduction₀ :
  ∀ {r A B} {F G : Family r A B} → IsMap F → IsMap G →
  ∀ {n n'} (reg : Fin n → Fin r) (reg' : Fin n' → Fin r) → Covers reg' reg →
  (∀ x' j → F reg' x' j ≡ G reg' x' j) → ∀ x i → F reg x i ≡ G reg x i
map-reduction₀ {F = F} {G} (f , pf) (g , pg) reg reg' cov small x i =
  let j₀ , e = cov i
      x'     = λ (_ : Fin _) → x i
  in trans (pf reg x i)
    (trans (cong (λ k → f k (x i)) (sym e))
    (trans (sym (pf reg' x' j₀))
    (trans (small x' j₀)
    (trans (pg reg' x' j₀)
    (trans (cong (λ k → g k (x i)) e) (sym (pg reg x i)))))))

------------------------------------------------------------------------
-- 3. Regions given by their lengths, as the checker records them

-- the region of each index of an axis cut into pieces of lengths ls
regionOf : ∀ {r} (ls : Vec ℕ r) → Fin (sum ls) → Fin r
regionOf (l ∷ ls) i = [ (λ _ → zero) , (λ j → suc (regionOf ls j)) ]′ (splitAt l i)

private
  fin-pos : ∀ {l} → Fin l → 1 ≤ l
  fin-pos {suc l} _ = s≤s z≤n

-- a region that contains an index is not empty
regionOf-nonempty : ∀ {r} (ls : Vec ℕ r) i → 1 ≤ lookup ls (regionOf ls i)
regionOf-nonempty (l ∷ ls) i with splitAt l i
... | inj₁ j = fin-pos j
... | inj₂ j = regionOf-nonempty ls j

-- a non-empty region contains an index
regionOf-hits : ∀ {r} (ls : Vec ℕ r) k → 1 ≤ lookup ls k → ∃ λ i → regionOf ls i ≡ k
regionOf-hits (zero  ∷ ls) zero    ()
regionOf-hits (suc l ∷ ls) zero    _ = zero , refl
regionOf-hits (l     ∷ ls) (suc k) p with regionOf-hits ls k p
... | j , e rewrite sym e = raise l j , cong [ (λ _ → zero) , (λ j → suc (regionOf ls j)) ]′
                                             (splitAt-raise l (sum ls) j)

-- The checker's condition: the same regions are non-empty at both sizes
-- (it divides every region length by d and requires at least one
-- element left in each).  Then the region maps cover each other.
regions-cover : ∀ {r} (ls ls' : Vec ℕ r) →
                (∀ k → 1 ≤ lookup ls k → 1 ≤ lookup ls' k) →
                Covers (regionOf ls') (regionOf ls)
regions-cover ls ls' ne i = regionOf-hits ls' (regionOf ls i) (ne _ (regionOf-nonempty ls i))

------------------------------------------------------------------------
-- 4. Cones, in the checker's coordinates.  Each tensor's axis is cut
-- into its own regions (at most r of them: its shard pieces, slices,
-- pads); an element is (region k, offset t within k), and an operator
-- computes region k of its output at offset t from the SAME offset t of
-- its inputs' regions, by a function of k that does not depend on the
-- size.  This covers the one-region-map form of sections 1-2 and also
-- local frames: a slice or a concat piece reads another region of its
-- input, a sum of two shards reads one region of each.  A list of such
-- operators in topological order (fan-out and fan-in: a DAG) holds the
-- spec side, the impl side and the relations' expressions, with
-- distinct names; V holds one slice of any tensor (its other axes).
--
-- Tensors are total (every region, every offset).  The checker's
-- tensors are their in-range part; the two readings agree because a
-- checked operator reads region k' at offset t only where t is in
-- range for k' (regions read together are tied: equal lengths at both
-- sizes).

module Cone (V : Set) (r : ℕ) where
  open import Data.Nat using (_≟_; _<_)
  open import Data.Nat.Properties using (≤-trans)
  open import Data.Vec using (tabulate)
  open import Data.Vec.Properties using (tabulate-cong; lookup∘tabulate)

  Name = ℕ
  Tensor = Fin r → ℕ → V            -- region, offset
  Env = Name → Tensor
  Col = Name → Vec V r              -- one offset of every region of every tensor
  Lengths = Name → Fin r → ℕ        -- every region's length, at one size

  record Op : Set where
    field
      out    : Name
      ins    : List Name
      fn     : Lengths → List Tensor → Tensor       -- the checker's semantics, at every size
      φ      : Fin r → List (Vec V r) → V           -- per output region, on one offset
      is-map : ∀ len xs k t → fn len xs k t ≡ φ k (map (λ x → tabulate (λ k' → x k' t)) xs)
  open Op

  upd : ∀ {T : Set} → (Name → T) → Name → T → Name → T
  upd ρ a v m with m ≟ a
  ... | yes _ = v
  ... | no  _ = ρ m

  col : Env → ℕ → Col
  col ρ t m = tabulate (λ k → ρ m k t)

  -- whole tensors, at one size
  exec : Lengths → Op → Env → Env
  exec len o ρ = upd ρ (out o) (fn o len (map ρ (ins o)))

  run : Lengths → List Op → Env → Env
  run len []       ρ = ρ
  run len (o ∷ os) ρ = run len os (exec len o ρ)

  -- one offset, every region
  execC : Op → Col → Col
  execC o c = upd c (out o) (tabulate (λ k → φ o k (map c (ins o))))

  runC : List Op → Col → Col
  runC []       c = c
  runC (o ∷ os) c = runC os (execC o c)

  runC-cong : ∀ os {c c' : Col} → (∀ m → c m ≡ c' m) → ∀ m → runC os c m ≡ runC os c' m
  runC-cong []       e = e
  runC-cong (o ∷ os) {c} {c'} e = runC-cong os step
    where
    step : ∀ m → execC o c m ≡ execC o c' m
    step m with m ≟ out o
    ... | yes _ = cong (λ z → tabulate (λ k → φ o k z)) (map-cong e (ins o))
    ... | no  _ = e m

  col-exec : ∀ len o ρ t m → col (exec len o ρ) t m ≡ execC o (col ρ t) m
  col-exec len o ρ t m with m ≟ out o
  ... | yes _ = tabulate-cong λ k → trans (is-map o len (map ρ (ins o)) k t)
                                          (cong (φ o k) (sym (map-∘ (ins o))))
  ... | no  _ = refl

  -- every element of every tensor of the cone is the per-offset run of
  -- the cone on that offset
  cone-map : ∀ os len ρ m k t → run len os ρ m k t ≡ lookup (runC os (col ρ t) m) k
  cone-map []       len ρ m k t = sym (lookup∘tabulate (λ k → ρ m k t) k)
  cone-map (o ∷ os) len ρ m k t =
    trans (cone-map os len (exec len o ρ) m k t)
          (cong (λ v → lookup v k) (runC-cong os (col-exec len o ρ t) m))

  -- an environment constant along the axis (a tensor without the axis,
  -- e.g. a broadcast operand or a parameter, is one)
  flat : (Name → Fin r → V) → Env
  flat c m k _ = c m k

  -- The obligation "tensor a equals tensor b" (a, b: the same regions),
  -- under an assumption P on each offset (the input relations), holds at
  -- the full lengths if it holds at reduced lengths in which every
  -- non-empty region of a is still non-empty.  The reduced hypothesis is
  -- needed only for environments constant along the axis, so it follows
  -- from the checker's reduced check whether or not a tensor has the axis.
  cone-reduction :
    ∀ os (a b : Name) (P : Col → Set) (len len' : Lengths) →
    (∀ k → 1 ≤ len a k → 1 ≤ len' a k) →
    (∀ c → P (col (flat c) 0) → ∀ k s → s < len' a k → run len' os (flat c) a k s ≡ run len' os (flat c) b k s) →
    ∀ ρ → (∀ t → P (col ρ t)) → ∀ k t → t < len a k → run len os ρ a k t ≡ run len os ρ b k t
  cone-reduction os a b P len len' ne small ρ hρ k t lt =
    let ρ' = flat (λ m k → ρ m k t)     -- every offset of the reduced input is offset t
    in begin
      run len os ρ a k t            ≡⟨ cone-map os len ρ a k t ⟩
      lookup (runC os (col ρ t) a) k ≡⟨ sym (cone-map os len' ρ' a k 0) ⟩
      run len' os ρ' a k 0          ≡⟨ small (λ m k → ρ m k t) (hρ t) k 0 (ne k (≤-trans (s≤s z≤n) lt)) ⟩
      run len' os ρ' b k 0          ≡⟨ cone-map os len' ρ' b k 0 ⟩
      lookup (runC os (col ρ t) b) k ≡⟨ sym (cone-map os len ρ b k t) ⟩
      run len os ρ b k t            ∎
    where open ≡-Reasoning

------------------------------------------------------------------------
-- 5. Summed axes are not covered: two sums of element-wise powers (the
-- impl of issue 12's first attack) agree at size 2 for every input and
-- differ at size 3.  p₁³ + 2 p₃ - 3 p₁ p₂ = 6 e₃, and e₃ vanishes at
-- every size ≤ 2 (in general e_{k+1} vanishes at every size ≤ k, so no
-- minimum size helps).  Such axes stay at full size.

-- sum along a non-empty axis of length suc n
sumF : ∀ {n} → (Fin (suc n) → ℕ) → ℕ
sumF {zero}  x = x zero
sumF {suc n} x = x zero + sumF (λ i → x (suc i))

trapL trapR : ∀ {n} → (Fin (suc n) → ℕ) → ℕ
trapL x = sumF x * sumF x * sumF x + 2 * sumF (λ i → x i * x i * x i)
trapR x = 3 * sumF x * sumF (λ i → x i * x i)

private
  open +-*-Solver
  e₃-vanishes : ∀ a b → (a + b) * (a + b) * (a + b) + 2 * (a * a * a + b * b * b) ≡
                        3 * (a + b) * (a * a + b * b)
  e₃-vanishes = solve 2 (λ a b →
    (a :+ b) :* (a :+ b) :* (a :+ b) :+ con 2 :* (a :* a :* a :+ b :* b :* b) :=
    con 3 :* (a :+ b) :* (a :* a :+ b :* b)) refl

trap-size2 : ∀ (x : Fin 2 → ℕ) → trapL x ≡ trapR x
trap-size2 x = e₃-vanishes (x zero) (x (suc zero))

trap-size3 : trapL {2} (λ _ → 1) ≢ trapR {2} (λ _ → 1)   -- 33 ≢ 27
trap-size3 ()

summed-not-covered :
  ¬ (∀ (F G : ∀ {n} → (Fin (suc n) → ℕ) → ℕ) →
     (∀ x → F {1} x ≡ G {1} x) → ∀ x → F {2} x ≡ G {2} x)
summed-not-covered claim = trap-size3 (claim trapL trapR trap-size2 (λ _ → 1))
