{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Clean expressions: a small term language over named tensors
-- (identity = a name, slice, concat, sum over ranks) with an evaluation
-- function, and relations between two environments of tensors.
--
-- The tensor operations are abstract (module parameters): the theorems
-- hold for every interpretation, in particular for the checker's own
-- semantics of slice/concat/add.
------------------------------------------------------------------------
open import Data.Nat using (ℕ)

module Composition.Clean
  (T : Set)
  (sliceT  : ℕ → ℕ → ℕ → T → T)   -- dimension, start, stop
  (concatT : ℕ → T → T → T)       -- dimension
  (addT    : T → T → T)           -- elementwise sum (sum over ranks)
  where

open import Data.List using (List; []; _∷_; _++_; map)
open import Data.List.Membership.Propositional using (_∈_; _∉_)
open import Data.List.Membership.Propositional.Properties using (∈-++⁺ˡ; ∈-++⁺ʳ)
open import Data.List.Relation.Unary.All as All using (All; []; _∷_)
open import Data.List.Relation.Unary.Any using (here; there)
open import Data.Product using (_×_; _,_; proj₁; proj₂)
import Data.Product as Prod
open import Relation.Binary.PropositionalEquality

Name : Set
Name = ℕ

-- an environment of tensors (compared only pointwise)
Env : Set
Env = Name → T

data Expr : Set where
  var    : Name → Expr
  slice  : (dim start stop : ℕ) → Expr → Expr
  concat : (dim : ℕ) → Expr → Expr → Expr
  sum    : Expr → Expr → Expr

⟦_⟧ : Expr → Env → T
⟦ var n ⟧            ρ = ρ n
⟦ slice d a b e ⟧    ρ = sliceT d a b (⟦ e ⟧ ρ)
⟦ concat d e₁ e₂ ⟧   ρ = concatT d (⟦ e₁ ⟧ ρ) (⟦ e₂ ⟧ ρ)
⟦ sum e₁ e₂ ⟧        ρ = addT (⟦ e₁ ⟧ ρ) (⟦ e₂ ⟧ ρ)

names : Expr → List Name
names (var n)          = n ∷ []
names (slice d a b e)  = names e
names (concat d e₁ e₂) = names e₁ ++ names e₂
names (sum e₁ e₂)      = names e₁ ++ names e₂

-- evaluation only depends on the names an expression mentions
eval-frame : ∀ e (ρ ρ' : Env) → (∀ n → n ∈ names e → ρ n ≡ ρ' n) → ⟦ e ⟧ ρ ≡ ⟦ e ⟧ ρ'
eval-frame (var n)          ρ ρ' h = h n (here refl)
eval-frame (slice d a b e)  ρ ρ' h = cong (sliceT d a b) (eval-frame e ρ ρ' h)
eval-frame (concat d e₁ e₂) ρ ρ' h =
  cong₂ (concatT d) (eval-frame e₁ ρ ρ' (λ n m → h n (∈-++⁺ˡ m)))
                    (eval-frame e₂ ρ ρ' (λ n m → h n (∈-++⁺ʳ (names e₁) m)))
eval-frame (sum e₁ e₂)      ρ ρ' h =
  cong₂ addT (eval-frame e₁ ρ ρ' (λ n m → h n (∈-++⁺ˡ m)))
             (eval-frame e₂ ρ ρ' (λ n m → h n (∈-++⁺ʳ (names e₁) m)))

-- substitution of expressions for names
_⟨_⟩ : Expr → (Name → Expr) → Expr
var n          ⟨ σ ⟩ = σ n
slice d a b e  ⟨ σ ⟩ = slice d a b (e ⟨ σ ⟩)
concat d e₁ e₂ ⟨ σ ⟩ = concat d (e₁ ⟨ σ ⟩) (e₂ ⟨ σ ⟩)
sum e₁ e₂      ⟨ σ ⟩ = sum (e₁ ⟨ σ ⟩) (e₂ ⟨ σ ⟩)

-- substitution is sound with respect to evaluation
subst-sound : ∀ e (σ : Name → Expr) (ρ' ρ : Env) → (∀ n → ρ' n ≡ ⟦ σ n ⟧ ρ) →
              ⟦ e ⟧ ρ' ≡ ⟦ e ⟨ σ ⟩ ⟧ ρ
subst-sound (var n)          σ ρ' ρ h = h n
subst-sound (slice d a b e)  σ ρ' ρ h = cong (sliceT d a b) (subst-sound e σ ρ' ρ h)
subst-sound (concat d e₁ e₂) σ ρ' ρ h = cong₂ (concatT d) (subst-sound e₁ σ ρ' ρ h) (subst-sound e₂ σ ρ' ρ h)
subst-sound (sum e₁ e₂)      σ ρ' ρ h = cong₂ addT (subst-sound e₁ σ ρ' ρ h) (subst-sound e₂ σ ρ' ρ h)

------------------------------------------------------------------------
-- Relations: each listed tensor t of the first environment equals a
-- clean expression over the second environment.

Rel : Set
Rel = List (Name × Expr)

HoldsFor : Env → Env → Name × Expr → Set
HoldsFor ρs ρd p = ρs (proj₁ p) ≡ ⟦ proj₂ p ⟧ ρd

Holds : Rel → Env → Env → Set
Holds R ρs ρd = All (HoldsFor ρs ρd) R

-- composing a relation (first → middle) with a substitution
-- (middle → last) by substituting into the clean expressions
compose : Rel → (Name → Expr) → Rel
compose R σ = map (Prod.map₂ (_⟨ σ ⟩)) R

compose-sound : ∀ R σ ρs ρm ρd → Holds R ρs ρm → (∀ n → ρm n ≡ ⟦ σ n ⟧ ρd) →
                Holds (compose R σ) ρs ρd
compose-sound []            σ ρs ρm ρd []       h = []
compose-sound ((t , e) ∷ R) σ ρs ρm ρd (p ∷ ps) h =
  trans p (subst-sound e σ ρm ρd h) ∷ compose-sound R σ ρs ρm ρd ps h
