{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Booleans as 0/1 variables (certificates/symint.py, docs/refinement.md
-- "Booleans"). In any commutative ring (the reals of the checker's
-- normal form included), at a boolean b read as 0 or 1:
--   where(b, x, y) = b x + (1 - b) y      (where01; masked_fill too)
--   not b          = 1 - b                (not01)
--   b and c        = b c                  (and01)
--   b or c         = b + c - b c          (or01)
-- and an identity of two expressions over every value of the variables
-- holds at every 0/1 value (specialize). So what symint.check proves
-- once, each boolean a variable, holds at each of the 2^n assignments
-- the enumeration (refinement.check) would decide one by one.
------------------------------------------------------------------------
open import Algebra.Bundles using (CommutativeRing)

module Composition.Booleans {c ℓ} (R : CommutativeRing c ℓ) where

open CommutativeRing R
open import Data.Bool using (Bool; true; false; if_then_else_; not; _∧_; _∨_)
open import Data.Fin using (Fin)
open import Data.Nat using (ℕ)
open import Function using (_∘_)
open import Relation.Binary.Reasoning.Setoid setoid

-- a boolean as a ring element
⌊_⌋ : Bool → Carrier
⌊ true ⌋  = 1#
⌊ false ⌋ = 0#

infixl 6 _−_
_−_ : Carrier → Carrier → Carrier
x − y = x + - y

-0≈0 : - 0# ≈ 0#
-0≈0 = trans (sym (+-identityˡ (- 0#))) (-‿inverseʳ 0#)

1−0≈1 : 1# − 0# ≈ 1#
1−0≈1 = trans (+-congˡ -0≈0) (+-identityʳ 1#)

where01 : ∀ b x y → ⌊ b ⌋ * x + (1# − ⌊ b ⌋) * y ≈ (if b then x else y)
where01 true x y = begin
  1# * x + (1# − 1#) * y  ≈⟨ +-cong (*-identityˡ x) (*-congʳ (-‿inverseʳ 1#)) ⟩
  x + 0# * y              ≈⟨ +-congˡ (zeroˡ y) ⟩
  x + 0#                  ≈⟨ +-identityʳ x ⟩
  x                       ∎
where01 false x y = begin
  0# * x + (1# − 0#) * y  ≈⟨ +-cong (zeroˡ x) (*-congʳ 1−0≈1) ⟩
  0# + 1# * y             ≈⟨ +-identityˡ (1# * y) ⟩
  1# * y                  ≈⟨ *-identityˡ y ⟩
  y                       ∎

not01 : ∀ b → ⌊ not b ⌋ ≈ 1# − ⌊ b ⌋
not01 true  = sym (-‿inverseʳ 1#)
not01 false = sym 1−0≈1

and01 : ∀ b d → ⌊ b ∧ d ⌋ ≈ ⌊ b ⌋ * ⌊ d ⌋
and01 true  d = sym (*-identityˡ ⌊ d ⌋)
and01 false d = sym (zeroˡ ⌊ d ⌋)

or01 : ∀ b d → ⌊ b ∨ d ⌋ ≈ ⌊ b ⌋ + ⌊ d ⌋ − ⌊ b ⌋ * ⌊ d ⌋
or01 true d = sym (begin
  1# + ⌊ d ⌋ − 1# * ⌊ d ⌋  ≈⟨ +-congˡ (-‿cong (*-identityˡ ⌊ d ⌋)) ⟩
  1# + ⌊ d ⌋ − ⌊ d ⌋       ≈⟨ +-assoc 1# ⌊ d ⌋ (- ⌊ d ⌋) ⟩
  1# + (⌊ d ⌋ − ⌊ d ⌋)     ≈⟨ +-congˡ (-‿inverseʳ ⌊ d ⌋) ⟩
  1# + 0#                  ≈⟨ +-identityʳ 1# ⟩
  1#                       ∎)
or01 false d = sym (begin
  0# + ⌊ d ⌋ − 0# * ⌊ d ⌋  ≈⟨ +-congˡ (-‿cong (zeroˡ ⌊ d ⌋)) ⟩
  0# + ⌊ d ⌋ − 0#          ≈⟨ +-cong (+-identityˡ ⌊ d ⌋) -0≈0 ⟩
  ⌊ d ⌋ + 0#               ≈⟨ +-identityʳ ⌊ d ⌋ ⟩
  ⌊ d ⌋                    ∎)

-- An identity at every value of n variables holds at every 0/1 value.
specialize : ∀ {n} (p q : (Fin n → Carrier) → Carrier) → (∀ ρ → p ρ ≈ q ρ) →
             ∀ (β : Fin n → Bool) → p (⌊_⌋ ∘ β) ≈ q (⌊_⌋ ∘ β)
specialize p q eq β = eq (⌊_⌋ ∘ β)
