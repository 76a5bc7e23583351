{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Shape reduction of summed axes: the theorem behind checking a summed
-- axis class (a matmul contraction, a plain sum) at two reduced sizes.
--
-- Fix the axis class, cut into r regions (shard boundaries).  At scale
-- s, region R has s * m R slices (m R: its length at scale 1, in
-- blocks).  A slice (type A) holds every input variable at one offset
-- along the axis; y : Y holds the inputs not on the axis; P R is the
-- per-slice assumption (the input relations, offset by offset).
--
-- What the checker relies on: its taint rules put the obligation (spec
-- minus impl, one output element) in the affine-separable form
--     E s y x ≈ G y + Σ_R Σ_{t < s * m R} Δ R y (x R t)
-- with G and Δ independent of s (`Affine`; section 2 shows the form is
-- closed under the operations the rules admit).  In a torsion-free
-- commutative ring (ℚ, ℝ), if E vanishes on every valid input at two
-- different scales, it vanishes at every scale s ≥ 1, the full size
-- included (`two-scales`).  One scale is not enough
-- (`one-scale-not-enough`): on inputs constant per region E is
-- G + s × C, which one scale does not force to 0.
------------------------------------------------------------------------
module ShapeReduction.Summed where

open import Algebra.Bundles using (CommutativeRing)
open import Level using (_⊔_)
open import Data.Nat as ℕ using (ℕ; zero; suc; _≤_; _<_; s≤s; z≤n)
open import Data.Nat.Properties using (*-mono-≤; <-cmp)
open import Data.Fin using (Fin; zero; suc)
open import Data.Product using (∃; _,_)
open import Data.Unit using (⊤; tt)
open import Data.Empty using (⊥-elim)
open import Relation.Nullary using (¬_)
open import Relation.Binary using (tri<; tri≈; tri>)
open import Relation.Binary.PropositionalEquality as P using (_≡_; _≢_)

module Axis {c ℓ} (K : CommutativeRing c ℓ) {r : ℕ} (m : Fin r → ℕ) (A Y : Set) where
  open CommutativeRing K hiding (zero)
  open import Algebra.Properties.AbelianGroup +-abelianGroup
    using (⁻¹-∙-comm; ε⁻¹≈ε; inverseˡ-unique; inverseʳ-unique; ⁻¹-involutive)
  open import Algebra.Properties.CommutativeMonoid.Sum +-commutativeMonoid
    using (sum; sum-cong-≋; ∑-distrib-+; sum-replicate; sum-replicate-zero)
  open import Algebra.Properties.CommutativeMonoid.Mult +-commutativeMonoid
    using (_×_; ×-congʳ; ×-homo-+; ×-assocˡ; ×-distrib-+)
  open import Relation.Binary.Reasoning.Setoid setoid

  ----------------------------------------------------------------------
  -- 1. Sums and multiples.  ∑ f = f 0 + (f 1 + (… + 0#)), and k × x is
  -- x added k times (stdlib's, from the additive monoid).

  ∑ : ∀ {n} → (Fin n → Carrier) → Carrier
  ∑ = sum

  ∑-cong : ∀ {n} {f g : Fin n → Carrier} → (∀ i → f i ≈ g i) → ∑ f ≈ ∑ g
  ∑-cong = sum-cong-≋

  ∑-+ : ∀ {n} (f g : Fin n → Carrier) → ∑ (λ i → f i + g i) ≈ ∑ f + ∑ g
  ∑-+ = ∑-distrib-+

  ∑-const : ∀ n x → ∑ {n} (λ _ → x) ≈ n × x
  ∑-const n x = sum-replicate n

  ∑-0 : ∀ n → ∑ {n} (λ _ → 0#) ≈ 0#
  ∑-0 = sum-replicate-zero

  ×-0 : ∀ k → k × 0# ≈ 0#
  ×-0 k = trans (sym (∑-const k 0#)) (∑-0 k)

  ∑-neg : ∀ {n} (f : Fin n → Carrier) → ∑ (λ i → - f i) ≈ - ∑ f
  ∑-neg {zero}  f = sym ε⁻¹≈ε
  ∑-neg {suc n} f = trans (+-congˡ (∑-neg (λ i → f (suc i)))) (⁻¹-∙-comm _ _)

  ∑-* : ∀ {n} a (f : Fin n → Carrier) → ∑ (λ i → a * f i) ≈ a * ∑ f
  ∑-* {zero}  a f = sym (zeroʳ a)
  ∑-* {suc n} a f = trans (+-congˡ (∑-* a (λ i → f (suc i)))) (sym (distribˡ a _ _))

  ∑-× : ∀ {n} k (f : Fin n → Carrier) → ∑ (λ i → k × f i) ≈ k × ∑ f
  ∑-× {zero}  k f = sym (×-0 k)
  ∑-× {suc n} k f = trans (+-congˡ (∑-× k (λ i → f (suc i)))) (sym (×-distrib-+ _ _ k))

  ×-neg : ∀ k x → k × (- x) ≈ - (k × x)
  ×-neg k x = inverseʳ-unique (k × x) (k × (- x)) (begin
    k × x + k × (- x)  ≈˘⟨ ×-distrib-+ x (- x) k ⟩
    k × (x + - x)      ≈⟨ ×-congʳ k (-‿inverseʳ x) ⟩
    k × 0#             ≈⟨ ×-0 k ⟩
    0#                 ∎)

  -- entry i of c replaced by v; a sum changes by the one summand
  upd : ∀ {n} {X : Set} → (Fin n → X) → Fin n → X → Fin n → X
  upd c zero    v zero    = v
  upd c zero    v (suc j) = c (suc j)
  upd c (suc i) v zero    = c zero
  upd c (suc i) v (suc j) = upd (λ j → c (suc j)) i v j

  upd-all : ∀ {n} {X : Set} (Q : Fin n → X → Set) c i v →
            (∀ j → Q j (c j)) → Q i v → ∀ j → Q j (upd c i v j)
  upd-all Q c zero    v qc qv zero    = qv
  upd-all Q c zero    v qc qv (suc j) = qc (suc j)
  upd-all Q c (suc i) v qc qv zero    = qc zero
  upd-all Q c (suc i) v qc qv (suc j) =
    upd-all (λ j → Q (suc j)) (λ j → c (suc j)) i v (λ j → qc (suc j)) qv j

  ∑-upd : ∀ {n} {X : Set} (g : Fin n → X → Carrier) c i v →
          ∑ (λ j → g j (upd c i v j)) + g i (c i) ≈ ∑ (λ j → g j (c j)) + g i v
  ∑-upd g c zero v =
    trans (+-comm _ _) (trans (+-congˡ (+-comm _ _)) (sym (+-assoc _ _ _)))
  ∑-upd g c (suc i) v =
    trans (+-assoc _ _ _)
          (trans (+-congˡ (∑-upd (λ j → g (suc j)) (λ j → c (suc j)) i v))
                 (sym (+-assoc _ _ _)))

  ----------------------------------------------------------------------
  -- 2. The affine-separable form and its closure

  -- an input at scale s: region R has s * m R slices
  Input : ℕ → Set
  Input s = (R : Fin r) → Fin (s ℕ.* m R) → A

  -- an obligation, at every scale
  Family : Set c
  Family = (s : ℕ) → Y → Input s → Carrier

  ΣΣ : (Fin r → Y → A → Carrier) → (s : ℕ) → Y → Input s → Carrier
  ΣΣ Δ s y x = ∑ λ R → ∑ λ t → Δ R y (x R t)

  -- G and Δ do not depend on s: the summand is a map-axis function of
  -- the slice (the same per-region function at every offset and size)
  record Affine (E : Family) : Set (c ⊔ ℓ) where
    field
      G    : Y → Carrier
      Δ    : Fin r → Y → A → Carrier
      form : ∀ s y (x : Input s) → E s y x ≈ G y + ΣΣ Δ s y x

  ΣΣ-+ : ∀ Δ₁ Δ₂ s y (x : Input s) →
         ΣΣ (λ R y a → Δ₁ R y a + Δ₂ R y a) s y x ≈ ΣΣ Δ₁ s y x + ΣΣ Δ₂ s y x
  ΣΣ-+ Δ₁ Δ₂ s y x = trans (∑-cong λ R → ∑-+ (λ t → Δ₁ R y (x R t)) (λ t → Δ₂ R y (x R t)))
                            (∑-+ (λ R → ∑ λ t → Δ₁ R y (x R t)) (λ R → ∑ λ t → Δ₂ R y (x R t)))

  ΣΣ-0 : ∀ s y (x : Input s) → ΣΣ (λ _ _ _ → 0#) s y x ≈ 0#
  ΣΣ-0 s y x = trans (∑-cong {r} {λ R → ∑ {s ℕ.* m R} λ _ → 0#} λ R → ∑-0 (s ℕ.* m R)) (∑-0 r)

  ΣΣ-neg : ∀ Δ s y (x : Input s) → ΣΣ (λ R y a → - Δ R y a) s y x ≈ - ΣΣ Δ s y x
  ΣΣ-neg Δ s y x = trans (∑-cong λ R → ∑-neg (λ t → Δ R y (x R t)))
                         (∑-neg (λ R → ∑ λ t → Δ R y (x R t)))

  ΣΣ-* : ∀ (a : Y → Carrier) Δ s y (x : Input s) →
         ΣΣ (λ R y v → a y * Δ R y v) s y x ≈ a y * ΣΣ Δ s y x
  ΣΣ-* a Δ s y x = trans (∑-cong λ R → ∑-* (a y) (λ t → Δ R y (x R t)))
                         (∑-* (a y) (λ R → ∑ λ t → Δ R y (x R t)))

  +-interchange : ∀ a b d e → (a + b) + (d + e) ≈ (a + d) + (b + e)
  +-interchange a b d e = begin
    (a + b) + (d + e)  ≈⟨ +-assoc a b (d + e) ⟩
    a + (b + (d + e))  ≈˘⟨ +-congˡ (+-assoc b d e) ⟩
    a + ((b + d) + e)  ≈⟨ +-congˡ (+-congʳ (+-comm b d)) ⟩
    a + ((d + b) + e)  ≈⟨ +-congˡ (+-assoc d b e) ⟩
    a + (d + (b + e))  ≈˘⟨ +-assoc a d (b + e) ⟩
    (a + d) + (b + e)  ∎

  -- a term without the axis (a function of y only): Δ = 0
  affine-const : (g : Y → Carrier) → Affine (λ _ y _ → g y)
  affine-const g = record
    { G = g ; Δ = λ _ _ _ → 0#
    ; form = λ s y x → sym (trans (+-congˡ (ΣΣ-0 s y x)) (+-identityʳ (g y))) }

  -- a map-axis summand Σ_R Σ_t f R y (x R t): G = 0
  affine-map : (f : Fin r → Y → A → Carrier) → Affine (ΣΣ f)
  affine-map f = record { G = λ _ → 0# ; Δ = f ; form = λ s y x → sym (+-identityˡ _) }

  affine-+ : ∀ {E₁ E₂} → Affine E₁ → Affine E₂ → Affine (λ s y x → E₁ s y x + E₂ s y x)
  affine-+ a₁ a₂ = record
    { G = λ y → G a₁ y + G a₂ y ; Δ = λ R y v → Δ a₁ R y v + Δ a₂ R y v
    ; form = λ s y x → trans (+-cong (form a₁ s y x) (form a₂ s y x))
                       (trans (+-interchange _ _ _ _) (+-congˡ (sym (ΣΣ-+ (Δ a₁) (Δ a₂) s y x)))) }
    where open Affine

  affine-neg : ∀ {E} → Affine E → Affine (λ s y x → - E s y x)
  affine-neg a = record
    { G = λ y → - G y ; Δ = λ R y v → - Δ R y v
    ; form = λ s y x → trans (-‿cong (form s y x)) (trans (sym (⁻¹-∙-comm _ _))
               (+-congˡ (sym (ΣΣ-neg Δ s y x)))) }
    where open Affine a

  -- multiplication by a factor not on the axis
  affine-* : ∀ {E} (a : Y → Carrier) → Affine E → Affine (λ s y x → a y * E s y x)
  affine-* a e = record
    { G = λ y → a y * G y ; Δ = λ R y v → a y * Δ R y v
    ; form = λ s y x → trans (*-congˡ (form s y x)) (trans (distribˡ _ _ _)
               (+-congˡ (sym (ΣΣ-* a Δ s y x)))) }
    where open Affine e

  affine-cong : ∀ {E E'} → (∀ s y x → E s y x ≈ E' s y x) → Affine E → Affine E'
  affine-cong eq e = record { G = G ; Δ = Δ ; form = λ s y x → trans (sym (eq s y x)) (form s y x) }
    where open Affine e

  ----------------------------------------------------------------------
  -- 3. Two scales

  -- every slice satisfies the assumption
  Valid : (Fin r → A → Set) → (s : ℕ) → Input s → Set
  Valid P s x = ∀ R t → P R (x R t)

  -- the obligation holds at scale s
  Holds : (Fin r → A → Set) → Family → ℕ → Set ℓ
  Holds P E s = ∀ y (x : Input s) → Valid P s x → E s y x ≈ 0#

  -- the input with every slice of region R equal to b R
  flat : ∀ s → (Fin r → A) → Input s
  flat s b R _ = b R

  -- Σ_R m R × Δ R y (b R): the sum at scale 1 at flat b
  C : (Fin r → Y → A → Carrier) → Y → (Fin r → A) → Carrier
  C Δ y b = ∑ λ R → m R × Δ R y (b R)

  ΣΣ-flat : ∀ s Δ y b → ΣΣ Δ s y (flat s b) ≈ s × C Δ y b
  ΣΣ-flat s Δ y b = begin
    (∑ λ R → ∑ {s ℕ.* m R} λ _ → Δ R y (b R))
                                        ≈⟨ ∑-cong (λ R → ∑-const (s ℕ.* m R) _) ⟩
    (∑ λ R → (s ℕ.* m R) × Δ R y (b R)) ≈˘⟨ ∑-cong (λ R → ×-assocˡ _ s (m R)) ⟩
    (∑ λ R → s × (m R × Δ R y (b R)))   ≈⟨ ∑-× s (λ R → m R × Δ R y (b R)) ⟩
    s × C Δ y b                         ∎

  private
    first : ∀ {n} → 1 ≤ n → Fin n
    first {suc n} _ = zero

    gap : ∀ {a b} → a < b → ∃ λ k → b ≡ a ℕ.+ suc k
    gap {zero}  {suc b} (s≤s z≤n) = b , P.refl
    gap {suc a} {suc b} (s≤s p) with gap p
    ... | k , e = k , P.cong suc e

  module _ (torsion-free : ∀ k x → suc k × x ≈ 0# → x ≈ 0#) where

    ×-cancel : ∀ {k} → 1 ≤ k → ∀ x z → k × x ≈ k × z → x ≈ z
    ×-cancel {suc k} _ x z e = trans (inverseˡ-unique x (- z) (torsion-free k _ (begin
      suc k × (x + - z)            ≈⟨ ×-distrib-+ x (- z) (suc k) ⟩
      suc k × x + suc k × (- z)    ≈⟨ +-cong e (×-neg (suc k) z) ⟩
      suc k × z + - (suc k × z)    ≈⟨ -‿inverseʳ _ ⟩
      0#                           ∎))) (⁻¹-involutive z)

    -- g + s₁ × d ≈ 0# and g + s₂ × d ≈ 0# at s₁ ≢ s₂ force d ≈ 0#, g ≈ 0#
    private
      cancel< : ∀ g d a k → g + (a ℕ.+ suc k) × d ≈ 0# → g + a × d ≈ 0# → d ≈ 0#
      cancel< g d a k h₁ h₂ = torsion-free k d (begin
        suc k × d                  ≈˘⟨ +-identityˡ _ ⟩
        0# + suc k × d             ≈˘⟨ +-congʳ h₂ ⟩
        (g + a × d) + suc k × d    ≈⟨ +-assoc _ _ _ ⟩
        g + (a × d + suc k × d)    ≈˘⟨ +-congˡ (×-homo-+ d a (suc k)) ⟩
        g + (a ℕ.+ suc k) × d      ≈⟨ h₁ ⟩
        0#                         ∎)

    cancel : ∀ {s₁ s₂} → s₁ ≢ s₂ → ∀ g d → g + s₁ × d ≈ 0# → g + s₂ × d ≈ 0# → d ≈ 0#
    cancel {s₁} {s₂} ne g d h₁ h₂ with <-cmp s₁ s₂
    ... | tri≈ _ eq _ = ⊥-elim (ne eq)
    ... | tri< lt _ _ with gap lt
    ...   | k , P.refl = cancel< g d s₁ k h₂ h₁
    cancel {s₁} {s₂} ne g d h₁ h₂ | tri> _ _ gt with gap gt
    ...   | k , P.refl = cancel< g d s₂ k h₁ h₂

    cancel-g : ∀ g d s → d ≈ 0# → g + s × d ≈ 0# → g ≈ 0#
    cancel-g g d s d≈0 h = begin
      g                ≈˘⟨ +-identityʳ g ⟩
      g + 0#           ≈˘⟨ +-congˡ (trans (×-congʳ s d≈0) (×-0 s)) ⟩
      g + s × d        ≈⟨ h ⟩
      0#               ∎

    module _ {E : Family} (aff : Affine E) (P : Fin r → A → Set) where
      open Affine aff

      -- (ii) at a flat input, E s is G + s × C
      at-flat : ∀ {s} → Holds P E s → ∀ y b → (∀ R → P R (b R)) → G y + s × C Δ y b ≈ 0#
      at-flat {s} h y b pb = begin
        G y + s × C Δ y b          ≈˘⟨ +-congˡ (ΣΣ-flat s Δ y b) ⟩
        G y + ΣΣ Δ s y (flat s b)  ≈˘⟨ form s y (flat s b) ⟩
        E s y (flat s b)           ≈⟨ h y (flat s b) (λ R _ → pb R) ⟩
        0#                         ∎

      -- (iii) two scales: at every valid flat input, C and G vanish
      module _ {s₁ s₂} (ne : s₁ ≢ s₂) (h₁ : Holds P E s₁) (h₂ : Holds P E s₂)
               (y : Y) (b : Fin r → A) (pb : ∀ R → P R (b R)) where

        C≈0 : C Δ y b ≈ 0#
        C≈0 = cancel ne (G y) _ (at-flat h₁ y b pb) (at-flat h₂ y b pb)

        G≈0 : G y ≈ 0#
        G≈0 = cancel-g (G y) _ s₁ C≈0 (at-flat h₁ y b pb)

        -- (i) Δ R y is constant on the valid slices of a non-empty region:
        -- compare flat b with flat b', b' = b except region R is v
        Δ-flat : ∀ R → 1 ≤ m R → ∀ v → P R v → Δ R y v ≈ Δ R y (b R)
        Δ-flat R ne-R v pv = ×-cancel ne-R _ _ (begin
          m R × Δ R y v                       ≈˘⟨ +-identityˡ _ ⟩
          0# + m R × Δ R y v                  ≈˘⟨ +-congʳ C≈0 ⟩
          C Δ y b + m R × Δ R y v             ≈˘⟨ ∑-upd g b R v ⟩
          C Δ y b' + m R × Δ R y (b R)        ≈⟨ +-congʳ C'≈0 ⟩
          0# + m R × Δ R y (b R)              ≈⟨ +-identityˡ _ ⟩
          m R × Δ R y (b R)                   ∎)
          where
          g  = λ R a → m R × Δ R y a
          b' = upd b R v
          C'≈0 = cancel ne (G y) _ (at-flat h₁ y b' pb') (at-flat h₂ y b' pb')
            where pb' = upd-all P b R v pb pv

    -- Checked at two different scales (any two, 0 included), the
    -- obligation holds at every scale s ≥ 1 (regions non-empty).  The
    -- reference slices b are the first slices of x; by (i) every slice
    -- of region R contributes what b R does, by (ii)-(iii) that is 0.
    two-scales :
      (P : Fin r → A → Set) → (∀ R → 1 ≤ m R) → ∀ {E} → Affine E →
      ∀ {s₁ s₂} → s₁ ≢ s₂ → Holds P E s₁ → Holds P E s₂ →
      ∀ s → 1 ≤ s → Holds P E s
    two-scales P nonempty {E} aff ne h₁ h₂ s 1≤s y x px = begin
      E s y x                    ≈⟨ form s y x ⟩
      G y + ΣΣ Δ s y x           ≈⟨ +-congˡ (∑-cong λ R → ∑-cong λ t →
                                      Δ-flat aff P ne h₁ h₂ y b pb R (nonempty R) (x R t) (px R t)) ⟩
      G y + ΣΣ Δ s y (flat s b)  ≈⟨ +-cong (G≈0 aff P ne h₁ h₂ y b pb) (ΣΣ-flat s Δ y b) ⟩
      0# + s × C Δ y b           ≈⟨ +-congˡ (trans (×-congʳ s (C≈0 aff P ne h₁ h₂ y b pb)) (×-0 s)) ⟩
      0# + 0#                    ≈⟨ +-identityʳ 0# ⟩
      0#                         ∎
      where
      open Affine aff
      b  = λ R → x R (first (*-mono-≤ 1≤s (nonempty R)))
      pb = λ R → px R (first (*-mono-≤ 1≤s (nonempty R)))

------------------------------------------------------------------------
-- 4. One scale is not enough.  Over ℤ (torsion-free), one region of
-- length 1, a slice one integer: the obligation
--     Σ_t (x_t + 1) = Σ_t x_t + 2
-- (spec minus impl: G = -2, Δ = 1) holds at scale 2 for every input
-- and fails at scale 4.

module _ where
  open import Data.Integer using (ℤ; +_; _+_; -_)
  open import Data.Integer.Properties using (+-*-commutativeRing)
  open import Data.Integer.Solver using (module +-*-Solver)
  open Axis +-*-commutativeRing {1} (λ _ → 1) ℤ ⊤
    using (Family; Affine; Holds; ΣΣ; affine-+; affine-neg; affine-map; affine-const)

  private
    trap : Family
    trap s y x = ΣΣ (λ _ _ v → v + + 1) s y x + - (ΣΣ (λ _ _ v → v) s y x + + 2)

    trap-affine : Affine trap
    trap-affine = affine-+ (affine-map λ _ _ v → v + + 1)
                           (affine-neg (affine-+ (affine-map λ _ _ v → v) (affine-const λ _ → + 2)))

    trap-2 : Holds (λ _ _ → ⊤) trap 2
    trap-2 y x _ = solve 2 (λ a b →
      ((a :+ con (+ 1)) :+ ((b :+ con (+ 1)) :+ con (+ 0))) :+ con (+ 0) :+
      :- (((a :+ (b :+ con (+ 0))) :+ con (+ 0)) :+ con (+ 2)) := con (+ 0))
      P.refl (x zero zero) (x zero (suc zero))
      where open +-*-Solver

    trap-4 : trap 4 tt (λ _ _ → + 0) ≢ + 0     -- it is + 2
    trap-4 ()

  one-scale-not-enough :
    ¬ (∀ (E : Family) → Affine E → Holds (λ _ _ → ⊤) E 2 → Holds (λ _ _ → ⊤) E 4)
  one-scale-not-enough claim =
    trap-4 (claim trap trap-affine trap-2 tt (λ _ _ → + 0) (λ _ _ → tt))
