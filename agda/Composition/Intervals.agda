{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Integers on intervals (certificates/intervals.py, Boxes in
-- certificates/refinement.py; docs/refinement.md "Integers on
-- intervals"). An integer input element v ranges over a box [lo, hi);
-- an integer tensor holds values v + c.
--   split   : deciding [lo, t) and [t, hi) decides [lo, hi) (Boxes.split)
--   steady  : a comparison v < e is one constant on the box when e is
--             not strictly inside (lo, hi): its truth at lo (test)
--   sel     : the row f (v + c) of a table is the element at v - lo of
--             the window of rows from lo + c (the sel atom of embedding)
--   eq      : v + c = k exactly when v - lo = k - c - lo (the eq atom of
--             embedding_dense_backward)
-- so one symbolic evaluation per box is the evaluation at each of its
-- points, and the boxes together cover the declared range.
------------------------------------------------------------------------
module Composition.Intervals where

open import Data.Integer using (ℤ; _+_; _-_; _<_; _≤_)
open import Data.Empty using (⊥-elim)
open import Data.Integer.Properties using (<-≤-trans; ≤-<-trans; <-irrefl; ≤-refl; <⇒≤; ≮⇒≥; <-cmp)
open import Data.Integer.Solver using (module +-*-Solver)
open import Data.Product using (_×_; _,_)
open import Function using (_⇔_; mk⇔)
open import Relation.Binary using (tri<; tri≈; tri>)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong; sym; trans)
open import Relation.Nullary using (¬_)
open +-*-Solver

-- the points of the box
In : ℤ → ℤ → ℤ → Set
In lo hi v = lo ≤ v × v < hi

split : ∀ {P : ℤ → Set} {lo hi} t →
        (∀ v → In lo t v → P v) → (∀ v → In t hi v → P v) → ∀ v → In lo hi v → P v
split {P} t below above v (lo≤v , v<hi) with <-cmp v t
... | tri< v<t _ _ = below v (lo≤v , v<t)
... | tri≈ _ refl _ = above v (≤-refl , v<hi)
... | tri> _ _ t<v = above v (<⇒≤ t<v , v<hi)

-- no edge strictly inside: v < e has the truth of lo < e at every point
steady : ∀ {lo hi e v} → ¬ (lo < e × e < hi) → In lo hi v → (v < e ⇔ lo < e)
steady {lo} {hi} {e} {v} no (lo≤v , v<hi) with <-cmp lo e
... | tri< lo<e _ _ = mk⇔ (λ _ → lo<e) (λ _ → v<e)
  where
    hi≤e : hi ≤ e
    hi≤e = ≮⇒≥ (λ e<hi → no (lo<e , e<hi))
    v<e = <-≤-trans v<hi hi≤e
... | tri≈ _ refl _ = mk⇔ (λ v<lo → ⊥-elim (<-irrefl refl (≤-<-trans lo≤v v<lo))) (λ lo<lo → ⊥-elim (<-irrefl refl lo<lo))
... | tri> _ _ e<lo = mk⇔ (λ v<e → ⊥-elim (<-irrefl refl (<-≤-trans (≤-<-trans lo≤v v<e) (<⇒≤ e<lo))))
                          (λ lo<e → ⊥-elim (<-irrefl refl (≤-<-trans (<⇒≤ lo<e) e<lo)))

-- the rows of a table from a on: what a sel atom lists (from lo + c)
window : {A : Set} → (ℤ → A) → ℤ → ℤ → A
window f a i = f (a + i)

sel : ∀ {A : Set} (f : ℤ → A) lo c v → window f (lo + c) (v - lo) ≡ f (v + c)
sel f lo c v = cong f (solve 3 (λ lo c v → (lo :+ c) :+ (v :- lo) := v :+ c) refl lo c v)

eq : ∀ lo c v k → (v + c ≡ k) ⇔ (v - lo ≡ (k - c) - lo)
eq lo c v k = mk⇔ (λ p → cong (λ x → x - lo) (trans (sym (shift v)) (cong (λ x → x - c) p)))
                  (λ p → trans (sym (back v)) (trans (cong (λ x → (x + lo) + c) p) (back′ k)))
  where
    shift : ∀ x → (x + c) - c ≡ x
    shift = solve 2 (λ c x → (x :+ c) :- c := x) refl c
    back : ∀ x → ((x - lo) + lo) + c ≡ x + c
    back = solve 3 (λ lo c x → ((x :- lo) :+ lo) :+ c := x :+ c) refl lo c
    back′ : ∀ x → ((((x - c) - lo) + lo) + c) ≡ x
    back′ = solve 3 (λ lo c x → (((x :- c) :- lo) :+ lo) :+ c := x) refl lo c
