{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Shape reduction for reductions (TrainVerify, Appendix C,
-- Definition 13, Theorem 11), generalised to reductions of mapped
-- elements  red h op [x₀ … x_n] = h x₀ `op` (h x₁ `op` (… `op` h x_n)).
--
-- Theorem 11 as stated in the appendix (no element map, h = id) holds
-- trivially; with an element map it is FALSE without an extra side
-- condition (see `length2-not-enough` below).  The side condition we
-- need: every value is the image of one element under both element
-- maps (surjectivity onto the values, e.g. h x = x, or h (a , b) = a * b
-- over the reals).  Associativity and commutativity are not needed for
-- the length-2 argument; they are what lets an implementation compute a
-- reduction in another order or as a combination of partial reductions
-- (`red-++`, `red-split-comm`, `red-swap`).
------------------------------------------------------------------------
module ShapeReduction.Reduction where

open import Data.Nat using (ℕ; _+_)
open import Data.Nat.Properties using (+-assoc; +-comm)
open import Data.Unit using (⊤; tt)
open import Data.List using (List; []; _∷_; _++_)
open import Data.Product using (∃; _×_; _,_)
open import Relation.Nullary using (¬_)
open import Relation.Binary.PropositionalEquality

Associative : ∀ {V : Set} → (V → V → V) → Set
Associative op = ∀ a b c → op (op a b) c ≡ op a (op b c)

Commutative : ∀ {V : Set} → (V → V → V) → Set
Commutative op = ∀ a b → op a b ≡ op b a

-- reduction of the non-empty list x ∷ xs
red : ∀ {A V : Set} → (A → V) → (V → V → V) → A → List A → V
red h op x []       = h x
red h op x (y ∷ ys) = op (h x) (red h op y ys)

-- Theorem 11 (corrected)
reduction-length2 :
  ∀ {A V : Set} (h₁ h₂ : A → V) (op₁ op₂ : V → V → V) →
  (∀ a b → red h₁ op₁ a (b ∷ []) ≡ red h₂ op₂ a (b ∷ [])) →   -- agreement at length 2
  (∀ v → ∃ λ a → h₁ a ≡ v × h₂ a ≡ v) →                      -- side condition
  ∀ x y ys → red h₁ op₁ x (y ∷ ys) ≡ red h₂ op₂ x (y ∷ ys)   -- every length ≥ 2
reduction-length2 h₁ h₂ op₁ op₂ two surj x y []       = two x y
reduction-length2 h₁ h₂ op₁ op₂ two surj x y (z ∷ zs) with surj (red h₂ op₂ y (z ∷ zs))
... | b , e₁ , e₂ =
  trans (cong (op₁ (h₁ x)) (reduction-length2 h₁ h₂ op₁ op₂ two surj y z zs))
  (trans (cong (op₁ (h₁ x)) (sym e₁))
  (trans (two x b) (cong (op₂ (h₂ x)) e₂)))

-- the unmapped statement of the appendix is the special case h = id
reduction-length2-id :
  ∀ {V : Set} (op₁ op₂ : V → V → V) →
  (∀ a b → op₁ a b ≡ op₂ a b) →
  ∀ x y ys → red (λ v → v) op₁ x (y ∷ ys) ≡ red (λ v → v) op₂ x (y ∷ ys)
reduction-length2-id op₁ op₂ two =
  reduction-length2 (λ v → v) (λ v → v) op₁ op₂ two (λ v → v , refl , refl)

-- Without the side condition the statement is false, even for
-- associative and commutative operators:
-- h = const 1, op₁ = _+_, op₂ = const 2: length 2 gives 2 = 2, length 3 gives 3 ≠ 2.
length2-not-enough :
  ¬ (∀ {A V : Set} (h₁ h₂ : A → V) (op₁ op₂ : V → V → V) →
     Associative op₁ → Commutative op₁ → Associative op₂ → Commutative op₂ →
     (∀ a b → red h₁ op₁ a (b ∷ []) ≡ red h₂ op₂ a (b ∷ [])) →
     ∀ x y ys → red h₁ op₁ x (y ∷ ys) ≡ red h₂ op₂ x (y ∷ ys))
length2-not-enough claim with
  claim {⊤} {ℕ} (λ _ → 1) (λ _ → 1) _+_ (λ _ _ → 2)
        +-assoc +-comm (λ _ _ _ → refl) (λ _ _ → refl) (λ _ _ → refl) tt tt (tt ∷ [])
... | ()

------------------------------------------------------------------------
-- Reordering a reduction (what associativity and commutativity buy)

red-++ : ∀ {A V : Set} (h : A → V) (op : V → V → V) → Associative op →
         ∀ x ys z zs → red h op x (ys ++ z ∷ zs) ≡ op (red h op x ys) (red h op z zs)
red-++ h op assoc x []       z zs = refl
red-++ h op assoc x (y ∷ ys) z zs =
  trans (cong (op (h x)) (red-++ h op assoc y ys z zs))
        (sym (assoc (h x) (red h op y ys) (red h op z zs)))

-- partial reductions (e.g. per rank) may be combined in any order
red-split-comm : ∀ {A V : Set} (h : A → V) (op : V → V → V) → Associative op → Commutative op →
                 ∀ x ys z zs → red h op x (ys ++ z ∷ zs) ≡ red h op z (zs ++ x ∷ ys)
red-split-comm h op assoc comm x ys z zs =
  trans (red-++ h op assoc x ys z zs)
  (trans (comm (red h op x ys) (red h op z zs)) (sym (red-++ h op assoc z zs x ys)))

red-swap : ∀ {A V : Set} (h : A → V) (op : V → V → V) → Associative op → Commutative op →
           ∀ x y ys → red h op x (y ∷ ys) ≡ red h op y (x ∷ ys)
red-swap h op assoc comm x y []       = comm (h x) (h y)
red-swap h op assoc comm x y (z ∷ zs) =
  trans (sym (assoc (h x) (h y) (red h op z zs)))
  (trans (cong (λ v → op v (red h op z zs)) (comm (h x) (h y)))
         (assoc (h y) (h x) (red h op z zs)))
