{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The reflexive closure of the checked step has the diamond property
-- (with propositional equality of configurations: states are
-- first-order vectors, so no setoid is needed), hence the checked
-- semantics is confluent.
------------------------------------------------------------------------
open import Data.Nat using (ℕ)

module Confluence.Diamond (Val : Set) (Op : Set) (⟦_⟧ₒ : Op → Val → Val → Val) (N M R : ℕ) where

open import Confluence.Lang Val Op ⟦_⟧ₒ N M R
open import Confluence.Abstract _⟶_ public

open import Data.Bool using (Bool; true; false; _∨_; _∧_; if_then_else_)
import Data.Bool.Properties as BoolP
open import Data.Fin using (Fin; zero; suc)
open import Data.Fin.Properties using (_≟_)
open import Data.List using (List; []; _∷_)
open import Data.Vec using (Vec; []; _∷_; lookup; _[_]≔_; map)
open import Data.Vec.Properties
  using (lookup∘update; lookup∘update′; []≔-commutes; []≔-idempotent;
         map-[]≔; lookup-map; map-∘; map-cong; ≡-dec)
open import Data.Product using (∃; _×_; _,_; proj₁; proj₂)
open import Data.Sum using (_⊎_; inj₁; inj₂)
open import Data.Empty using (⊥; ⊥-elim)
open import Relation.Nullary using (¬_; yes; no)
open import Relation.Binary.PropositionalEquality
open import Function.Base using (_∋_)

------------------------------------------------------------------------
-- small facts

t≢f : true ≢ false
t≢f ()

st≡ : ∀ {A A' B B' C C'} → A ≡ A' → B ≡ B' → C ≡ C' → state A B C ≡ state A' B' C'
st≡ refl refl refl = refl

live≢blk : ∀ {k} → Live k → k ≢ blk
live≢blk (loc x) ()
live≢blk (rd a g) ()
live≢blk (wr a w x) ()

bad→live : ∀ t k cs → badAct t k cs ≡ true → Live k
bad→live t (loc x)    cs ()
bad→live t (rd a g)   cs p = rd a g
bad→live t (wr a w x) cs p = wr a w x
bad→live t blk        cs ()

atSync-blk : ∀ {S} th → AtSync S th → act th ≡ blk
atSync-blk (thread rs ._) (is , refl) = refl

syncInj : ∀ {S S' : Mask N} {is is' : List Instr} → (List Instr ∋ sync S ∷ is) ≡ sync S' ∷ is' → S ≡ S'
syncInj refl = refl

-- a thread that can make a local step is not a participant of an enabled barrier
ready-blk : ∀ {S} th → Ready S th → act th ≡ blk
ready-blk th (inj₁ a) = atSync-blk th a
ready-blk (thread rs ._) (inj₂ refl) = refl

not-in-barrier : ∀ s S t {k} → (∀ i → lookup S i ≡ true → Ready S (lookup (thr s) i)) →
                 act (lookup (thr s) t) ≡ k → Live k → lookup S t ≡ false
not-in-barrier s S t en p l with bcase (lookup S t)
... | inj₂ q = q
... | inj₁ q = ⊥-elim (live≢blk l (trans (sym p) (ready-blk _ (en t q))))

lookup-active : ∀ {n} (S : Mask n) ths i → lookup (active S ths) i ≡ (lookup S i ∧ running (lookup ths i))
lookup-active (b ∷ S) (th ∷ ths) zero    = refl
lookup-active (b ∷ S) (th ∷ ths) (suc i) = lookup-active S ths i

active-false : ∀ {n} (S : Mask n) ths i → lookup S i ≡ false → lookup (active S ths) i ≡ false
active-false S ths i q rewrite lookup-active S ths i | q = refl

active-upd : ∀ {n} (S : Mask n) ths t x → lookup S t ≡ false → active S (ths [ t ]≔ x) ≡ active S ths
active-upd (false ∷ S) (th ∷ ths) zero    x refl = refl
active-upd (b ∷ S)     (th ∷ ths) (suc t) x q    = cong (_ ∷_) (active-upd S ths t x q)

cond-run : ∀ b th → (b ≡ true → prog th ≡ []) → running (if b then pop th else th) ≡ running th
cond-run false th h = refl
cond-run true (thread rs [])       h = refl
cond-run true (thread rs (i ∷ is)) h with h refl
... | ()

-- a barrier over S' does not change the active participants of S when
-- the two barriers share only exited threads
active-popAll : ∀ {n} (S S' : Mask n) ths →
  (∀ i → lookup S i ≡ true → lookup S' i ≡ true → prog (lookup ths i) ≡ []) →
  active S (popAll S' ths) ≡ active S ths
active-popAll []          []       []         h = refl
active-popAll (false ∷ S) (b' ∷ S') (th ∷ ths) h = cong (false ∷_) (active-popAll S S' ths (λ i → h (suc i)))
active-popAll (true ∷ S)  (b' ∷ S') (th ∷ ths) h =
  cong₂ _∷_ (cond-run b' th (h zero refl)) (active-popAll S S' ths (λ i → h (suc i)))

------------------------------------------------------------------------
-- lookups after updates

thr-go : ∀ s t k u → u ≢ t → lookup (thr (go t k s)) u ≡ lookup (thr s) u
thr-go s t (loc x)    u ne = lookup∘update′ ne (thr s) x
thr-go s t (rd a g)   u ne = lookup∘update′ ne (thr s) _
thr-go s t (wr a w x) u ne = lookup∘update′ ne (thr s) x
thr-go s t blk        u ne = refl

lookup-popAll-false : ∀ {n} (S : Mask n) ths t → lookup S t ≡ false →
                      lookup (popAll S ths) t ≡ lookup ths t
lookup-popAll-false (false ∷ S) (th ∷ ths) zero    refl = refl
lookup-popAll-false (b ∷ S)     (th ∷ ths) (suc t) p    = lookup-popAll-false S ths t p

popAll-upd : ∀ {n} (S : Mask n) ths t x → lookup S t ≡ false →
             popAll S (ths [ t ]≔ x) ≡ popAll S ths [ t ]≔ x
popAll-upd (false ∷ S) (th ∷ ths) zero    x refl = refl
popAll-upd (b ∷ S)     (th ∷ ths) (suc t) x p    = cong (_ ∷_) (popAll-upd S ths t x p)

popAll-comm : ∀ {n} (S S' : Mask n) ths → popAll S (popAll S' ths) ≡ popAll S' (popAll S ths)
popAll-comm [] [] [] = refl
popAll-comm (false ∷ S) (false ∷ S') (th ∷ ths) = cong (th ∷_) (popAll-comm S S' ths)
popAll-comm (false ∷ S) (true ∷ S') (th ∷ ths) = cong (pop th ∷_) (popAll-comm S S' ths)
popAll-comm (true ∷ S) (false ∷ S') (th ∷ ths) = cong (pop th ∷_) (popAll-comm S S' ths)
popAll-comm (true ∷ S) (true ∷ S') (th ∷ ths) = cong (pop (pop th) ∷_) (popAll-comm S S' ths)

lookup-popAll : ∀ {n} (S : Mask n) ths z →
                lookup (popAll S ths) z ≡ (if lookup S z then pop (lookup ths z) else lookup ths z)
lookup-popAll (b ∷ S) (th ∷ ths) zero    = refl
lookup-popAll (b ∷ S) (th ∷ ths) (suc z) = lookup-popAll S ths z

pop-exited : ∀ th → prog th ≡ [] → prog (pop th) ≡ []
pop-exited (thread rs []) e = refl

-- readiness for S survives a barrier over S' that shares only exited threads
ready-popAll : ∀ (S S' : Mask N) (ths : Vec Thread N) i → Ready S (lookup ths i) → (lookup S' i ≡ true → prog (lookup ths i) ≡ []) →
               Ready S (lookup (popAll S' ths) i)
ready-popAll S S' ths i r h with bcase (lookup S' i)
... | inj₂ q = subst (Ready S) (sym (lookup-popAll-false S' ths i q)) r
... | inj₁ q = inj₂ (trans (cong prog (lookup-popAll S' ths i)) (subst (λ b → prog (if b then pop (lookup ths i) else lookup ths i) ≡ []) (sym q) (pop-exited (lookup ths i) (h q))))

-- two updates of the same address, in both orders
ctx-same : ∀ (cs : Vec ACtx M) a (f g : ACtx → ACtx) → f (g (lookup cs a)) ≡ g (f (lookup cs a)) →
  (cs [ a ]≔ g (lookup cs a)) [ a ]≔ f (lookup (cs [ a ]≔ g (lookup cs a)) a) ≡
  (cs [ a ]≔ f (lookup cs a)) [ a ]≔ g (lookup (cs [ a ]≔ f (lookup cs a)) a)
ctx-same cs a f g e =
  trans (cong (λ z → (cs [ a ]≔ g (lookup cs a)) [ a ]≔ f z) (lookup∘update a cs (g (lookup cs a))))
  (trans ([]≔-idempotent cs a)
  (trans (cong (cs [ a ]≔_) e)
  (sym (trans (cong (λ z → (cs [ a ]≔ f (lookup cs a)) [ a ]≔ g z) (lookup∘update a cs (f (lookup cs a))))
              ([]≔-idempotent cs a)))))

-- two updates of different addresses, in both orders
ctx-diff : ∀ {X : Set} (cs : Vec X M) a b (f g : X → X) → a ≢ b →
  (cs [ a ]≔ f (lookup cs a)) [ b ]≔ g (lookup (cs [ a ]≔ f (lookup cs a)) b) ≡
  (cs [ b ]≔ g (lookup cs b)) [ a ]≔ f (lookup (cs [ b ]≔ g (lookup cs b)) a)
ctx-diff cs a b f g ne =
  trans (cong (λ z → (cs [ a ]≔ f (lookup cs a)) [ b ]≔ g z) (lookup∘update′ (≢-sym ne) cs _))
  (trans ([]≔-commutes cs a b ne)
  (cong (λ z → (cs [ b ]≔ g (lookup cs b)) [ a ]≔ f z) (sym (lookup∘update′ ne cs _))))

------------------------------------------------------------------------
-- Two local steps of different threads either commute (and stay
-- race-free) or both orders detect a race.

data Commute (s : State) (t : Tid) (kt : Act) (u : Tid) (ku : Act) : Set where
  both-ok  : badAct u ku (ctx (go t kt s)) ≡ false → badAct t kt (ctx (go u ku s)) ≡ false →
             go u ku (go t kt s) ≡ go t kt (go u ku s) → Commute s t kt u ku
  both-bad : badAct u ku (ctx (go t kt s)) ≡ true → badAct t kt (ctx (go u ku s)) ≡ true →
             Commute s t kt u ku

swapC : ∀ {s t kt u ku} → Commute s t kt u ku → Commute s u ku t kt
swapC (both-ok p q e) = both-ok q p (sym e)
swapC (both-bad p q)  = both-bad q p

module _ (T : Vec Thread N) (m : Vec Val M) (cs : Vec ACtx M) (t u : Tid) (ne : t ≢ u) where

  c-loc-loc : ∀ x y → Commute (state T m cs) t (loc x) u (loc y)
  c-loc-loc x y = both-ok refl refl (st≡ ([]≔-commutes T t u ne) refl refl)

  c-loc-rd : ∀ x b h → rdBad u (lookup cs b) ≡ false → Commute (state T m cs) t (loc x) u (rd b h)
  c-loc-rd x b h pu = both-ok pu refl (st≡ ([]≔-commutes T t u ne) refl refl)

  c-loc-wr : ∀ x b v y → wrBad u (lookup cs b) ≡ false → Commute (state T m cs) t (loc x) u (wr b v y)
  c-loc-wr x b v y pu = both-ok pu refl (st≡ ([]≔-commutes T t u ne) refl refl)

  c-rd-rd : ∀ a g b h → rdBad t (lookup cs a) ≡ false → rdBad u (lookup cs b) ≡ false →
            Commute (state T m cs) t (rd a g) u (rd b h)
  c-rd-rd a g b h pt pu with a ≟ b
  ... | yes refl =
    both-ok (trans (cong (rdBad u) (lookup∘update a cs _)) pu)
            (trans (cong (rdBad t) (lookup∘update a cs _)) pt)
            (st≡ ([]≔-commutes T t u ne) refl
                 (ctx-same cs a (rdUpd u) (rdUpd t)
                   (cong (actx _) ([]≔-commutes (rU (lookup cs a)) t u ne))))
  ... | no ab =
    both-ok (trans (cong (rdBad u) (lookup∘update′ (≢-sym ab) cs _)) pu)
            (trans (cong (rdBad t) (lookup∘update′ ab cs _)) pt)
            (st≡ ([]≔-commutes T t u ne) refl (ctx-diff cs a b (rdUpd t) (rdUpd u) ab))

  c-rd-wr : ∀ a g b v y → rdBad t (lookup cs a) ≡ false → wrBad u (lookup cs b) ≡ false →
            Commute (state T m cs) t (rd a g) u (wr b v y)
  c-rd-wr a g b v y pt pu with a ≟ b
  ... | yes refl =
    both-bad (trans (cong (wrBad u) (lookup∘update a cs _))
                    (∨-trueʳ (lookup (wU (lookup cs a)) u)
                      (anyAt-upd u (rU (lookup cs a)) t (allBut-other t u (≢-sym ne)))))
             (trans (cong (rdBad t) (lookup∘update a cs _)) (allBut-other u t ne))
  ... | no ab =
    both-ok (trans (cong (wrBad u) (lookup∘update′ (≢-sym ab) cs _)) pu)
            (trans (cong (rdBad t) (lookup∘update′ ab cs _)) pt)
            (st≡ (trans ([]≔-commutes T t u ne)
                        (cong (λ z → (T [ u ]≔ y) [ t ]≔ g z) (sym (lookup∘update′ ab m v))))
                 refl (ctx-diff cs a b (rdUpd t) (wrUpd u) ab))

  c-wr-wr : ∀ a w x b v y → wrBad t (lookup cs a) ≡ false → wrBad u (lookup cs b) ≡ false →
            Commute (state T m cs) t (wr a w x) u (wr b v y)
  c-wr-wr a w x b v y pt pu with a ≟ b
  ... | yes refl =
    both-bad (trans (cong (wrBad u) (lookup∘update a cs _))
                    (∨-trueˡ (anyAt u (rU (lookup cs a))) (allBut-other t u (≢-sym ne))))
             (trans (cong (wrBad t) (lookup∘update a cs _))
                    (∨-trueˡ (anyAt t (rU (lookup cs a))) (allBut-other u t ne)))
  ... | no ab =
    both-ok (trans (cong (wrBad u) (lookup∘update′ (≢-sym ab) cs _)) pu)
            (trans (cong (wrBad t) (lookup∘update′ ab cs _)) pt)
            (st≡ ([]≔-commutes T t u ne) ([]≔-commutes m a b ab)
                 (ctx-diff cs a b (wrUpd t) (wrUpd u) ab))

commute : ∀ s t u → t ≢ u → ∀ {kt ku} → Live kt → Live ku →
          badAct t kt (ctx s) ≡ false → badAct u ku (ctx s) ≡ false → Commute s t kt u ku
commute s t u ne (loc x) (loc y) pt pu = c-loc-loc (thr s) (mem s) (ctx s) t u ne x y
commute s t u ne (loc x) (rd b h) pt pu = c-loc-rd (thr s) (mem s) (ctx s) t u ne x b h pu
commute s t u ne (loc x) (wr b v y) pt pu = c-loc-wr (thr s) (mem s) (ctx s) t u ne x b v y pu
commute s t u ne (rd a g) (loc y) pt pu = swapC (c-loc-rd (thr s) (mem s) (ctx s) u t (≢-sym ne) y a g pt)
commute s t u ne (rd a g) (rd b h) pt pu = c-rd-rd (thr s) (mem s) (ctx s) t u ne a g b h pt pu
commute s t u ne (rd a g) (wr b v y) pt pu = c-rd-wr (thr s) (mem s) (ctx s) t u ne a g b v y pt pu
commute s t u ne (wr a w x) (loc y) pt pu = swapC (c-loc-wr (thr s) (mem s) (ctx s) u t (≢-sym ne) y a w x pt)
commute s t u ne (wr a w x) (rd b h) pt pu = swapC (c-rd-wr (thr s) (mem s) (ctx s) u t (≢-sym ne) b h a w x pu pt)
commute s t u ne (wr a w x) (wr b v y) pt pu = c-wr-wr (thr s) (mem s) (ctx s) t u ne a w x b v y pt pu

------------------------------------------------------------------------
-- A detected race persists under steps of other threads and barriers.

bad-go : ∀ s t kt u ku → u ≢ t → badAct u ku (ctx s) ≡ true → badAct u ku (ctx (go t kt s)) ≡ true
bad-go s t (loc x)    u ku ne p = p
bad-go s t blk        u ku ne p = p
bad-go s t (rd a g)   u (loc y) ne p = p
bad-go s t (rd a g)   u blk ne p = p
bad-go s t (rd a g)   u (rd b h) ne p with a ≟ b
... | yes refl = trans (cong (rdBad u) (lookup∘update a (ctx s) _)) p
... | no ab    = trans (cong (rdBad u) (lookup∘update′ (≢-sym ab) (ctx s) _)) p
bad-go s t (rd a g)   u (wr b v y) ne p with a ≟ b
... | yes refl = trans (cong (wrBad u) (lookup∘update a (ctx s) _))
                   (∨-trueʳ (lookup (wU (lookup (ctx s) a)) u)
                     (anyAt-upd u (rU (lookup (ctx s) a)) t (allBut-other t u ne)))
... | no ab    = trans (cong (wrBad u) (lookup∘update′ (≢-sym ab) (ctx s) _)) p
bad-go s t (wr a w x) u (loc y) ne p = p
bad-go s t (wr a w x) u blk ne p = p
bad-go s t (wr a w x) u (rd b h) ne p with a ≟ b
... | yes refl = trans (cong (rdBad u) (lookup∘update a (ctx s) _)) (allBut-other t u ne)
... | no ab    = trans (cong (rdBad u) (lookup∘update′ (≢-sym ab) (ctx s) _)) p
bad-go s t (wr a w x) u (wr b v y) ne p with a ≟ b
... | yes refl = trans (cong (wrBad u) (lookup∘update a (ctx s) _))
                   (∨-trueˡ (anyAt u (rU (lookup (ctx s) a))) (allBut-other t u ne))
... | no ab    = trans (cong (wrBad u) (lookup∘update′ (≢-sym ab) (ctx s) _)) p

bad-sync : ∀ S P t k (cs : Vec ACtx M) → lookup P t ≡ false →
           badAct t k cs ≡ true → badAct t k (map (syncA S P) cs) ≡ true
bad-sync S P t (loc x) cs q p = p
bad-sync S P t blk cs q p = p
bad-sync S P t (rd a g) cs q p =
  trans (cong (rdBad t) (lookup-map a (syncA S P) cs)) (bar-keeps S P (wU (lookup cs a)) t p q)
bad-sync S P t (wr a w x) cs q p with bcase (lookup (wU (lookup cs a)) t)
... | inj₁ r = trans (cong (wrBad t) (lookup-map a (syncA S P) cs))
                 (∨-trueˡ (anyAt t (map (bar S P) (rU (lookup cs a)))) (bar-keeps S P (wU (lookup cs a)) t r q))
... | inj₂ r rewrite r =
  trans (cong (wrBad t) (lookup-map a (syncA S P) cs))
    (∨-trueʳ (lookup (bar S P (wU (lookup cs a))) t) (anyAt-bar-true S P t (rU (lookup cs a)) q p))

ok-sync : ∀ S P t k (cs : Vec ACtx M) → badAct t k cs ≡ false → badAct t k (map (syncA S P) cs) ≡ false
ok-sync S P t (loc x) cs p = p
ok-sync S P t blk cs p = p
ok-sync S P t (rd a g) cs p =
  trans (cong (rdBad t) (lookup-map a (syncA S P) cs)) (bar-false S P (wU (lookup cs a)) t p)
ok-sync S P t (wr a w x) cs p with ∨-false {lookup (wU (lookup cs a)) t} p
... | p₁ , p₂ =
  trans (cong (wrBad t) (lookup-map a (syncA S P) cs))
    (trans (cong (_∨ anyAt t (map (bar S P) (rU (lookup cs a)))) (bar-false S P (wU (lookup cs a)) t p₁))
           (anyAt-bar-false S P t (rU (lookup cs a)) p₂))

------------------------------------------------------------------------
-- barriers commute with local steps of non-participants, and with
-- barriers over disjoint sets

syncA-rdUpd : ∀ S P t c → lookup S t ≡ false → syncA S P (rdUpd t c) ≡ rdUpd t (syncA S P c)
syncA-rdUpd S P t c q =
  cong (actx _) (trans (map-[]≔ (bar S P) (rU c) t) (cong (map (bar S P) (rU c) [ t ]≔_) (bar-allBut S P t q)))

syncA-wrUpd : ∀ S P t c → lookup S t ≡ false → syncA S P (wrUpd t c) ≡ wrUpd t (syncA S P c)
syncA-wrUpd S P t c q = cong (λ z → actx z (map (bar S P) (rU c))) (bar-allBut S P t q)

ctx-sync-upd : ∀ S P (cs : Vec ACtx M) a (f : ACtx → ACtx) → (∀ c → syncA S P (f c) ≡ f (syncA S P c)) →
  map (syncA S P) (cs [ a ]≔ f (lookup cs a)) ≡ map (syncA S P) cs [ a ]≔ f (lookup (map (syncA S P) cs) a)
ctx-sync-upd S P cs a f e =
  trans (map-[]≔ (syncA S P) cs a)
    (cong (map (syncA S P) cs [ a ]≔_) (trans (e (lookup cs a)) (cong f (sym (lookup-map a (syncA S P) cs)))))

sync-go : ∀ S s t k → lookup S t ≡ false → doSync S (go t k s) ≡ go t k (doSync S s)
sync-go S s t (loc x) q =
  st≡ (popAll-upd S (thr s) t x q) refl (cong (λ P → map (syncA S P) (ctx s)) (active-upd S (thr s) t x q))
sync-go S s t (rd a g) q =
  st≡ (popAll-upd S (thr s) t _ q) refl
      (trans (cong (λ P → map (syncA S P) (ctx s [ a ]≔ rdUpd t (lookup (ctx s) a))) (active-upd S (thr s) t _ q))
             (ctx-sync-upd S (active S (thr s)) (ctx s) a (rdUpd t) (λ c → syncA-rdUpd S _ t c q)))
sync-go S s t (wr a w x) q =
  st≡ (popAll-upd S (thr s) t x q) refl
      (trans (cong (λ P → map (syncA S P) (ctx s [ a ]≔ wrUpd t (lookup (ctx s) a))) (active-upd S (thr s) t x q))
             (ctx-sync-upd S (active S (thr s)) (ctx s) a (wrUpd t) (λ c → syncA-wrUpd S _ t c q)))
sync-go S s t blk q = refl

map-comm : ∀ {X : Set} {k} (f g : X → X) → (∀ x → f (g x) ≡ g (f x)) → (xs : Vec X k) →
           map f (map g xs) ≡ map g (map f xs)
map-comm f g e []       = refl
map-comm f g e (x ∷ xs) = cong₂ _∷_ (e x) (map-comm f g e xs)

syncA-comm : ∀ S P S' P' c → Disjoint S P' → Disjoint S' P →
             syncA S P (syncA S' P' c) ≡ syncA S' P' (syncA S P c)
syncA-comm S P S' P' c d d' =
  cong₂ actx (bar-comm S P S' P' (wU c) d d')
             (map-comm (bar S P) (bar S' P') (λ U → bar-comm S P S' P' U d d') (rU c))

-- two barriers that share only exited threads commute
sync-sync : ∀ S S' s →
  (∀ i → lookup S i ≡ true → lookup S' i ≡ true → prog (lookup (thr s) i) ≡ []) →
  Disjoint S (active S' (thr s)) → Disjoint S' (active S (thr s)) →
  doSync S (doSync S' s) ≡ doSync S' (doSync S s)
sync-sync S S' s ov d d' =
  st≡ (popAll-comm S S' (thr s)) refl
      (trans (cong (λ P → map (syncA S P) (map (syncA S' (active S' (thr s))) (ctx s)))
                   (active-popAll S S' (thr s) ov))
      (trans (map-comm (syncA S (active S (thr s))) (syncA S' (active S' (thr s)))
                       (λ c → syncA-comm S _ S' _ c d d') (ctx s))
             (cong (λ P → map (syncA S' P) (map (syncA S (active S (thr s))) (ctx s)))
                   (sym (active-popAll S' S (thr s) (λ i p q → ov i q p))))))

------------------------------------------------------------------------
-- The diamond

swapJ : ∀ {b c} → Joinable? b c → Joinable? c b
swapJ (d , x , y) = d , y , x

Enabled : Mask N → State → Set
Enabled S s = ∀ i → lookup S i ≡ true → Ready S (lookup (thr s) i)

go-go : ∀ s t u {kt ku} →
        act (lookup (thr s) t) ≡ kt → Live kt → badAct t kt (ctx s) ≡ false →
        act (lookup (thr s) u) ≡ ku → Live ku → badAct u ku (ctx s) ≡ false →
        Joinable? (ok (go t kt s)) (ok (go u ku s))
go-go s t u {kt} {ku} pt lt bt pu lu bu with t ≟ u
... | yes refl = _ , inj₁ refl , inj₁ (cong (λ k → ok (go t k s)) (trans (sym pu) pt))
... | no ne with commute s t u ne lt lu bt bu
...   | both-ok b₁ b₂ e =
  ok (go u ku (go t kt s)) ,
  inj₂ (s-go u (trans (cong act (thr-go s t kt u (≢-sym ne))) pu) lu b₁) ,
  inj₂ (subst (λ z → ok (go u ku s) ⟶ ok z) (sym e)
              (s-go t (trans (cong act (thr-go s u ku t ne)) pt) lt b₂))
...   | both-bad b₁ b₂ =
  err ,
  inj₂ (s-bad u (trans (cong act (thr-go s t kt u (≢-sym ne))) pu) b₁) ,
  inj₂ (s-bad t (trans (cong act (thr-go s u ku t ne)) pt) b₂)

go-bad : ∀ s t u {kt ku} →
         act (lookup (thr s) t) ≡ kt → badAct t kt (ctx s) ≡ false →
         act (lookup (thr s) u) ≡ ku → badAct u ku (ctx s) ≡ true →
         Joinable? (ok (go t kt s)) err
go-bad s t u {kt} {ku} pt bt pu bu with t ≟ u
... | yes refl = ⊥-elim (t≢f (trans (sym bu) (trans (cong (λ k → badAct t k (ctx s)) (trans (sym pu) pt)) bt)))
... | no ne =
  err , inj₂ (s-bad u (trans (cong act (thr-go s t kt u (≢-sym ne))) pu) (bad-go s t kt u ku (≢-sym ne) bu)) ,
  inj₁ refl

go-sync : ∀ s t {kt} → act (lookup (thr s) t) ≡ kt → Live kt → badAct t kt (ctx s) ≡ false →
          ∀ S t₀ → lookup S t₀ ≡ true → AtSync S (lookup (thr s) t₀) → Enabled S s →
          Joinable? (ok (go t kt s)) (ok (doSync S s))
go-sync s t {kt} pt lt bt S t₀ p₀ a₀ en =
  ok (doSync S (go t kt s)) ,
  inj₂ (s-sync S t₀ p₀ (subst (AtSync S) (sym (thr-go s t kt t₀ (ne t₀ p₀))) a₀) en') ,
  inj₂ (subst (λ z → ok (doSync S s) ⟶ ok z) (sym (sync-go S s t kt q))
              (s-go t (trans (cong act (lookup-popAll-false S (thr s) t q)) pt) lt
                      (ok-sync S (active S (thr s)) t kt (ctx s) bt)))
  where
    q : lookup S t ≡ false
    q = not-in-barrier s S t en pt lt
    ne : ∀ i → lookup S i ≡ true → i ≢ t
    ne i p e = t≢f (trans (sym p) (trans (cong (lookup S) e) q))
    en' : Enabled S (go t kt s)
    en' i p = subst (Ready S) (sym (thr-go s t kt i (ne i p))) (en i p)

bad-sync' : ∀ s t {k} → act (lookup (thr s) t) ≡ k → badAct t k (ctx s) ≡ true →
            ∀ S t₀ → lookup S t₀ ≡ true → AtSync S (lookup (thr s) t₀) → Enabled S s →
            Joinable? err (ok (doSync S s))
bad-sync' s t {k} pt bt S t₀ p₀ a₀ en =
  err , inj₁ refl ,
  inj₂ (s-bad t (trans (cong act (lookup-popAll-false S (thr s) t q)) pt)
                (bad-sync S (active S (thr s)) t k (ctx s) (active-false S (thr s) t q) bt))
  where
    q : lookup S t ≡ false
    q = not-in-barrier s S t en pt (bad→live t k (ctx s) bt)

exited-overlap : ∀ (S S' : Mask N) th → S ≢ S' → Ready S th → Ready S' th → prog th ≡ []
exited-overlap S S' th ne (inj₁ (is , e)) (inj₁ (is' , e')) = ⊥-elim (ne (syncInj (trans (sym e) e')))
exited-overlap S S' th ne (inj₁ (is , e)) (inj₂ e') with trans (sym e) e'
... | ()
exited-overlap S S' th ne (inj₂ e) r' = e

running-exited : ∀ th → prog th ≡ [] → running th ≡ false
running-exited (thread rs []) e = refl

atSync-running : ∀ {S} th → AtSync S th → running th ≡ true
atSync-running (thread rs ._) (is , refl) = refl

sync-sync' : ∀ s S t₀ → lookup S t₀ ≡ true → AtSync S (lookup (thr s) t₀) → Enabled S s →
             ∀ S' t₀' → lookup S' t₀' ≡ true → AtSync S' (lookup (thr s) t₀') → Enabled S' s →
             Joinable? (ok (doSync S s)) (ok (doSync S' s))
sync-sync' s S t₀ p₀ a₀ en S' t₀' p₀' a₀' en' with ≡-dec BoolP._≟_ S S'
... | yes refl = _ , inj₁ refl , inj₁ refl
... | no ne =
  ok (doSync S' (doSync S s)) ,
  inj₂ (s-sync S' t₀' p₀' (keep S' S t₀' a₀' (λ q → ov t₀' q p₀')) en₂) ,
  inj₂ (subst (λ z → ok (doSync S' s) ⟶ ok z) (sync-sync S S' s ov d d')
              (s-sync S t₀ p₀ (keep S S' t₀ a₀ (λ q → ov t₀ p₀ q)) en₁))
  where
    ov : ∀ i → lookup S i ≡ true → lookup S' i ≡ true → prog (lookup (thr s) i) ≡ []
    ov i p q = exited-overlap S S' (lookup (thr s) i) ne (en i p) (en' i q)
    -- the other barrier does not touch an active participant
    keep : ∀ A B i → AtSync A (lookup (thr s) i) → (lookup B i ≡ true → prog (lookup (thr s) i) ≡ []) →
           AtSync A (lookup (popAll B (thr s)) i)
    keep A B i a h with bcase (lookup B i)
    ... | inj₂ q = subst (AtSync A) (sym (lookup-popAll-false B (thr s) i q)) a
    ... | inj₁ q with trans (sym (proj₂ a)) (h q)
    ...   | ()
    inactive : ∀ A B i → lookup A i ≡ true → (lookup B i ≡ true → prog (lookup (thr s) i) ≡ []) →
               lookup (active B (thr s)) i ≡ false
    inactive A B i p h with bcase (lookup B i)
    ... | inj₂ q = active-false B (thr s) i q
    ... | inj₁ q = trans (lookup-active B (thr s) i)
                         (trans (cong (lookup B i ∧_) (running-exited _ (h q))) (BoolP.∧-zeroʳ (lookup B i)))
    d : Disjoint S (active S' (thr s))
    d i p = inactive S S' i p (ov i p)
    d' : Disjoint S' (active S (thr s))
    d' i p = inactive S' S i p (λ q → ov i q p)
    en₁ : Enabled S (doSync S' s)
    en₁ i p = ready-popAll S S' (thr s) i (en i p) (ov i p)
    en₂ : Enabled S' (doSync S s)
    en₂ i p = ready-popAll S' S (thr s) i (en' i p) (λ q → ov i q p)

diamond : Diamond?
diamond (s-go {s} t pt lt bt) (s-go u pu lu bu) = go-go s t u pt lt bt pu lu bu
diamond (s-go {s} t pt lt bt) (s-bad u pu bu)   = go-bad s t u pt bt pu bu
diamond (s-go {s} t pt lt bt) (s-sync S t₀ p₀ a₀ en) = go-sync s t pt lt bt S t₀ p₀ a₀ en
diamond (s-bad {s} t pt bt) (s-go u pu lu bu)   = swapJ (go-bad s u t pu bu pt bt)
diamond (s-bad t pt bt) (s-bad u pu bu)         = err , inj₁ refl , inj₁ refl
diamond (s-bad {s} t pt bt) (s-sync S t₀ p₀ a₀ en) = bad-sync' s t pt bt S t₀ p₀ a₀ en
diamond (s-sync {s} S t₀ p₀ a₀ en) (s-go u pu lu bu) = swapJ (go-sync s u pu lu bu S t₀ p₀ a₀ en)
diamond (s-sync {s} S t₀ p₀ a₀ en) (s-bad u pu bu) = swapJ (bad-sync' s u pu bu S t₀ p₀ a₀ en)
diamond (s-sync {s} S t₀ p₀ a₀ en) (s-sync S' t₀' p₀' a₀' en') =
  sync-sync' s S t₀ p₀ a₀ en S' t₀' p₀' a₀' en'

-- Confluence of the checked semantics (Volta, Lemma 1)
checked-confluent : Confluent
checked-confluent = confluence diamond
