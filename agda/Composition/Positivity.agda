{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Evident positivity (certificates/poly.py ``_positive``; docs/proofs.md,
-- "Evident positivity"). A partial operation records no side condition
-- for a value n / d whose numerator and denominator are each a sum of
-- terms c * x1^(2 k1) * ... * exp(e) with c > 0, one of the terms
-- without powers: such a value is > 0 at every real input, so the side
-- condition (!= 0, > 0, >= 0) holds everywhere and assuming it is not
-- needed.
--
-- The reals enter as the module parameters: the order facts of an
-- ordered field that the proof uses, and exp > 0.
------------------------------------------------------------------------
module Composition.Positivity
  {A : Set} (_+_ _*_ _÷_ : A → A → A) (0# 1# : A) (_≤_ _<_ : A → A → Set) (exp : A → A)
  (0≤0 : 0# ≤ 0#) (0<1 : 0# < 1#)
  (<⇒≤ : ∀ {a} → 0# < a → 0# ≤ a)
  (square : ∀ x → 0# ≤ (x * x))
  (exp> : ∀ x → 0# < exp x)
  (*≥ : ∀ {a b} → 0# ≤ a → 0# ≤ b → 0# ≤ (a * b))
  (*> : ∀ {a b} → 0# < a → 0# < b → 0# < (a * b))
  (+≥ : ∀ {a b} → 0# ≤ a → 0# ≤ b → 0# ≤ (a + b))
  (+>ˡ : ∀ {a b} → 0# < a → 0# ≤ b → 0# < (a + b))
  (+>ʳ : ∀ {a b} → 0# ≤ a → 0# < b → 0# < (a + b))
  (÷> : ∀ {a b} → 0# < a → 0# < b → 0# < (a ÷ b))
  where

open import Data.List using (List; []; _∷_)
open import Data.List.Relation.Unary.Any using (Any; here; there)
open import Data.Nat using (ℕ; zero; suc)
open import Data.Product using (_×_; _,_)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

-- x^k
pow : A → ℕ → A
pow x zero = 1#
pow x (suc k) = x * pow x k

-- a monomial of even powers x^(2k), each as x^k * x^k
evens : List (A × ℕ) → A
evens [] = 1#
evens ((x , k) ∷ m) = (pow x k * pow x k) * evens m

evens≥0 : ∀ m → 0# ≤ evens m
evens≥0 [] = <⇒≤ 0<1
evens≥0 ((x , k) ∷ m) = *≥ (square (pow x k)) (evens≥0 m)

-- a term of the normal form: a positive coefficient, even powers, an exponential
record Term : Set where
  field
    c   : A
    c>0 : 0# < c
    m   : List (A × ℕ)
    e   : A

value : Term → A
value t = (Term.c t * evens (Term.m t)) * exp (Term.e t)

term≥0 : ∀ t → 0# ≤ value t
term≥0 t = *≥ (*≥ (<⇒≤ (Term.c>0 t)) (evens≥0 (Term.m t))) (<⇒≤ (exp> (Term.e t)))

-- a term without powers: a constant or a pure exponential
term>0 : ∀ t → Term.m t ≡ [] → 0# < value t
term>0 record { c = c ; c>0 = c>0 ; m = [] ; e = e } refl = *> (*> c>0 0<1) (exp> e)

sum : List Term → A
sum [] = 0#
sum (t ∷ ts) = value t + sum ts

sum≥0 : ∀ ts → 0# ≤ sum ts
sum≥0 [] = 0≤0
sum≥0 (t ∷ ts) = +≥ (term≥0 t) (sum≥0 ts)

-- the check: every term as above, one of them without powers
positive : ∀ ts → Any (λ t → Term.m t ≡ []) ts → 0# < sum ts
positive (t ∷ ts) (here p) = +>ˡ (term>0 t p) (sum≥0 ts)
positive (t ∷ ts) (there a) = +>ʳ (term≥0 t) (positive ts a)

-- numerator and denominator both evidently positive: the value is > 0 (so != 0, > 0 and >= 0 hold)
quotient : ∀ ns ds → Any (λ t → Term.m t ≡ []) ns → Any (λ t → Term.m t ≡ []) ds → 0# < (sum ns ÷ sum ds)
quotient ns ds p q = ÷> (positive ns p) (positive ds q)

-- An RMS norm's argument (certificates/stages.py ``evident``): the squares of the normalized axis' elements
-- summed and scaled by k >= 0 (a mean: k = 1 / n, n > 0 as the axis is nonempty; a sum: k = 1), plus
-- alpha * eps with eps > 0 and alpha > 0, is > 0 at every input: rsqrt of it is defined. (A power x^k with
-- k in N is ``pow x k``, a total function: it has no side condition.)
squares : List A → A
squares [] = 0#
squares (x ∷ xs) = (x * x) + squares xs

squares≥0 : ∀ xs → 0# ≤ squares xs
squares≥0 [] = 0≤0
squares≥0 (x ∷ xs) = +≥ (square x) (squares≥0 xs)

rms : ∀ xs k eps alpha → 0# ≤ k → 0# < eps → 0# < alpha → 0# < ((squares xs * k) + (alpha * eps))
rms xs k eps alpha k≥0 eps>0 alpha>0 = +>ʳ (*≥ (squares≥0 xs) k≥0) (*> alpha>0 eps>0)
