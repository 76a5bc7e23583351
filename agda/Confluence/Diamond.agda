{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The reflexive closure of the checked step has the diamond property
-- (with propositional equality of configurations: states are
-- first-order vectors, so no setoid is needed), hence the checked
-- semantics is confluent.
------------------------------------------------------------------------
open import Data.Nat using (ℕ)

module Confluence.Diamond (Val : Set) (_⊕_ : Val → Val → Val) (N M R : ℕ) where

open import Confluence.Lang Val _⊕_ N M R
open import Confluence.Abstract _⟶_ public

open import Data.Bool using (Bool; true; false; _∨_; if_then_else_)
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
not-in-barrier : ∀ s S t {k} → (∀ i → lookup S i ≡ true → AtSync S (lookup (thr s) i)) →
                 act (lookup (thr s) t) ≡ k → Live k → lookup S t ≡ false
not-in-barrier s S t en p l with bcase (lookup S t)
... | inj₂ q = q
... | inj₁ q = ⊥-elim (live≢blk l (trans (sym p) (atSync-blk _ (en t q))))

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

popAll-comm : ∀ {n} (S S' : Mask n) ths → Disjoint S S' →
              popAll S (popAll S' ths) ≡ popAll S' (popAll S ths)
popAll-comm [] [] [] d = refl
popAll-comm (false ∷ S) (false ∷ S') (th ∷ ths) d = cong (th ∷_) (popAll-comm S S' ths (λ i → d (suc i)))
popAll-comm (false ∷ S) (true ∷ S') (th ∷ ths) d = cong (pop th ∷_) (popAll-comm S S' ths (λ i → d (suc i)))
popAll-comm (true ∷ S) (false ∷ S') (th ∷ ths) d = cong (pop th ∷_) (popAll-comm S S' ths (λ i → d (suc i)))
popAll-comm (true ∷ S) (true ∷ S') (th ∷ ths) d with d zero refl
... | ()

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

bad-sync : ∀ S t k (cs : Vec ACtx M) → lookup S t ≡ false →
           badAct t k cs ≡ true → badAct t k (map (syncA S) cs) ≡ true
bad-sync S t (loc x) cs q p = p
bad-sync S t blk cs q p = p
bad-sync S t (rd a g) cs q p =
  trans (cong (rdBad t) (lookup-map a (syncA S) cs)) (bar-keeps S (wU (lookup cs a)) t p q)
bad-sync S t (wr a w x) cs q p with bcase (lookup (wU (lookup cs a)) t)
... | inj₁ r = trans (cong (wrBad t) (lookup-map a (syncA S) cs))
                 (∨-trueˡ (anyAt t (map (bar S) (rU (lookup cs a)))) (bar-keeps S (wU (lookup cs a)) t r q))
... | inj₂ r rewrite r =
  trans (cong (wrBad t) (lookup-map a (syncA S) cs))
    (∨-trueʳ (lookup (bar S (wU (lookup cs a))) t) (anyAt-bar-true S t (rU (lookup cs a)) q p))

ok-sync : ∀ S t k (cs : Vec ACtx M) → badAct t k cs ≡ false → badAct t k (map (syncA S) cs) ≡ false
ok-sync S t (loc x) cs p = p
ok-sync S t blk cs p = p
ok-sync S t (rd a g) cs p =
  trans (cong (rdBad t) (lookup-map a (syncA S) cs)) (bar-false S (wU (lookup cs a)) t p)
ok-sync S t (wr a w x) cs p with ∨-false {lookup (wU (lookup cs a)) t} p
... | p₁ , p₂ =
  trans (cong (wrBad t) (lookup-map a (syncA S) cs))
    (trans (cong (_∨ anyAt t (map (bar S) (rU (lookup cs a)))) (bar-false S (wU (lookup cs a)) t p₁))
           (anyAt-bar-false S t (rU (lookup cs a)) p₂))

------------------------------------------------------------------------
-- barriers commute with local steps of non-participants, and with
-- barriers over disjoint sets

syncA-rdUpd : ∀ S t c → lookup S t ≡ false → syncA S (rdUpd t c) ≡ rdUpd t (syncA S c)
syncA-rdUpd S t c q =
  cong (actx _) (trans (map-[]≔ (bar S) (rU c) t) (cong (map (bar S) (rU c) [ t ]≔_) (bar-allBut S t q)))

syncA-wrUpd : ∀ S t c → lookup S t ≡ false → syncA S (wrUpd t c) ≡ wrUpd t (syncA S c)
syncA-wrUpd S t c q = cong (λ z → actx z (map (bar S) (rU c))) (bar-allBut S t q)

ctx-sync-upd : ∀ S (cs : Vec ACtx M) a (f : ACtx → ACtx) → (∀ c → syncA S (f c) ≡ f (syncA S c)) →
  map (syncA S) (cs [ a ]≔ f (lookup cs a)) ≡ map (syncA S) cs [ a ]≔ f (lookup (map (syncA S) cs) a)
ctx-sync-upd S cs a f e =
  trans (map-[]≔ (syncA S) cs a)
    (cong (map (syncA S) cs [ a ]≔_) (trans (e (lookup cs a)) (cong f (sym (lookup-map a (syncA S) cs)))))

sync-go : ∀ S s t k → lookup S t ≡ false → doSync S (go t k s) ≡ go t k (doSync S s)
sync-go S s t (loc x) q = st≡ (popAll-upd S (thr s) t x q) refl refl
sync-go S s t (rd a g) q =
  st≡ (popAll-upd S (thr s) t _ q) refl (ctx-sync-upd S (ctx s) a (rdUpd t) (λ c → syncA-rdUpd S t c q))
sync-go S s t (wr a w x) q =
  st≡ (popAll-upd S (thr s) t x q) refl (ctx-sync-upd S (ctx s) a (wrUpd t) (λ c → syncA-wrUpd S t c q))
sync-go S s t blk q = refl

map-comm : ∀ {X : Set} {k} (f g : X → X) → (∀ x → f (g x) ≡ g (f x)) → (xs : Vec X k) →
           map f (map g xs) ≡ map g (map f xs)
map-comm f g e []       = refl
map-comm f g e (x ∷ xs) = cong₂ _∷_ (e x) (map-comm f g e xs)

syncA-comm : ∀ S S' c → Disjoint S S' → syncA S (syncA S' c) ≡ syncA S' (syncA S c)
syncA-comm S S' c d =
  cong₂ actx (bar-comm S S' (wU c) d) (map-comm (bar S) (bar S') (λ U → bar-comm S S' U d) (rU c))

sync-sync : ∀ S S' s → Disjoint S S' → doSync S (doSync S' s) ≡ doSync S' (doSync S s)
sync-sync S S' s d =
  st≡ (popAll-comm S S' (thr s) d) refl
      (map-comm (syncA S) (syncA S') (λ c → syncA-comm S S' c d) (ctx s))

------------------------------------------------------------------------
-- The diamond

swapJ : ∀ {b c} → Joinable? b c → Joinable? c b
swapJ (d , x , y) = d , y , x

Enabled : Mask N → State → Set
Enabled S s = ∀ i → lookup S i ≡ true → AtSync S (lookup (thr s) i)

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
          ∀ S t₀ → lookup S t₀ ≡ true → Enabled S s →
          Joinable? (ok (go t kt s)) (ok (doSync S s))
go-sync s t {kt} pt lt bt S t₀ p₀ en =
  ok (doSync S (go t kt s)) ,
  inj₂ (s-sync S t₀ p₀ en') ,
  inj₂ (subst (λ z → ok (doSync S s) ⟶ ok z) (sym (sync-go S s t kt q))
              (s-go t (trans (cong act (lookup-popAll-false S (thr s) t q)) pt) lt
                      (ok-sync S t kt (ctx s) bt)))
  where
    q : lookup S t ≡ false
    q = not-in-barrier s S t en pt lt
    en' : Enabled S (go t kt s)
    en' i p = subst (AtSync S) (sym (thr-go s t kt i (λ e → t≢f (trans (sym p) (trans (cong (lookup S) e) q)))))
                    (en i p)

bad-sync' : ∀ s t {k} → act (lookup (thr s) t) ≡ k → badAct t k (ctx s) ≡ true →
            ∀ S t₀ → lookup S t₀ ≡ true → Enabled S s → Joinable? err (ok (doSync S s))
bad-sync' s t {k} pt bt S t₀ p₀ en =
  err , inj₁ refl ,
  inj₂ (s-bad t (trans (cong act (lookup-popAll-false S (thr s) t q)) pt) (bad-sync S t k (ctx s) q bt))
  where
    q : lookup S t ≡ false
    q = not-in-barrier s S t en pt (bad→live t k (ctx s) bt)

sync-sync' : ∀ s S t₀ → lookup S t₀ ≡ true → Enabled S s →
             ∀ S' t₀' → lookup S' t₀' ≡ true → Enabled S' s →
             Joinable? (ok (doSync S s)) (ok (doSync S' s))
sync-sync' s S t₀ p₀ en S' t₀' p₀' en' with ≡-dec BoolP._≟_ S S'
... | yes refl = _ , inj₁ refl , inj₁ refl
... | no ne =
  ok (doSync S' (doSync S s)) ,
  inj₂ (s-sync S' t₀' p₀' en₂) ,
  inj₂ (subst (λ z → ok (doSync S' s) ⟶ ok z) (sync-sync S S' s d) (s-sync S t₀ p₀ en₁))
  where
    d : Disjoint S S'
    d i p with bcase (lookup S' i)
    ... | inj₂ q = q
    ... | inj₁ q = ⊥-elim (ne (syncInj (trans (sym (proj₂ (en i p))) (proj₂ (en' i q)))))
    en₁ : Enabled S (doSync S' s)
    en₁ i p = subst (AtSync S) (sym (lookup-popAll-false S' (thr s) i (d i p))) (en i p)
    en₂ : Enabled S' (doSync S s)
    en₂ i p = subst (AtSync S') (sym (lookup-popAll-false S (thr s) i (disj-sym S S' d i p))) (en' i p)

diamond : Diamond?
diamond (s-go {s} t pt lt bt) (s-go u pu lu bu) = go-go s t u pt lt bt pu lu bu
diamond (s-go {s} t pt lt bt) (s-bad u pu bu)   = go-bad s t u pt bt pu bu
diamond (s-go {s} t pt lt bt) (s-sync S t₀ p₀ en) = go-sync s t pt lt bt S t₀ p₀ en
diamond (s-bad {s} t pt bt) (s-go u pu lu bu)   = swapJ (go-bad s u t pu bu pt bt)
diamond (s-bad t pt bt) (s-bad u pu bu)         = err , inj₁ refl , inj₁ refl
diamond (s-bad {s} t pt bt) (s-sync S t₀ p₀ en) = bad-sync' s t pt bt S t₀ p₀ en
diamond (s-sync {s} S t₀ p₀ en) (s-go u pu lu bu) = swapJ (go-sync s u pu lu bu S t₀ p₀ en)
diamond (s-sync {s} S t₀ p₀ en) (s-bad u pu bu) = swapJ (bad-sync' s u pu bu S t₀ p₀ en)
diamond (s-sync {s} S t₀ p₀ en) (s-sync S' t₀' p₀' en') = sync-sync' s S t₀ p₀ en S' t₀' p₀' en'

-- Confluence of the checked semantics (Volta, Lemma 1)
checked-confluent : Confluent
checked-confluent = confluence diamond
