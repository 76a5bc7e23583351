{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Abstract rewriting: the diamond property of the reflexive closure of
-- a relation gives confluence of its reflexive-transitive closure, and
-- hence uniqueness of terminal configurations.
------------------------------------------------------------------------
module Confluence.Abstract {A : Set} (_⟶_ : A → A → Set) where

open import Data.Product using (∃; _×_; _,_)
open import Data.Sum using (_⊎_; inj₁; inj₂)
open import Data.Empty using (⊥-elim)
open import Relation.Nullary using (¬_)
open import Relation.Binary.PropositionalEquality

infixr 5 _◅_
infix 4 _⟶*_ _⟶?_

data _⟶*_ : A → A → Set where
  ε   : ∀ {x} → x ⟶* x
  _◅_ : ∀ {x y z} → x ⟶ y → y ⟶* z → x ⟶* z

_⟶?_ : A → A → Set
x ⟶? y = x ≡ y ⊎ x ⟶ y

_◅◅_ : ∀ {x y z} → x ⟶* y → y ⟶* z → x ⟶* z
ε        ◅◅ ys = ys
(s ◅ xs) ◅◅ ys = s ◅ (xs ◅◅ ys)

?→* : ∀ {x y} → x ⟶? y → x ⟶* y
?→* (inj₁ refl) = ε
?→* (inj₂ s)    = s ◅ ε

Joinable? : A → A → Set
Joinable? b c = ∃ λ d → b ⟶? d × c ⟶? d

-- the diamond property of the reflexive closure
Diamond? : Set
Diamond? = ∀ {a b c} → a ⟶ b → a ⟶ c → Joinable? b c

Confluent : Set
Confluent = ∀ {a b c} → a ⟶* b → a ⟶* c → ∃ λ d → b ⟶* d × c ⟶* d

module _ (D : Diamond?) where

  strip : ∀ {a b c} → a ⟶ b → a ⟶* c → ∃ λ d → b ⟶* d × c ⟶? d
  strip {b = b} ab ε = b , ε , inj₂ ab
  strip ab (ac ◅ cs) with D ab ac
  ... | d , bd , inj₁ refl = _ , (?→* bd ◅◅ cs) , inj₁ refl
  ... | d , bd , inj₂ cd with strip cd cs
  ...   | e , de , ze = e , (?→* bd ◅◅ de) , ze

  confluence : Confluent
  confluence {c = c} ε ac = c , ac , ε
  confluence (ab ◅ bs) ac with strip ab ac
  ... | d , b'd , cd with confluence bs b'd
  ...   | e , be , de = e , be , (?→* cd ◅◅ de)

Terminal : A → Set
Terminal a = ∀ {b} → ¬ (a ⟶ b)

terminal-* : ∀ {a b} → Terminal a → a ⟶* b → a ≡ b
terminal-* T ε       = refl
terminal-* T (s ◅ r) = ⊥-elim (T s)

module _ (C : Confluent) where

  -- two terminal configurations reachable from the same one are equal
  unique-terminal : ∀ {x a b} → x ⟶* a → x ⟶* b → Terminal a → Terminal b → a ≡ b
  unique-terminal xa xb Ta Tb with C xa xb
  ... | d , ad , bd = trans (terminal-* Ta ad) (sym (terminal-* Tb bd))

  -- every run can still be completed to a reachable terminal configuration
  complete-to : ∀ {x a b} → x ⟶* a → Terminal a → x ⟶* b → b ⟶* a
  complete-to xa Ta xb with C xa xb
  ... | d , ad , bd rewrite terminal-* Ta ad = bd
