{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Sets of thread ids as bit masks (Vec Bool n): a canonical,
-- first-order representation, so that equal sets are propositionally
-- equal and no function extensionality is ever needed.
------------------------------------------------------------------------
module Confluence.Mask where

open import Data.Bool using (Bool; true; false; _∧_; _∨_; not; if_then_else_)
open import Data.Nat using (ℕ; zero; suc)
open import Data.Fin using (Fin; zero; suc)
open import Data.Vec using (Vec; []; _∷_; lookup; replicate; _[_]≔_; map)
open import Data.Vec.Properties using (lookup-replicate)
open import Data.Product using (_×_; _,_)
open import Data.Sum using (_⊎_; inj₁; inj₂)
open import Data.Empty using (⊥-elim)
open import Relation.Nullary using (¬_)
open import Relation.Binary.PropositionalEquality

Mask : ℕ → Set
Mask = Vec Bool

-- case analysis on a boolean, remembering the outcome
bcase : ∀ b → b ≡ true ⊎ b ≡ false
bcase true  = inj₁ refl
bcase false = inj₂ refl

∨-false : ∀ {x y} → x ∨ y ≡ false → x ≡ false × y ≡ false
∨-false {false} {false} refl = refl , refl

∨-trueʳ : ∀ x {y} → y ≡ true → x ∨ y ≡ true
∨-trueʳ false p = p
∨-trueʳ true  p = refl

∨-trueˡ : ∀ {x} y → x ≡ true → x ∨ y ≡ true
∨-trueˡ y refl = refl

-- every thread except t
allBut : ∀ {n} → Fin n → Mask n
allBut {suc n} zero    = false ∷ replicate true
allBut {suc n} (suc t) = true ∷ allBut t

-- U ∖ S : remove the members of S from U
_∖_ : ∀ {n} → Mask n → Mask n → Mask n
[]      ∖ []      = []
(u ∷ U) ∖ (s ∷ S) = (u ∧ not s) ∷ (U ∖ S)

-- does S contain a thread that is not in U ?
meets : ∀ {n} → Mask n → Mask n → Bool
meets []      []      = false
meets (s ∷ S) (u ∷ U) = (s ∧ not u) ∨ meets S U

-- Effect of a barrier over S, whose active participants (the members of
-- S that have not exited) are P, on the set U of the threads that are
-- not yet ordered after some memory access.  If some member of S is
-- already ordered after the access (an exited member counts: its exit
-- comes after everything it did), then after the barrier every active
-- participant is (happens-before is transitive through barriers).
-- Exited members do not change: they took no part after their exit.
bar : ∀ {n} → Mask n → Mask n → Mask n → Mask n
bar S P U = if meets S U then U ∖ P else U

Disjoint : ∀ {n} → Mask n → Mask n → Set
Disjoint S S' = ∀ i → lookup S i ≡ true → lookup S' i ≡ false

------------------------------------------------------------------------
-- Lemmas

disj-sym : ∀ {n} (S S' : Mask n) → Disjoint S S' → Disjoint S' S
disj-sym S S' d i p with bcase (lookup S i)
... | inj₁ q = ⊥-elim (true≢false (trans (sym p) (d i q)))
  where true≢false : ¬ (true ≡ false)
        true≢false ()
... | inj₂ q = q

allBut-other : ∀ {n} (t u : Fin n) → u ≢ t → lookup (allBut t) u ≡ true
allBut-other zero    zero    ne = ⊥-elim (ne refl)
allBut-other zero    (suc u) ne = lookup-replicate u true
allBut-other (suc t) zero    ne = refl
allBut-other (suc t) (suc u) ne = allBut-other t u (λ e → ne (cong suc e))

lookup-∖ : ∀ {n} (U S : Mask n) i → lookup (U ∖ S) i ≡ lookup U i ∧ not (lookup S i)
lookup-∖ (u ∷ U) (s ∷ S) zero    = refl
lookup-∖ (u ∷ U) (s ∷ S) (suc i) = lookup-∖ U S i

meets-all : ∀ {n} (S : Mask n) → meets S (replicate true) ≡ false
meets-all []          = refl
meets-all (true ∷ S)  = meets-all S
meets-all (false ∷ S) = meets-all S

meets-allBut : ∀ {n} (S : Mask n) t → lookup S t ≡ false → meets S (allBut t) ≡ false
meets-allBut (false ∷ S) zero    p = meets-all S
meets-allBut (true  ∷ S) (suc t) p = meets-allBut S t p
meets-allBut (false ∷ S) (suc t) p = meets-allBut S t p

barT : ∀ {n} (S P U : Mask n) → meets S U ≡ true → bar S P U ≡ U ∖ P
barT S P U p rewrite p = refl

barF : ∀ {n} (S P U : Mask n) → meets S U ≡ false → bar S P U ≡ U
barF S P U p rewrite p = refl

-- a barrier not involving t leaves "all but t" unchanged
bar-allBut : ∀ {n} (S P : Mask n) t → lookup S t ≡ false → bar S P (allBut t) ≡ allBut t
bar-allBut S P t p = barF S P (allBut t) (meets-allBut S t p)

-- a barrier in which t does not take part keeps t unsynchronised
bar-keeps : ∀ {n} (S P U : Mask n) t → lookup U t ≡ true → lookup P t ≡ false →
            lookup (bar S P U) t ≡ true
bar-keeps S P U t pu ps with bcase (meets S U)
... | inj₁ m rewrite barT S P U m | lookup-∖ U P t | pu | ps = refl
... | inj₂ m rewrite barF S P U m = pu

-- a barrier never makes a synchronised thread unsynchronised
bar-false : ∀ {n} (S P U : Mask n) t → lookup U t ≡ false → lookup (bar S P U) t ≡ false
bar-false S P U t pu with bcase (meets S U)
... | inj₁ m rewrite barT S P U m | lookup-∖ U P t | pu = refl
... | inj₂ m rewrite barF S P U m = pu

meets-∖ : ∀ {n} (S S' U : Mask n) → Disjoint S S' → meets S (U ∖ S') ≡ meets S U
meets-∖ [] [] [] d = refl
meets-∖ (false ∷ S) (s' ∷ S') (u ∷ U) d = meets-∖ S S' U (λ i → d (suc i))
meets-∖ (true ∷ S) (false ∷ S') (true ∷ U) d = meets-∖ S S' U (λ i → d (suc i))
meets-∖ (true ∷ S) (false ∷ S') (false ∷ U) d = refl
meets-∖ (true ∷ S) (true ∷ S') (u ∷ U) d with d zero refl
... | ()

∧-swap : ∀ u a b → (u ∧ a) ∧ b ≡ (u ∧ b) ∧ a
∧-swap false a b = refl
∧-swap true true true = refl
∧-swap true true false = refl
∧-swap true false true = refl
∧-swap true false false = refl

∖-comm : ∀ {n} (U A B : Mask n) → (U ∖ A) ∖ B ≡ (U ∖ B) ∖ A
∖-comm [] [] [] = refl
∖-comm (u ∷ U) (a ∷ A) (b ∷ B) = cong₂ _∷_ (∧-swap u (not a) (not b)) (∖-comm U A B)

-- barriers commute when neither one's active participants belong to
-- the other barrier
bar-comm : ∀ {n} (S P S' P' U : Mask n) → Disjoint S P' → Disjoint S' P →
           bar S P (bar S' P' U) ≡ bar S' P' (bar S P U)
bar-comm S P S' P' U d d' with bcase (meets S U) | bcase (meets S' U)
... | inj₁ m | inj₁ m' =
  trans (cong (bar S P) (barT S' P' U m'))
  (trans (barT S P (U ∖ P') (trans (meets-∖ S P' U d) m))
  (trans (∖-comm U P' P)
  (sym (trans (cong (bar S' P') (barT S P U m))
               (barT S' P' (U ∖ P) (trans (meets-∖ S' P U d') m'))))))
... | inj₁ m | inj₂ m' =
  trans (cong (bar S P) (barF S' P' U m'))
  (trans (barT S P U m)
  (sym (trans (cong (bar S' P') (barT S P U m))
               (barF S' P' (U ∖ P) (trans (meets-∖ S' P U d') m')))))
... | inj₂ m | inj₁ m' =
  trans (cong (bar S P) (barT S' P' U m'))
  (trans (barF S P (U ∖ P') (trans (meets-∖ S P' U d) m))
  (sym (trans (cong (bar S' P') (barF S P U m)) (barT S' P' U m'))))
... | inj₂ m | inj₂ m' =
  trans (cong (bar S P) (barF S' P' U m'))
  (trans (barF S P U m) (sym (trans (cong (bar S' P') (barF S P U m)) (barF S' P' U m'))))

------------------------------------------------------------------------
-- "is t unsynchronised with one of the recorded reads?"

anyAt : ∀ {n k} → Fin n → Vec (Mask n) k → Bool
anyAt t []       = false
anyAt t (m ∷ ms) = lookup m t ∨ anyAt t ms

anyAt-upd : ∀ {n k} t (ms : Vec (Mask n) k) u {m} → lookup m t ≡ true →
            anyAt t (ms [ u ]≔ m) ≡ true
anyAt-upd t (m₀ ∷ ms) zero    p = ∨-trueˡ (anyAt t ms) p
anyAt-upd t (m₀ ∷ ms) (suc u) p = ∨-trueʳ (lookup m₀ t) (anyAt-upd t ms u p)

anyAt-bar-true : ∀ {n k} (S P : Mask n) t (ms : Vec (Mask n) k) → lookup P t ≡ false →
                 anyAt t ms ≡ true → anyAt t (map (bar S P) ms) ≡ true
anyAt-bar-true S P t (m ∷ ms) ps p with bcase (lookup m t)
... | inj₁ q = ∨-trueˡ (anyAt t (map (bar S P) ms)) (bar-keeps S P m t q ps)
... | inj₂ q rewrite q =
  ∨-trueʳ (lookup (bar S P m) t) (anyAt-bar-true S P t ms ps p)

anyAt-bar-false : ∀ {n k} (S P : Mask n) t (ms : Vec (Mask n) k) →
                  anyAt t ms ≡ false → anyAt t (map (bar S P) ms) ≡ false
anyAt-bar-false S P t []       p = refl
anyAt-bar-false S P t (m ∷ ms) p with ∨-false {lookup m t} p
... | p₁ , p₂ rewrite bar-false S P m t p₁ = anyAt-bar-false S P t ms p₂
