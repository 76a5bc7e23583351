{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Shape reduction of an axis whose rows are addressed by integer values
-- (issue 15): the theorem behind certificates/shapes.py `indexed`.
--
-- The axis, and the integer values that index it (a vocabulary's rows
-- and the token ids), are cut into blocks of g rows: every size on the
-- axis, every range bound of the values and every constant they meet is
-- a multiple of g.  A row or a value is then a block and an offset in
-- Fin g.  An *instance* of a stage at grain g is its inputs (tables and
-- values satisfying its hypotheses) and one output element; it *uses*
-- the offsets of its integer values, of its output row (if it has the
-- axis) and 0.  Removing one offset u from every block (`punchIn u`, an
-- order-preserving injection Fin n -> Fin (suc n) that keeps 0 when u is
-- not 0) *pulls* an instance that does not use u back to grain n: rows
-- restricted to the others, values renumbered.  The stage is *natural*
-- when a pulled instance holds only if the instance does: its operators
-- read values only by lookups, shifts by and comparisons with multiples
-- of g, and equality, and rows only elementwise or by moves cut at
-- multiples of g (the checker's list; a reading of the operators'
-- semantics, not proved here).  Then the claim at grain n for every
-- instance gives it at every grain k + n for every instance using at
-- most n offsets (`reduction`): the checker takes n at least the number
-- of integer input elements of the stage, plus 2.
------------------------------------------------------------------------
module ShapeReduction.Indexed where

open import Data.Nat using (ℕ; zero; suc; _+_; _≤_; _<_; s≤s; z≤n)
open import Data.Nat.Properties using (≤-trans; ≤-step; m≤n+m; <-transˡ)
open import Data.Fin using (Fin; zero; suc)
open import Data.List using (List; []; _∷_; length)
open import Data.List.Relation.Unary.Any using (here; there)
open import Data.List.Membership.Propositional using (_∈_; _∉_)
open import Data.Product using (∃; _,_)
open import Relation.Nullary using (Dec; yes; no)
open import Relation.Binary.PropositionalEquality using (refl)

------------------------------------------------------------------------
-- 1. Fewer than m offsets miss one of Fin m (a pigeonhole)

-- the nonzero offsets of a list, one lower
drop0 : ∀ {m} → List (Fin (suc m)) → List (Fin m)
drop0 [] = []
drop0 (zero ∷ L) = drop0 L
drop0 (suc x ∷ L) = x ∷ drop0 L

drop0-≤ : ∀ {m} (L : List (Fin (suc m))) → length (drop0 L) ≤ length L
drop0-≤ [] = z≤n
drop0-≤ (zero ∷ L) = ≤-step (drop0-≤ L)
drop0-≤ (suc x ∷ L) = s≤s (drop0-≤ L)

drop0-< : ∀ {m} {L : List (Fin (suc m))} → zero ∈ L → length (drop0 L) < length L
drop0-< {L = zero ∷ L} _ = s≤s (drop0-≤ L)
drop0-< {L = suc x ∷ L} (here ())
drop0-< {L = suc x ∷ L} (there p) = s≤s (drop0-< p)

drop0-∈ : ∀ {m} {x : Fin m} {L : List (Fin (suc m))} → suc x ∈ L → x ∈ drop0 L
drop0-∈ {L = zero ∷ L} (here ())
drop0-∈ {L = zero ∷ L} (there p) = drop0-∈ p
drop0-∈ {L = suc y ∷ L} (here refl) = here refl
drop0-∈ {L = suc y ∷ L} (there p) = there (drop0-∈ p)

zero∈? : ∀ {m} (L : List (Fin (suc m))) → Dec (zero ∈ L)
zero∈? [] = no λ ()
zero∈? (zero ∷ L) = yes (here refl)
zero∈? (suc x ∷ L) with zero∈? L
... | yes p = yes (there p)
... | no q = no λ { (here ()) ; (there p) → q p }

missing : ∀ {m} (L : List (Fin m)) → length L < m → ∃ λ u → u ∉ L
missing {zero} L ()
missing {suc m} L p with zero∈? L
... | no z∉ = zero , z∉
... | yes z∈ with missing (drop0 L) (<-transˡ (drop0-< z∈) (≤-pred p))
  where ≤-pred : ∀ {a b} → suc a ≤ suc b → a ≤ b
        ≤-pred (s≤s q) = q
...   | u , u∉ = suc u , λ s∈ → u∉ (drop0-∈ s∈)

------------------------------------------------------------------------
-- 2. Natural stages reduce

record Indexed : Set₁ where
  field
    Inst      : ℕ → Set                                -- inputs and an output element, at grain n
    used      : ∀ {n} → Inst n → List (Fin n)          -- the offsets it uses (0 among them)
    Holds     : ∀ {n} → Inst n → Set                   -- the claim on it
    pull      : ∀ {n} (u : Fin (suc n)) (i : Inst (suc n)) → u ∉ used i → Inst n
    pull-used : ∀ {n} u (i : Inst (suc n)) p → length (used (pull {n} u i p)) ≤ length (used i)
    natural   : ∀ {n} u (i : Inst (suc n)) p → Holds (pull {n} u i p) → Holds i

module _ (F : Indexed) where
  open Indexed F

  -- the claim at grain n gives it at grain k + n, where n offsets suffice
  reduction : ∀ {n} → (∀ (i : Inst n) → Holds i) →
              ∀ k (i : Inst (k + n)) → length (used i) ≤ n → Holds i
  reduction all zero i _ = all i
  reduction {n} all (suc k) i p with missing (used i) (s≤s (≤-trans p (m≤n+m n k)))
  ... | u , u∉ = natural u i u∉ (reduction all k (pull u i u∉) (≤-trans (pull-used u i u∉) p))
