{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Composition: per-stage obligations, discharged in topological order,
-- give the end-to-end relation between the outputs of the
-- specification graph and of the implementation graph.
--
-- A plan is a list of stages in topological order.  Stage i pairs one
-- operator of the specification graph with the list of implementation
-- operators that realise it, the input relations its obligation
-- assumes, and the clean expression relating its output.  A graph is
-- the list of its operators in topological order; running it writes
-- each operator's output into the environment.
------------------------------------------------------------------------
open import Data.Nat using (ℕ)

module Composition.Chain
  (T : Set)
  (sliceT  : ℕ → ℕ → ℕ → T → T)
  (concatT : ℕ → T → T → T)
  (addT    : T → T → T)
  where

open import Composition.Clean T sliceT concatT addT public

open import Data.Nat using (_≟_)
open import Data.Bool using (if_then_else_)
open import Data.List using (List; []; _∷_; _++_; map; concatMap)
open import Data.List.Membership.Propositional using (_∈_; _∉_)
open import Data.List.Membership.Propositional.Properties using (∈-map⁺)
open import Data.List.Relation.Unary.All as All using (All; []; _∷_)
open import Data.List.Relation.Unary.Any using (here; there)
open import Data.Product using (_×_; _,_; proj₁; proj₂)
open import Data.Unit using (⊤; tt)
open import Function.Base using (_∘_)
open import Relation.Nullary using (¬_; yes; no)
open import Relation.Binary.PropositionalEquality

------------------------------------------------------------------------
-- Graphs

record Op : Set where
  constructor op
  field
    out : Name
    ins : List Name
    fn  : List T → T
open Op public

upd : Env → Name → T → Env
upd ρ n v m with m ≟ n
... | yes _ = v
... | no  _ = ρ m

upd-same : ∀ ρ n v → upd ρ n v n ≡ v
upd-same ρ n v with n ≟ n
... | yes _ = refl
... | no ne = Data.Empty.⊥-elim (ne refl)
  where import Data.Empty

upd-other : ∀ ρ n v m → m ≢ n → upd ρ n v m ≡ ρ m
upd-other ρ n v m ne with m ≟ n
... | yes e = Data.Empty.⊥-elim (ne e)
  where import Data.Empty
... | no  _ = refl

exec : Op → Env → Env
exec o ρ = upd ρ (out o) (fn o (map ρ (ins o)))

run : List Op → Env → Env
run []       ρ = ρ
run (o ∷ os) ρ = run os (exec o ρ)

writes : List Op → List Name
writes = map out

run-++ : ∀ xs ys ρ → run (xs ++ ys) ρ ≡ run ys (run xs ρ)
run-++ []       ys ρ = refl
run-++ (o ∷ xs) ys ρ = run-++ xs ys (exec o ρ)

-- running operators leaves every name they do not write unchanged
run-frame : ∀ os ρ n → n ∉ writes os → run os ρ n ≡ ρ n
run-frame []       ρ n nin = refl
run-frame (o ∷ os) ρ n nin =
  trans (run-frame os (exec o ρ) n (nin ∘ there))
        (upd-other ρ (out o) _ n (nin ∘ here))

------------------------------------------------------------------------
-- Stages and their obligations

record Stage : Set where
  constructor stage
  field
    sop    : Op        -- the specification operator
    impl   : List Op   -- the implementation operators of the stage
    inrels : Rel       -- the input relations the obligation assumes
    outrel : Expr      -- out sop  =  outrel, over implementation tensors
open Stage public

-- "for all values of the inputs, if the input relations hold then the
-- output relation holds" (checked at reduced shapes by the checker)
Obligation : Stage → Set
Obligation s = ∀ ρs ρd → Holds (inrels s) ρs ρd →
               fn (sop s) (map ρs (ins (sop s))) ≡ ⟦ outrel s ⟧ (run (impl s) ρd)

dom : Rel → List Name
dom = map proj₁

_⊆R_ : Rel → Rel → Set
R ⊆R L = ∀ {p} → p ∈ R → p ∈ L

-- the side conditions of a stage, given the relations L established
-- by the earlier stages (and the relations between the graph inputs)
record StageOK (L : Rel) (s : Stage) : Set where
  field
    inputs : inrels s ⊆R L                  -- assumed input relations were established
    fresh  : out (sop s) ∉ dom L            -- the spec graph defines each tensor once
    frame  : ∀ {p} → p ∈ L → ∀ n → n ∈ names (proj₂ p) → n ∉ writes (impl s)
                                            -- the stage does not overwrite implementation
                                            -- tensors that established relations mention
    oblig  : Obligation s                   -- the discharged obligation
open StageOK public

extend : Rel → Stage → Rel
extend L s = (out (sop s) , outrel s) ∷ L

Valid : Rel → List Stage → Set
Valid L []       = ⊤
Valid L (s ∷ ss) = StageOK L s × Valid (extend L s) ss

final : Rel → List Stage → Rel
final L []       = L
final L (s ∷ ss) = final (extend L s) ss

specG : List Stage → List Op
specG = map sop

implG : List Stage → List Op
implG = concatMap impl

holds-sub : ∀ {R L ρs ρd} → R ⊆R L → Holds L ρs ρd → Holds R ρs ρd
holds-sub sub h = All.tabulate (λ m → All.lookup h (sub m))

-- established relations survive a stage that satisfies its side conditions
preserve : ∀ L s ρs ρd v → StageOK L s → Holds L ρs ρd →
           Holds L (upd ρs (out (sop s)) v) (run (impl s) ρd)
preserve L s ρs ρd v ok h = All.tabulate keep
  where
    keep : ∀ {p} → p ∈ L → HoldsFor (upd ρs (out (sop s)) v) (run (impl s) ρd) p
    keep {p} m =
      trans (upd-other ρs (out (sop s)) v (proj₁ p)
               (λ e → fresh ok (subst (_∈ dom L) e (∈-map⁺ proj₁ m))))
      (trans (All.lookup h m)
             (eval-frame (proj₂ p) ρd (run (impl s) ρd)
               (λ n nm → sym (run-frame (impl s) ρd n (frame ok m n nm)))))

-- The composition theorem: obligations discharged in topological order
-- give the end-to-end relation.
chain : ∀ L ss → Valid L ss → ∀ ρs ρd → Holds L ρs ρd →
        Holds (final L ss) (run (specG ss) ρs) (run (implG ss) ρd)
chain L []       tt       ρs ρd h = h
chain L (s ∷ ss) (ok , v) ρs ρd h =
  subst (Holds (final (extend L s) ss) (run (specG ss) (exec (sop s) ρs)))
        (sym (run-++ (impl s) (implG ss) ρd))
        (chain (extend L s) ss v (exec (sop s) ρs) (run (impl s) ρd)
               (hd ∷ preserve L s ρs ρd _ ok h))
  where
    hd : HoldsFor (exec (sop s) ρs) (run (impl s) ρd) (out (sop s) , outrel s)
    hd = trans (upd-same ρs (out (sop s)) _) (oblig ok ρs ρd (holds-sub (inputs ok) h))

-- End to end: every relation of the final lineage holds between the
-- outputs of the two graphs.
refinement : ∀ L ss → Valid L ss → ∀ ρs ρd → Holds L ρs ρd →
             ∀ {t e} → (t , e) ∈ final L ss →
             run (specG ss) ρs t ≡ ⟦ e ⟧ (run (implG ss) ρd)
refinement L ss v ρs ρd h m = All.lookup (chain L ss v ρs ρd h) m

-- and it composes with a further relation from the implementation
-- tensors to a third environment (e.g. per-rank tensors)
refinement-compose : ∀ L ss → Valid L ss → ∀ ρs ρd → Holds L ρs ρd →
                     ∀ σ ρr → (∀ n → run (implG ss) ρd n ≡ ⟦ σ n ⟧ ρr) →
                     Holds (compose (final L ss) σ) (run (specG ss) ρs) ρr
refinement-compose L ss v ρs ρd h σ ρr hσ =
  compose-sound (final L ss) σ _ _ ρr (chain L ss v ρs ρd h) hσ
