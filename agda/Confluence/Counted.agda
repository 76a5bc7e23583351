{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Counted barriers (issue 13, item 2): when `bar.sync id, count` is the
-- fixed-member barrier `sync T` of Lang.agda.
--
-- PTX completes a phase of barrier id as soon as `count` threads wait
-- at it; which threads those are may depend on the schedule.  The
-- checker maps every `bar.sync id[, count]` of a thread to `sync T`,
-- where T (a mask) is the set of threads that ever execute barrier id,
-- and accepts only if
--   (1) |T| = count (count = the CTA's threads: T = all threads), and
--   (2) every member of T waits at barrier id the same number of times
--       (its replay releases each phase only with all of T waiting,
--       and ends with every thread exited).
-- Then:
--   * `count-full`: a set W of waiting threads, W ⊆ T (only members
--     execute barrier id), with |W| = |T|, is T itself: a PTX phase
--     completion is a `u-sync T` step (`counted-is-sync`);
--   * `balanced-step`, `balanced-run`: (2) holds in every state every
--     schedule reaches;
--   * `sync-is-counted`: in such a state, every `u-sync T` step has every
--     member of T waiting (no exited member), so it is a PTX phase
--     completion with |T| = count arrivals.
-- So the model's runs and the counted runs are the same runs, and every
-- theorem of Corollaries, TruePositives and Homomorphism applies.
------------------------------------------------------------------------
open import Data.Nat using (ℕ)

module Confluence.Counted (Val : Set) (Op : Set) (⟦_⟧ₒ : Op → Val → Val → Val) (N M R : ℕ) where

open import Confluence.Lang Val Op ⟦_⟧ₒ N M R
open import Confluence.Corollaries Val Op ⟦_⟧ₒ N M R using (nextT; ugo-thr)
import Confluence.Abstract as Abs
open Abs _⟶u_ using (ε; _◅_) renaming (_⟶*_ to _⟶u*_)

open import Data.Bool using (Bool; true; false; if_then_else_)
open import Data.Bool.Properties using () renaming (_≟_ to _≟ᵇ_)
open import Data.Nat using (zero; suc; _≤_; z≤n; s≤s)
open import Data.Nat.Properties using (≤-trans; n≤1+n; ≤-refl)
open import Data.Fin using (Fin; zero; suc)
open import Data.Fin.Properties using () renaming (_≟_ to _≟ᶠ_)
open import Data.List using (List; []; _∷_)
open import Data.Vec using (Vec; []; _∷_; lookup; _[_]≔_)
open import Data.Vec.Properties using (≡-dec; lookup∘update; lookup∘update′)
open import Data.Product using (∃; _×_; _,_; proj₁; proj₂)
open import Data.Sum using (_⊎_; inj₁; inj₂)
open import Data.Empty using (⊥; ⊥-elim)
open import Relation.Nullary using (¬_; yes; no)
open import Relation.Binary.PropositionalEquality

------------------------------------------------------------------------
-- 1. A waiting set of |T| members is T

-- the number of members of a mask
∣_∣ : ∀ {n} → Mask n → ℕ
∣ [] ∣        = 0
∣ true  ∷ S ∣ = suc ∣ S ∣
∣ false ∷ S ∣ = ∣ S ∣

_⊆_ : ∀ {n} → Mask n → Mask n → Set
W ⊆ T = ∀ i → lookup W i ≡ true → lookup T i ≡ true

private
  ⊆-tail : ∀ {n w t} {W T : Mask n} → (w ∷ W) ⊆ (t ∷ T) → W ⊆ T
  ⊆-tail s i = s (suc i)

  ∣∣-mono : ∀ {n} (W T : Mask n) → W ⊆ T → ∣ W ∣ ≤ ∣ T ∣
  ∣∣-mono []          []          s = z≤n
  ∣∣-mono (true  ∷ W) (true  ∷ T) s = s≤s (∣∣-mono W T (⊆-tail s))
  ∣∣-mono (true  ∷ W) (false ∷ T) s with s zero refl
  ... | ()
  ∣∣-mono (false ∷ W) (true  ∷ T) s = ≤-trans (∣∣-mono W T (⊆-tail s)) (n≤1+n _)
  ∣∣-mono (false ∷ W) (false ∷ T) s = ∣∣-mono W T (⊆-tail s)

  suc≰ : ∀ {a b} → suc a ≤ b → b ≤ a → ⊥
  suc≰ (s≤s p) (s≤s q) = suc≰ p q

count-full : ∀ {n} (W T : Mask n) → W ⊆ T → ∣ T ∣ ≤ ∣ W ∣ → W ≡ T
count-full []          []          s c       = refl
count-full (true  ∷ W) (true  ∷ T) s (s≤s c) = cong (true ∷_) (count-full W T (⊆-tail s) c)
count-full (true  ∷ W) (false ∷ T) s c with s zero refl
... | ()
count-full (false ∷ W) (true  ∷ T) s c = ⊥-elim (suc≰ c (∣∣-mono W T (⊆-tail s)))
count-full (false ∷ W) (false ∷ T) s c = cong (false ∷_) (count-full W T (⊆-tail s) c)

-- A PTX phase completion: the threads W waiting at the barrier (all at
-- `sync T`, only members of T) are `count` = |T| many.  It is the
-- model's step over T.
counted-is-sync : ∀ {u} (W T : Mask N) t₀ → lookup W t₀ ≡ true → W ⊆ T → ∣ T ∣ ≤ ∣ W ∣ →
                  (∀ t → lookup W t ≡ true → AtSync T (lookup (uthr u) t)) →
                  u ⟶u udoSync W u
counted-is-sync W T t₀ p₀ s c wait with count-full W T s c
... | refl = u-sync W t₀ p₀ (wait t₀ p₀) (λ t p → inj₁ (wait t p))

------------------------------------------------------------------------
-- 2. Equal arrival counts are kept by every step

_≟ₘ_ : (S T : Mask N) → Relation.Nullary.Dec (S ≡ T)
_≟ₘ_ = ≡-dec _≟ᵇ_

hit : Mask N → Mask N → ℕ → ℕ
hit S T k with S ≟ₘ T
... | yes _ = suc k
... | no  _ = k

-- the number of barriers over T still ahead in a program
#sync : Mask N → List Instr → ℕ
#sync T []                  = 0
#sync T (sync S ∷ is)       = hit S T (#sync T is)
#sync T (const r v ∷ is)    = #sync T is
#sync T (binop o r a b ∷ is) = #sync T is
#sync T (load r a ∷ is)     = #sync T is
#sync T (store a r ∷ is)    = #sync T is

-- every member of T has k barriers over T ahead
Balanced : Mask N → ℕ → UState → Set
Balanced T k u = ∀ t → lookup T t ≡ true → #sync T (prog (lookup (uthr u) t)) ≡ k

#of : Mask N → UState → Tid → ℕ
#of T u t = #sync T (prog (lookup (uthr u) t))

private
  hit-same : ∀ T k → hit T T k ≡ suc k
  hit-same T k with T ≟ₘ T
  ... | yes _ = refl
  ... | no ne = ⊥-elim (ne refl)

  hit-other : ∀ S T k → S ≢ T → hit S T k ≡ k
  hit-other S T k ne with S ≟ₘ T
  ... | yes e = ⊥-elim (ne e)
  ... | no  _ = refl

  next-count : ∀ T th {k} → act th ≡ k → Live k → ∀ m → #sync T (prog (nextT k m th)) ≡ #sync T (prog th)
  next-count T (thread rs [])                   refl ()
  next-count T (thread rs (const r v ∷ is))     refl l m = refl
  next-count T (thread rs (binop o r a b ∷ is)) refl l m = refl
  next-count T (thread rs (load r a ∷ is))      refl l m = refl
  next-count T (thread rs (store a r ∷ is))     refl l m = refl
  next-count T (thread rs (sync S ∷ is))        refl ()

  upd-count : ∀ T (ths : Vec Thread N) t x → #sync T (prog x) ≡ #sync T (prog (lookup ths t)) →
              ∀ t' → #sync T (prog (lookup (ths [ t ]≔ x) t')) ≡ #sync T (prog (lookup ths t'))
  upd-count T ths t x e t' with t' ≟ᶠ t
  ... | yes refl = trans (cong (λ z → #sync T (prog z)) (lookup∘update t ths x)) e
  ... | no  ne   = cong (λ z → #sync T (prog z)) (lookup∘update′ ne ths x)

  -- a step of one thread leaves every thread's count unchanged
  go-count : ∀ T u t {k} → act (lookup (uthr u) t) ≡ k → Live k → ∀ t' → #of T (ugo t k u) t' ≡ #of T u t'
  go-count T u t {k} p l t' =
    trans (cong (λ ths → #sync T (prog (lookup ths t'))) (ugo-thr u t k))
          (upd-count T (uthr u) t _ (next-count T (lookup (uthr u) t) p l (umem u)) t')

  popAll-lookup : ∀ {n} (S : Mask n) ths t →
                  lookup (popAll S ths) t ≡ (if lookup S t then pop (lookup ths t) else lookup ths t)
  popAll-lookup (b ∷ S) (th ∷ ths) zero    = refl
  popAll-lookup (b ∷ S) (th ∷ ths) (suc t) = popAll-lookup S ths t

  -- a barrier over S changes the count of a thread only if S is T and
  -- the thread waits at it (then by one)
  pop-count : ∀ S T th → Ready S th → S ≢ T → #sync T (prog (pop th)) ≡ #sync T (prog th)
  pop-count S T (thread rs .(sync S ∷ is)) (inj₁ (is , refl)) ne = sym (hit-other S T _ ne)
  pop-count S T (thread rs .[])            (inj₂ refl)        ne = refl

  cond-count : ∀ S T b th → (b ≡ true → Ready S th) → S ≢ T →
               #sync T (prog (if b then pop th else th)) ≡ #sync T (prog th)
  cond-count S T true  th r ne = pop-count S T th (r refl) ne
  cond-count S T false th r ne = refl

  sync-count : ∀ S T u t → (∀ t → lookup S t ≡ true → Ready S (lookup (uthr u) t)) → S ≢ T →
               #of T (udoSync S u) t ≡ #of T u t
  sync-count S T u t en ne = trans (cong (λ z → #sync T (prog z)) (popAll-lookup S (uthr u) t))
                                   (cond-count S T (lookup S t) (lookup (uthr u) t) (en t) ne)

  popped : ∀ {n} (S : Mask n) ths t → lookup S t ≡ true → lookup (popAll S ths) t ≡ pop (lookup ths t)
  popped S ths t q = trans (popAll-lookup S ths t) (cong (λ b → if b then _ else _) q)

  pop-at : ∀ th {S is} → prog th ≡ sync S ∷ is → prog (pop th) ≡ is
  pop-at (thread rs .(sync _ ∷ _)) refl = refl

------------------------------------------------------------------------
-- 3. In a balanced state a barrier over T fires only with every member
-- of T waiting (no member has exited): it is a PTX phase completion.

sync-is-counted : ∀ {u} T k t₀ → Balanced T k u → lookup T t₀ ≡ true → AtSync T (lookup (uthr u) t₀) →
                  (∀ t → lookup T t ≡ true → Ready T (lookup (uthr u) t)) →
                  ∀ t → lookup T t ≡ true → AtSync T (lookup (uthr u) t)
sync-is-counted {u} T k t₀ bal p₀ (is₀ , e₀) en t p with en t p
... | inj₁ a = a
... | inj₂ e = ⊥-elim (zero≢suc (trans (sym (cong (#sync T) e)) (trans (bal t p)
                 (trans (sym (bal t₀ p₀)) (trans (cong (#sync T) e₀) (hit-same T (#sync T is₀)))))))
  where zero≢suc : ∀ {m} → 0 ≢ suc m
        zero≢suc ()

balanced-step : ∀ {u u'} T k → Balanced T k u → u ⟶u u' → ∃ λ k' → Balanced T k' u'
balanced-step {u} T k bal (u-go t p l) = k , λ t' q → trans (go-count T u t p l t') (bal t' q)
balanced-step {u} T k bal (u-sync S t₀ p₀ a₀ en) with S ≟ₘ T
... | no ne    = k , λ t q → trans (sync-count S T u t en ne) (bal t q)
... | yes refl = #sync T (proj₁ a₀) , fires
  where
  suc-inj : ∀ {a b : ℕ} → suc a ≡ suc b → a ≡ b
  suc-inj refl = refl

  fires : Balanced T (#sync T (proj₁ a₀)) (udoSync T u)
  fires t q with sync-is-counted {u} T k t₀ bal p₀ a₀ en t q
  ... | is , e =
    trans (cong (λ z → #sync T (prog z)) (popped T (uthr u) t q))
    (trans (cong (#sync T) (pop-at (lookup (uthr u) t) e))
    (suc-inj (trans (sym (hit-same T (#sync T is)))
             (trans (cong (#sync T) (sym e)) (trans (bal t q)
             (trans (sym (bal t₀ p₀)) (trans (cong (#sync T) (proj₂ a₀)) (hit-same T (#sync T (proj₁ a₀))))))))))

balanced-run : ∀ {u u'} T k → Balanced T k u → u ⟶u* u' → ∃ λ k' → Balanced T k' u'
balanced-run T k bal ε        = k , bal
balanced-run T k bal (st ◅ r) with balanced-step T k bal st
... | k' , bal' = balanced-run T k' bal' r
