{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Composition: per-stage obligations, discharged in topological order,
-- give the end-to-end relation between the outputs of the
-- specification graph and of the implementation graph.
--
-- A plan is a list of stages in topological order.  A stage pairs a
-- sub-graph of the specification (one operator, or a TrainVerify stage
-- of several) with the implementation operators that realise it, the
-- input relations its obligation assumes, and the clean-expression
-- relations of its outputs.  A graph is the list of its operators in
-- topological order; running it writes each operator's output into the
-- environment.
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
open import Data.List.Relation.Unary.All.Properties using (++⁺)
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
    spec    : List Op   -- the specification operators of the stage
    impl    : List Op   -- the implementation operators of the stage
    inrels  : Rel       -- the input relations the obligation assumes
    outrels : Rel       -- the relations of the stage's outputs
open Stage public

-- "for all values of the inputs, if the input relations hold then the
-- output relations hold" (checked at reduced shapes by the checker)
Obligation : Stage → Set
Obligation s = ∀ ρs ρd → Holds (inrels s) ρs ρd → Holds (outrels s) (run (spec s) ρs) (run (impl s) ρd)

dom : Rel → List Name
dom = map proj₁

_⊆R_ : Rel → Rel → Set
R ⊆R L = ∀ {p} → p ∈ R → p ∈ L

-- the side conditions of a stage, given the relations L established
-- by the earlier stages (and the relations between the graph inputs)
record StageOK (L : Rel) (s : Stage) : Set where
  field
    inputs : inrels s ⊆R L                  -- assumed input relations were established
    fresh  : ∀ n → n ∈ writes (spec s) → n ∉ dom L
                                            -- the spec graph defines each tensor once
    frame  : ∀ {p} → p ∈ L → ∀ n → n ∈ names (proj₂ p) → n ∉ writes (impl s)
                                            -- the stage does not overwrite implementation
                                            -- tensors that established relations mention
    oblig  : Obligation s                   -- the discharged obligation
open StageOK public

extend : Rel → Stage → Rel
extend L s = outrels s ++ L

Valid : Rel → List Stage → Set
Valid L []       = ⊤
Valid L (s ∷ ss) = StageOK L s × Valid (extend L s) ss

final : Rel → List Stage → Rel
final L []       = L
final L (s ∷ ss) = final (extend L s) ss

specG : List Stage → List Op
specG = concatMap spec

implG : List Stage → List Op
implG = concatMap impl

holds-sub : ∀ {R L ρs ρd} → R ⊆R L → Holds L ρs ρd → Holds R ρs ρd
holds-sub sub h = All.tabulate (λ m → All.lookup h (sub m))

-- established relations survive a stage that satisfies its side conditions
preserve : ∀ L s ρs ρd → StageOK L s → Holds L ρs ρd →
           Holds L (run (spec s) ρs) (run (impl s) ρd)
preserve L s ρs ρd ok h = All.tabulate keep
  where
    keep : ∀ {p} → p ∈ L → HoldsFor (run (spec s) ρs) (run (impl s) ρd) p
    keep {p} m =
      trans (run-frame (spec s) ρs (proj₁ p) (λ w → fresh ok (proj₁ p) w (∈-map⁺ proj₁ m)))
      (trans (All.lookup h m)
             (eval-frame (proj₂ p) ρd (run (impl s) ρd)
               (λ n nm → sym (run-frame (impl s) ρd n (frame ok m n nm)))))

-- The composition theorem: obligations discharged in topological order
-- give the end-to-end relation.
chain : ∀ L ss → Valid L ss → ∀ ρs ρd → Holds L ρs ρd →
        Holds (final L ss) (run (specG ss) ρs) (run (implG ss) ρd)
chain L []       tt       ρs ρd h = h
chain L (s ∷ ss) (ok , v) ρs ρd h =
  subst₂ (Holds (final (extend L s) ss))
         (sym (run-++ (spec s) (specG ss) ρs))
         (sym (run-++ (impl s) (implG ss) ρd))
         (chain (extend L s) ss v (run (spec s) ρs) (run (impl s) ρd)
                (++⁺ (oblig ok ρs ρd (holds-sub (inputs ok) h)) (preserve L s ρs ρd ok h)))

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

------------------------------------------------------------------------
-- The per-operator form (ENTANGLE): a stage of one specification
-- operator whose obligation is stated for its single output.

single : Op → List Op → Rel → Expr → Stage
single o is inr e = stage (o ∷ []) is inr ((out o , e) ∷ [])

single-obligation : ∀ o is inr e →
  (∀ ρs ρd → Holds inr ρs ρd → fn o (map ρs (ins o)) ≡ ⟦ e ⟧ (run is ρd)) →
  Obligation (single o is inr e)
single-obligation o is inr e ob ρs ρd h =
  trans (upd-same ρs (out o) _) (ob ρs ρd h) ∷ []

single-fresh : ∀ o is inr e L → out o ∉ dom L →
               ∀ n → n ∈ writes (spec (single o is inr e)) → n ∉ dom L
single-fresh o is inr e L nin n (here refl) = nin
