{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- What the kernel replay relies on.
--
--  * termination: every run of the checked (and of the unchecked)
--    semantics is finite (strong normalisation), so "maximal run" means
--    "run to a terminal configuration";
--  * (i)  race-found: if one run reaches err, every run can still reach
--         err, and every terminal configuration reachable is err;
--  * (iii) outputs-unique / unchecked-outputs-unique: the final state of
--         one race-free terminated checked run is the final state of
--         every terminated run, checked or unchecked;
--  * simulation lemmas between the checked and the unchecked semantics.
------------------------------------------------------------------------
open import Data.Nat using (ℕ)

module Confluence.Corollaries (Val : Set) (Op : Set) (⟦_⟧ₒ : Op → Val → Val → Val) (N M R : ℕ) where

open import Confluence.Lang Val Op ⟦_⟧ₒ N M R
open import Confluence.Diamond Val Op ⟦_⟧ₒ N M R
import Confluence.Abstract as Abs
module U = Abs _⟶u_
open U using () renaming (_⟶*_ to _⟶u*_; Terminal to UTerminal)

open import Data.Bool using (Bool; true; false; if_then_else_)
open import Data.Nat using (zero; suc; _+_; _<_; _≤_; z≤n; s≤s)
open import Data.Nat.Properties
  using (≤-refl; ≤-trans; n≤1+n; +-mono-≤; +-monoˡ-<; +-monoʳ-<; +-mono-<-≤; +-mono-≤-<)
open import Data.Fin using (Fin; zero; suc)
open import Data.List using (List; []; _∷_; length)
open import Data.Vec using (Vec; []; _∷_; lookup; _[_]≔_)
open import Data.Product using (∃; _×_; _,_; proj₁; proj₂)
open import Data.Sum using (_⊎_; inj₁; inj₂)
open import Data.Empty using (⊥-elim)
open import Relation.Nullary using (¬_)
open import Relation.Binary.PropositionalEquality

------------------------------------------------------------------------
-- Termination

len : ∀ {n} → Vec Thread n → ℕ
len []         = 0
len (th ∷ ths) = length (prog th) + len ths

size : Conf → ℕ
size err    = 0
size (ok s) = suc (len (thr s))

nextT : Act → Vec Val M → Thread → Thread
nextT (loc x)    m th = x
nextT (rd a g)   m th = g (lookup m a)
nextT (wr a w x) m th = x
nextT blk        m th = th

go-thr : ∀ s t k → thr (go t k s) ≡ thr s [ t ]≔ nextT k (mem s) (lookup (thr s) t)
go-thr s t (loc x)    = refl
go-thr s t (rd a g)   = refl
go-thr s t (wr a w x) = refl
go-thr s t blk        = sym ([]≔-lookup (thr s) t)
  where open import Data.Vec.Properties using ([]≔-lookup)

next-shorter : ∀ th {k} → act th ≡ k → Live k → ∀ m →
               length (prog (nextT k m th)) < length (prog th)
next-shorter (thread rs [])                 refl ()
next-shorter (thread rs (const r v ∷ is))   refl l m = ≤-refl
next-shorter (thread rs (binop o r a b ∷ is)) refl l m = ≤-refl
next-shorter (thread rs (load r a ∷ is))    refl l m = ≤-refl
next-shorter (thread rs (store a r ∷ is))   refl l m = ≤-refl
next-shorter (thread rs (sync S ∷ is))      refl ()

len-upd : ∀ {n} (ths : Vec Thread n) t x → length (prog x) < length (prog (lookup ths t)) →
          len (ths [ t ]≔ x) < len ths
len-upd (th ∷ ths) zero    x p = +-monoˡ-< (len ths) p
len-upd (th ∷ ths) (suc t) x p = +-monoʳ-< (length (prog th)) (len-upd ths t x p)

cond-≤ : ∀ b th → length (prog (if b then pop th else th)) ≤ length (prog th)
cond-≤ true  (thread rs [])       = ≤-refl
cond-≤ true  (thread rs (i ∷ is)) = n≤1+n _
cond-≤ false th                   = ≤-refl

popAll-≤ : ∀ {n} (S : Mask n) (ths : Vec Thread n) → len (popAll S ths) ≤ len ths
popAll-≤ []      []         = z≤n
popAll-≤ (b ∷ S) (th ∷ ths) = +-mono-≤ (cond-≤ b th) (popAll-≤ S ths)

popAll-< : ∀ {n} (S : Mask n) (ths : Vec Thread n) t → lookup S t ≡ true →
           ∀ {i is} → prog (lookup ths t) ≡ i ∷ is → len (popAll S ths) < len ths
popAll-< (true ∷ S) (thread rs p ∷ ths) zero    refl refl = +-mono-<-≤ ≤-refl (popAll-≤ S ths)
popAll-< (b ∷ S)    (th ∷ ths)          (suc t) q    e    = +-mono-≤-< (cond-≤ b th) (popAll-< S ths t q e)

step-size : ∀ {c d} → c ⟶ d → size d < size c
step-size (s-go {s} t {k} p l b) =
  s≤s (subst (λ z → len z < len (thr s)) (sym (go-thr s t k))
             (len-upd (thr s) t _ (next-shorter (lookup (thr s) t) p l (mem s))))
step-size (s-bad t p b) = s≤s z≤n
step-size (s-sync {s} S t₀ p₀ a₀ en) = s≤s (popAll-< S (thr s) t₀ p₀ (proj₂ a₀))

-- strong normalisation: no infinite run exists
data SN (c : Conf) : Set where
  sn : (∀ {d} → c ⟶ d → SN d) → SN c

sn< : ∀ n c → size c < n → SN c
sn< zero    c ()
sn< (suc n) c (s≤s p) = sn (λ st → sn< n _ (≤-trans (step-size st) p))

terminating : ∀ c → SN c
terminating c = sn< (suc (size c)) c ≤-refl

------------------------------------------------------------------------
-- (i) a race is found whatever the schedule

err-terminal : Terminal err
err-terminal ()

-- if some run reaches err then every run, wherever it stopped, can
-- still reach err ...
race-found : ∀ {c₀ c} → c₀ ⟶* err → c₀ ⟶* c → c ⟶* err
race-found r₁ r₂ = complete-to checked-confluent r₁ err-terminal r₂

-- ... and every maximal (= terminated, by `terminating`) run ends in err
race-found-maximal : ∀ {c₀ c} → c₀ ⟶* err → c₀ ⟶* c → Terminal c → c ≡ err
race-found-maximal r₁ r₂ T = sym (unique-terminal checked-confluent r₁ r₂ err-terminal T)

------------------------------------------------------------------------
-- (iii) one race-free terminated run decides the result (checked)

outputs-unique : ∀ {c₀ s₁ c} → c₀ ⟶* ok s₁ → Terminal (ok s₁) → c₀ ⟶* c → Terminal c → c ≡ ok s₁
outputs-unique r₁ T₁ r₂ T₂ = unique-terminal checked-confluent r₂ r₁ T₂ T₁

-- in particular no run reaches a race
no-race-anywhere : ∀ {c₀ s₁} → c₀ ⟶* ok s₁ → Terminal (ok s₁) → ¬ (c₀ ⟶* err)
no-race-anywhere r₁ T₁ r₂ with outputs-unique r₁ T₁ r₂ err-terminal
... | ()

------------------------------------------------------------------------
-- Checked versus unchecked semantics

erase-go : ∀ s t k → erase (go t k s) ≡ ugo t k (erase s)
erase-go s t (loc x)    = refl
erase-go s t (rd a g)   = refl
erase-go s t (wr a w x) = refl
erase-go s t blk        = refl

-- a race-free checked step is an unchecked step
down₁ : ∀ {s s'} → ok s ⟶ ok s' → erase s ⟶u erase s'
down₁ (s-go {s} t {k} p l b) = subst (erase s ⟶u_) (sym (erase-go s t k)) (u-go t p l)
down₁ (s-sync S t₀ p₀ a₀ en) = u-sync S t₀ p₀ a₀ en

down : ∀ {s s'} → ok s ⟶* ok s' → erase s ⟶u* erase s'
down ε = U.ε
down (_◅_ {y = ok s₁} st r) = down₁ st U.◅ down r
down (_◅_ {y = err} st (() ◅ r))

-- every unchecked step is matched by a checked step, or the checked
-- semantics reports a race (Volta, Lemma 2, one step)
lift₁ : ∀ s {u'} → erase s ⟶u u' → (ok s ⟶ err) ⊎ ∃ λ s' → (ok s ⟶ ok s') × erase s' ≡ u'
lift₁ s (u-go t {k} p l) with bcase (badAct t k (ctx s))
... | inj₁ b = inj₁ (s-bad t p b)
... | inj₂ b = inj₂ (go t k s , s-go t p l b , erase-go s t k)
lift₁ s (u-sync S t₀ p₀ a₀ en) = inj₂ (doSync S s , s-sync S t₀ p₀ a₀ en , refl)

lift : ∀ s {u'} → erase s ⟶u* u' → (ok s ⟶* err) ⊎ ∃ λ s' → (ok s ⟶* ok s') × erase s' ≡ u'
lift s U.ε = inj₂ (s , ε , refl)
lift s (st U.◅ r) with lift₁ s st
... | inj₁ e = inj₁ (e ◅ ε)
... | inj₂ (s₁ , st' , refl) with lift s₁ r
...   | inj₁ e = inj₁ (st' ◅ e)
...   | inj₂ (s₂ , r' , eq) = inj₂ (s₂ , st' ◅ r' , eq)

-- a checked step (even a race report) implies an unchecked step exists
reflect₁ : ∀ {s c} → ok s ⟶ c → ∃ λ u' → erase s ⟶u u'
reflect₁ (s-go t p l b)                = _ , u-go t p l
reflect₁ (s-bad {s} t {k} p b)         = _ , u-go t p (bad→live t k (ctx s) b)
reflect₁ (s-sync S t₀ p₀ a₀ en)        = _ , u-sync S t₀ p₀ a₀ en

terminal-erase : ∀ {s} → UTerminal (erase s) → Terminal (ok s)
terminal-erase T st = T (proj₂ (reflect₁ st))

ok-inj : ∀ {s s'} → ok s ≡ ok s' → s ≡ s'
ok-inj refl = refl

-- (iii) for the unchecked semantics: if one checked run from s₀ ends
-- race-free in s₁, every terminated unchecked run from (erase s₀) ends
-- in (erase s₁): same shared memory, same registers, same programs.
unchecked-outputs-unique : ∀ {s₀ s₁} → ok s₀ ⟶* ok s₁ → Terminal (ok s₁) →
                           ∀ {u} → erase s₀ ⟶u* u → UTerminal u → u ≡ erase s₁
unchecked-outputs-unique {s₀} r₁ T₁ r₂ T₂ with lift s₀ r₂
... | inj₁ e = ⊥-elim (no-race-anywhere r₁ T₁ e)
... | inj₂ (s' , r' , refl) =
  cong erase (ok-inj (outputs-unique r₁ T₁ r' (terminal-erase T₂)))

-- and every unchecked partial run can be completed to that result
unchecked-completes : ∀ {s₀ s₁} → ok s₀ ⟶* ok s₁ → Terminal (ok s₁) →
                      ∀ {u} → erase s₀ ⟶u* u → u ⟶u* erase s₁
unchecked-completes {s₀} r₁ T₁ r₂ with lift s₀ r₂
... | inj₁ e = ⊥-elim (no-race-anywhere r₁ T₁ e)
... | inj₂ (s' , r' , refl) = down (complete-to checked-confluent r₁ T₁ r')

-- unchecked runs are finite too
ugo-thr : ∀ u t k → uthr (ugo t k u) ≡ uthr u [ t ]≔ nextT k (umem u) (lookup (uthr u) t)
ugo-thr u t k = trans (cong uthr (sym (erase-go (state (uthr u) (umem u) ctx₀) t k)))
                      (go-thr (state (uthr u) (umem u) ctx₀) t k)

ustep-size : ∀ {u u'} → u ⟶u u' → len (uthr u') < len (uthr u)
ustep-size (u-go {u} t {k} p l) =
  subst (λ z → len z < len (uthr u)) (sym (ugo-thr u t k))
        (len-upd (uthr u) t _ (next-shorter (lookup (uthr u) t) p l (umem u)))
ustep-size (u-sync {u} S t₀ p₀ a₀ en) = popAll-< S (uthr u) t₀ p₀ (proj₂ a₀)

data USN (u : UState) : Set where
  usn : (∀ {u'} → u ⟶u u' → USN u') → USN u

usn< : ∀ n u → len (uthr u) < n → USN u
usn< zero    u ()
usn< (suc n) u (s≤s p) = usn (λ st → usn< n _ (≤-trans (ustep-size st) p))

unchecked-terminating : ∀ u → USN u
unchecked-terminating u = usn< (suc (len (uthr u))) u ≤-refl
