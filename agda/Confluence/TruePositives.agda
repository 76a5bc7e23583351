{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- (ii) Every reported race is real (Volta, Theorem 6, true positives).
--
-- If the checked semantics, started with the empty race-tracking
-- context, reaches err, then the UNCHECKED semantics reaches a state in
-- which two different threads are both about to access the same
-- address, at least one of them writing (`RaceState`).  From such a
-- state both orders of the two accesses are possible, one directly
-- after the other (`race-both-orders`): Volta's definition of a race.
--
-- Proof: an invariant of reachable checked states.  For every access
-- record (the last write to a, or the last read of a by r) whose set K
-- of threads not yet ordered after it contains some thread, there is an
-- unchecked state f reachable from the start in which the thread x that
-- made the access is still about to make it, x ∉ K, and every thread in
-- K has the same remaining program in f as in the current state (f is
-- the run in which x was frozen just before its access and every step
-- ordered after that access was left out).
------------------------------------------------------------------------
open import Data.Nat using (ℕ)

module Confluence.TruePositives (Val : Set) (Op : Set) (⟦_⟧ₒ : Op → Val → Val → Val) (N M R : ℕ) where

open import Confluence.Lang Val Op ⟦_⟧ₒ N M R
open import Confluence.Diamond Val Op ⟦_⟧ₒ N M R
open import Confluence.Corollaries Val Op ⟦_⟧ₒ N M R
open U using () renaming (_⟶*_ to _⟶u*_; ε to εu; _◅_ to _◅u_; _◅◅_ to _◅◅u_)

open import Data.Bool using (Bool; true; false; _∧_; _∨_; not; if_then_else_)
open import Data.Fin using (Fin; zero; suc)
open import Data.Fin.Properties using (_≟_)
open import Data.List using (List; []; _∷_)
open import Data.Maybe using (Maybe; nothing; just)
open import Data.Vec using (Vec; []; _∷_; lookup; _[_]≔_; map; replicate)
open import Data.Vec.Properties using (lookup∘update; lookup∘update′; lookup-map; lookup-replicate)
open import Data.Product using (∃; _×_; _,_; proj₁; proj₂)
open import Data.Sum using (_⊎_; inj₁; inj₂)
open import Data.Unit using (⊤; tt)
open import Data.Empty using (⊥; ⊥-elim)
open import Relation.Nullary using (¬_; yes; no)
open import Relation.Binary.PropositionalEquality

------------------------------------------------------------------------
-- Races in the unchecked semantics

data Kind : Set where
  rdK wrK : Kind

AccessAt : Kind → Addr → Thread → Set
AccessAt rdK a th = ∃ λ r → ∃ λ is → prog th ≡ load r a ∷ is
AccessAt wrK a th = ∃ λ r → ∃ λ is → prog th ≡ store a r ∷ is

Conflicting : Kind → Kind → Set
Conflicting rdK rdK = ⊥
Conflicting rdK wrK = ⊤
Conflicting wrK rdK = ⊤
Conflicting wrK wrK = ⊤

-- two different threads about to access the same address, one writing
RaceState : UState → Set
RaceState u = ∃ λ t → ∃ λ x → ∃ λ a → ∃ λ κt → ∃ λ κx →
  t ≢ x × Conflicting κt κx ×
  AccessAt κt a (lookup (uthr u) t) × AccessAt κx a (lookup (uthr u) x)

-- a step of one given thread
ThreadStep : Tid → UState → UState → Set
ThreadStep t u u' = ∃ λ k → act (lookup (uthr u) t) ≡ k × Live k × u' ≡ ugo t k u

threadStep→step : ∀ {t u u'} → ThreadStep t u u' → u ⟶u u'
threadStep→step {t} {u} (k , p , l , refl) = u-go t p l

------------------------------------------------------------------------
-- small lemmas

tl : List Instr → List Instr
tl []       = []
tl (i ∷ is) = is

acc-prog : ∀ κ a {th th'} → prog th ≡ prog th' → AccessAt κ a th' → AccessAt κ a th
acc-prog rdK a e (r , is , p) = r , is , trans e p
acc-prog wrK a e (r , is , p) = r , is , trans e p

act-rd : ∀ th {a g} → act th ≡ rd a g → AccessAt rdK a th
act-rd (thread rs [])                 ()
act-rd (thread rs (const r v ∷ is))   ()
act-rd (thread rs (binop o r b c ∷ is)) ()
act-rd (thread rs (load r a ∷ is))    refl = r , is , refl
act-rd (thread rs (store a r ∷ is))   ()
act-rd (thread rs (sync S ∷ is))      ()

act-wr : ∀ th {a w x} → act th ≡ wr a w x → AccessAt wrK a th
act-wr (thread rs [])                 ()
act-wr (thread rs (const r v ∷ is))   ()
act-wr (thread rs (binop o r b c ∷ is)) ()
act-wr (thread rs (load r a ∷ is))    ()
act-wr (thread rs (store a r ∷ is))   refl = r , is , refl
act-wr (thread rs (sync S ∷ is))      ()

acc-live : ∀ κ a th → AccessAt κ a th → Live (act th)
acc-live rdK a (thread rs ._) (r , is , refl) = rd a _
acc-live wrK a (thread rs ._) (r , is , refl) = wr a _ _

live-prog : ∀ rs rs' p → Live (act (thread rs' p)) → Live (act (thread rs p))
live-prog rs rs' []                 ()
live-prog rs rs' (const r v ∷ is)   l = loc _
live-prog rs rs' (binop o r a b ∷ is) l = loc _
live-prog rs rs' (load r a ∷ is)    l = rd a _
live-prog rs rs' (store a r ∷ is)   l = wr a _ _
live-prog rs rs' (sync S ∷ is)      ()

live-same : ∀ th th' → prog th ≡ prog th' → Live (act th') → Live (act th)
live-same (thread rs p) (thread rs' .p) refl l = live-prog rs rs' p l

next-tail : ∀ th {k} → act th ≡ k → Live k → ∀ m → prog (nextT k m th) ≡ tl (prog th)
next-tail (thread rs [])                 refl ()
next-tail (thread rs (const r v ∷ is))   refl l m = refl
next-tail (thread rs (binop o r a b ∷ is)) refl l m = refl
next-tail (thread rs (load r a ∷ is))    refl l m = refl
next-tail (thread rs (store a r ∷ is))   refl l m = refl
next-tail (thread rs (sync S ∷ is))      refl ()

pop-tail : ∀ th → prog (pop th) ≡ tl (prog th)
pop-tail (thread rs [])       = refl
pop-tail (thread rs (i ∷ is)) = refl

running-false : ∀ th → running th ≡ false → prog th ≡ []
running-false (thread rs [])       e = refl
running-false (thread rs (i ∷ is)) ()

-- a thread that is not an active participant keeps its program
popAll-inactive : ∀ (S : Mask N) ths z → lookup (active S ths) z ≡ false →
                  prog (lookup (popAll S ths) z) ≡ prog (lookup ths z)
popAll-inactive S ths z q with bcase (lookup S z)
... | inj₂ r = cong prog (lookup-popAll-false S ths z r)
... | inj₁ r =
  trans (cong prog (lookup-popAll S ths z))
  (trans (cong (λ b → prog (if b then pop (lookup ths z) else lookup ths z)) r)
  (trans (pop-exited (lookup ths z) ex) (sym ex)))
  where
    ex : prog (lookup ths z) ≡ []
    ex = running-false (lookup ths z) (trans (sym (cong (_∧ running (lookup ths z)) r))
                                             (trans (sym (lookup-active S ths z)) q))

ready-prog : ∀ {S th th'} → prog th ≡ prog th' → Ready S th' → Ready S th
ready-prog e (inj₁ (is , p)) = inj₁ (is , trans e p)
ready-prog e (inj₂ p)        = inj₂ (trans e p)

prog-popAll : ∀ {n} (S : Mask n) ths ths' z → prog (lookup ths z) ≡ prog (lookup ths' z) →
              prog (lookup (popAll S ths) z) ≡ prog (lookup (popAll S ths') z)
prog-popAll S ths ths' z e
  rewrite lookup-popAll S ths z | lookup-popAll S ths' z with lookup S z
... | true  = trans (pop-tail (lookup ths z)) (trans (cong tl e) (sym (pop-tail (lookup ths' z))))
... | false = e

allBut-self : ∀ {n} (t : Fin n) → lookup (allBut t) t ≡ false
allBut-self zero    = refl
allBut-self (suc t) = allBut-self t

meets-false-sub : ∀ {n} (S K : Mask n) i → meets S K ≡ false → lookup S i ≡ true → lookup K i ≡ true
meets-false-sub (true  ∷ S) (true  ∷ K) zero    m p = refl
meets-false-sub (true  ∷ S) (false ∷ K) zero    () p
meets-false-sub (false ∷ S) (k ∷ K)     zero    m ()
meets-false-sub (s ∷ S)     (k ∷ K)     (suc i) m p =
  meets-false-sub S K i (proj₂ (∨-false {s ∧ not k} m)) p

∖-false : ∀ {n} (K S : Mask n) x → lookup K x ≡ false → lookup (K ∖ S) x ≡ false
∖-false K S x p rewrite lookup-∖ K S x | p = refl

∖-true : ∀ {n} (K S : Mask n) z → lookup (K ∖ S) z ≡ true → lookup K z ≡ true × lookup S z ≡ false
∖-true K S z p rewrite lookup-∖ K S z with lookup K z | lookup S z
... | true  | false = refl , refl
... | true  | true  = ⊥-elim (t≢f (sym p))
... | false | _     = ⊥-elim (t≢f (sym p))

anyAt-witness : ∀ {n k} t (ms : Vec (Mask n) k) → anyAt t ms ≡ true → ∃ λ r → lookup (lookup ms r) t ≡ true
anyAt-witness t (m ∷ ms) p with bcase (lookup m t)
... | inj₁ q = zero , q
... | inj₂ q rewrite q with anyAt-witness t ms p
...   | r , e = suc r , e

ugo-other : ∀ f y k x → x ≢ y → lookup (uthr (ugo y k f)) x ≡ lookup (uthr f) x
ugo-other f y k x ne = trans (cong (λ T → lookup T x) (ugo-thr f y k)) (lookup∘update′ ne (uthr f) _)

go-other : ∀ s y k x → x ≢ y → lookup (thr (go y k s)) x ≡ lookup (thr s) x
go-other s y k x ne = thr-go s y k x ne

------------------------------------------------------------------------
-- Access records and the invariant

-- nothing: the last write to the address; just r: the last read by r
Slot : Set
Slot = Maybe Tid

kindOf : Slot → Kind
kindOf nothing  = wrK
kindOf (just r) = rdK

rec : Vec ACtx M → Addr → Slot → Mask N
rec cs a nothing  = wU (lookup cs a)
rec cs a (just r) = lookup (rU (lookup cs a)) r

Sim : Mask N → UState → State → Set
Sim K f s = ∀ y → lookup K y ≡ true → prog (lookup (uthr f) y) ≡ prog (lookup (thr s) y)

Wit : UState → State → Kind → Addr → Mask N → Set
Wit u₀ s κ a K = ∃ λ f → ∃ λ x →
  (u₀ ⟶u* f) × AccessAt κ a (lookup (uthr f) x) × lookup K x ≡ false × Sim K f s

Inv : UState → State → Set
Inv u₀ s = ∀ a σ t → lookup (rec (ctx s) a σ) t ≡ true → Wit u₀ s (kindOf σ) a (rec (ctx s) a σ)

------------------------------------------------------------------------
-- How a local step changes a record

data RecStep (s s' : State) (y : Tid) (a : Addr) (σ : Slot) : Set where
  same : rec (ctx s') a σ ≡ rec (ctx s) a σ → RecStep s s' y a σ
  new  : rec (ctx s') a σ ≡ allBut y → AccessAt (kindOf σ) a (lookup (thr s) y) → RecStep s s' y a σ

rec-go : ∀ s y k → act (lookup (thr s) y) ≡ k → ∀ a σ → RecStep s (go y k s) y a σ
rec-go s y (loc x) p a σ = same refl
rec-go s y blk p a σ = same refl
rec-go s y (rd a' g) p a nothing with a' ≟ a
... | yes refl = same (cong wU (lookup∘update a (ctx s) _))
... | no ne    = same (cong wU (lookup∘update′ (λ e → ne (sym e)) (ctx s) _))
rec-go s y (rd a' g) p a (just r) with a' ≟ a
... | no ne = same (cong (λ c → lookup (rU c) r) (lookup∘update′ (λ e → ne (sym e)) (ctx s) _))
... | yes refl with r ≟ y
...   | yes refl = new (trans (cong (λ c → lookup (rU c) r) (lookup∘update a (ctx s) _))
                              (lookup∘update r (rU (lookup (ctx s) a)) (allBut r)))
                       (act-rd (lookup (thr s) r) p)
...   | no ne = same (trans (cong (λ c → lookup (rU c) r) (lookup∘update a (ctx s) _))
                            (lookup∘update′ ne (rU (lookup (ctx s) a)) (allBut y)))
rec-go s y (wr a' w x) p a nothing with a' ≟ a
... | yes refl = new (cong wU (lookup∘update a (ctx s) _)) (act-wr (lookup (thr s) y) p)
... | no ne    = same (cong wU (lookup∘update′ (λ e → ne (sym e)) (ctx s) _))
rec-go s y (wr a' w x) p a (just r) with a' ≟ a
... | yes refl = same (cong (λ c → lookup (rU c) r) (lookup∘update a (ctx s) _))
... | no ne    = same (cong (λ c → lookup (rU c) r) (lookup∘update′ (λ e → ne (sym e)) (ctx s) _))

rec-sync : ∀ S s a σ → rec (ctx (doSync S s)) a σ ≡ bar S (active S (thr s)) (rec (ctx s) a σ)
rec-sync S s a nothing  = cong wU (lookup-map a (syncA S (active S (thr s))) (ctx s))
rec-sync S s a (just r) =
  trans (cong (λ c → lookup (rU c) r) (lookup-map a (syncA S (active S (thr s))) (ctx s)))
        (lookup-map r (bar S (active S (thr s))) (rU (lookup (ctx s) a)))

------------------------------------------------------------------------
-- The invariant is preserved by race-free steps

-- a witness for the old record, moved along a local step of thread y
wit-go : ∀ {u₀ s y k κ a K} → act (lookup (thr s) y) ≡ k → Live k →
         Wit u₀ s κ a K → Wit u₀ (go y k s) κ a K
wit-go {u₀} {s} {y} {k} {κ} {a} {K} p l (f , x , rf , accx , xK , sim) with bcase (lookup K y)
... | inj₂ yK =
  f , x , rf , accx , xK ,
  λ z zK → trans (sim z zK) (sym (cong prog (go-other s y k z (λ e → t≢f (trans (sym zK) (trans (cong (lookup K) e) yK))))))
... | inj₁ yK =
  ugo y k' f , x , (rf ◅◅u (u-go y refl l' ◅u εu)) ,
  subst (AccessAt κ a) (sym (ugo-other f y k' x x≢y)) accx , xK , sim'
  where
    k' = act (lookup (uthr f) y)
    l' : Live k'
    l' = live-same (lookup (uthr f) y) (lookup (thr s) y) (sim y yK) (subst Live (sym p) l)
    x≢y : x ≢ y
    x≢y e = t≢f (trans (sym yK) (trans (cong (lookup K) (sym e)) xK))
    sim' : Sim K (ugo y k' f) (go y k s)
    sim' z zK with z ≟ y
    ... | yes refl =
      trans (cong (λ T → prog (lookup T z)) (ugo-thr f z k'))
      (trans (cong prog (lookup∘update z (uthr f) _))
      (trans (next-tail (lookup (uthr f) z) refl l' (umem f))
      (trans (cong tl (sim z zK))
      (trans (sym (next-tail (lookup (thr s) z) p l (mem s)))
      (sym (trans (cong (λ T → prog (lookup T z)) (go-thr s z k))
                  (cong prog (lookup∘update z (thr s) _))))))))
    ... | no ne =
      trans (cong prog (ugo-other f y k' z ne))
      (trans (sim z zK) (sym (cong prog (go-other s y k z ne))))

inv-go : ∀ {u₀ s y k} → Inv u₀ s → u₀ ⟶u* erase s → act (lookup (thr s) y) ≡ k → Live k →
         Inv u₀ (go y k s)
inv-go {u₀} {s} {y} {k} I r p l a σ t tin with rec-go s y k p a σ
... | new e acc =
  subst (Wit u₀ (go y k s) (kindOf σ) a) (sym e)
    (erase s , y , r , acc , allBut-self y ,
     λ z zK → sym (cong prog (go-other s y k z (λ e' → t≢f (trans (sym zK) (trans (cong (lookup (allBut y)) e') (allBut-self y)))))))
... | same e =
  subst (Wit u₀ (go y k s) (kindOf σ) a) (sym e)
    (wit-go {u₀} {s} {y} {k} {kindOf σ} {a} {rec (ctx s) a σ} p l
            (I a σ t (trans (cong (λ K → lookup K t) (sym e)) tin)))

inv-sync : ∀ {u₀ s} → Inv u₀ s → ∀ S t₀ → lookup S t₀ ≡ true → AtSync S (lookup (thr s) t₀) →
           Enabled S s → Inv u₀ (doSync S s)
inv-sync {u₀} {s} I S t₀ p₀ a₀ en a σ t tin =
  subst (Wit u₀ (doSync S s) (kindOf σ) a) (sym (rec-sync S s a σ)) (go' (bcase (meets S K)))
  where
    K = rec (ctx s) a σ
    P = active S (thr s)
    tK : lookup K t ≡ true
    tK with bcase (lookup K t)
    ... | inj₁ q = q
    ... | inj₂ q = ⊥-elim (t≢f (trans (sym tin) (trans (cong (λ K' → lookup K' t) (rec-sync S s a σ)) (bar-false S P K t q))))
    old = I a σ t tK
    go' : meets S K ≡ true ⊎ meets S K ≡ false → Wit u₀ (doSync S s) (kindOf σ) a (bar S P K)
    go' (inj₁ m) with old
    ... | f , x , rf , accx , xK , sim =
      subst (Wit u₀ (doSync S s) (kindOf σ) a) (sym (barT S P K m))
        (f , x , rf , accx , ∖-false K P x xK ,
         λ z zK → trans (sim z (proj₁ (∖-true K P z zK)))
                        (sym (popAll-inactive S (thr s) z (proj₂ (∖-true K P z zK)))))
    go' (inj₂ m) with old
    ... | f , x , rf , accx , xK , sim =
      subst (Wit u₀ (doSync S s) (kindOf σ) a) (sym (barF S P K m))
        (udoSync S f , x , (rf ◅◅u (u-sync S t₀ p₀ a₀f enf ◅u εu)) ,
         subst (AccessAt (kindOf σ) a) (sym (lookup-popAll-false S (uthr f) x xS)) accx ,
         xK ,
         λ z zK → prog-popAll S (uthr f) (thr s) z (sim z zK))
      where
        enf : ∀ i → lookup S i ≡ true → Ready S (lookup (uthr f) i)
        enf i iS = ready-prog {S} {lookup (uthr f) i} {lookup (thr s) i} (sim i (meets-false-sub S K i m iS)) (en i iS)
        a₀f : AtSync S (lookup (uthr f) t₀)
        a₀f = proj₁ a₀ , trans (sim t₀ (meets-false-sub S K t₀ m p₀)) (proj₂ a₀)
        xS : lookup S x ≡ false
        xS with bcase (lookup S x)
        ... | inj₂ q = q
        ... | inj₁ q = ⊥-elim (t≢f (trans (sym (meets-false-sub S K x m q)) xK))

------------------------------------------------------------------------
-- A detected race is a RaceState of the unchecked semantics

err-race : ∀ {u₀ s t k} → Inv u₀ s → act (lookup (thr s) t) ≡ k → badAct t k (ctx s) ≡ true →
           ∃ λ f → (u₀ ⟶u* f) × RaceState f
err-race {u₀} {s} {t} {rd a g} I p b with I a nothing t b
... | f , x , rf , accx , xK , sim =
  f , rf , t , x , a , rdK , wrK , (λ e → t≢f (trans (sym b) (trans (cong (lookup (rec (ctx s) a nothing)) e) xK))) ,
  tt , acc-prog rdK a {lookup (uthr f) t} {lookup (thr s) t} (sim t b) (act-rd (lookup (thr s) t) p) , accx
err-race {u₀} {s} {t} {wr a w y} I p b with bcase (lookup (wU (lookup (ctx s) a)) t)
... | inj₁ bw with I a nothing t bw
...   | f , x , rf , accx , xK , sim =
  f , rf , t , x , a , wrK , wrK , (λ e → t≢f (trans (sym bw) (trans (cong (lookup (rec (ctx s) a nothing)) e) xK))) ,
  tt , acc-prog wrK a {lookup (uthr f) t} {lookup (thr s) t} (sim t bw) (act-wr (lookup (thr s) t) p) , accx
err-race {u₀} {s} {t} {wr a w y} I p b | inj₂ bw with anyAt-witness t (rU (lookup (ctx s) a)) (trans (sym (cong (_∨ anyAt t (rU (lookup (ctx s) a))) bw)) b)
... | r , br with I a (just r) t br
...   | f , x , rf , accx , xK , sim =
  f , rf , t , x , a , wrK , rdK , (λ e → t≢f (trans (sym br) (trans (cong (lookup (rec (ctx s) a (just r))) e) xK))) ,
  tt , acc-prog wrK a {lookup (uthr f) t} {lookup (thr s) t} (sim t br) (act-wr (lookup (thr s) t) p) , accx
err-race {k = loc x} I p ()
err-race {k = blk}   I p ()

true-positives' : ∀ {u₀ s} → Inv u₀ s → u₀ ⟶u* erase s → ok s ⟶* err →
                  ∃ λ f → (u₀ ⟶u* f) × RaceState f
true-positives' {u₀} {s} I r (s-bad t p b ◅ _) = err-race {u₀} {s} I p b
true-positives' {u₀} {s} I r (s-go y {k} p l b ◅ rest) =
  true-positives' {u₀} {go y k s} (inv-go {u₀} {s} {y} {k} I r p l)
    (r ◅◅u (down₁ (s-go {s} y p l b) ◅u εu)) rest
true-positives' {u₀} {s} I r (s-sync S t₀ p₀ a₀ en ◅ rest) =
  true-positives' {u₀} {doSync S s} (inv-sync {u₀} {s} I S t₀ p₀ a₀ en)
    (r ◅◅u (down₁ (s-sync {s} S t₀ p₀ a₀ en) ◅u εu)) rest

inv₀ : ∀ T m → Inv (ustate T m) (state T m ctx₀)
inv₀ T m a nothing t tin =
  ⊥-elim (t≢f (trans (sym tin)
    (trans (cong (λ c → lookup (wU c) t) (lookup-replicate a _)) (lookup-replicate t false))))
inv₀ T m a (just r) t tin =
  ⊥-elim (t≢f (trans (sym tin)
    (trans (cong (λ c → lookup (lookup (rU c) r) t) (lookup-replicate a _))
    (trans (cong (λ K → lookup K t) (lookup-replicate r _)) (lookup-replicate t false)))))

-- (ii) true positives: a race reported by the checked semantics (started,
-- as the kernel replay does, with the empty context) is a real race of
-- the unchecked semantics.
true-positives : ∀ T m → ok (state T m ctx₀) ⟶* err →
                 ∃ λ f → (ustate T m ⟶u* f) × RaceState f
true-positives T m run = true-positives' {ustate T m} {state T m ctx₀} (inv₀ T m) εu run

-- In a RaceState the two accesses can happen in either order, one
-- directly after the other (Volta's definition of a data race).
race-both-orders : ∀ {u} → RaceState u → ∃ λ t → ∃ λ x → t ≢ x ×
  (∃ λ u₁ → ∃ λ u₂ → ThreadStep t u u₁ × ThreadStep x u₁ u₂) ×
  (∃ λ v₁ → ∃ λ v₂ → ThreadStep x u v₁ × ThreadStep t v₁ v₂)
race-both-orders {u} (t , x , a , κt , κx , t≢x , c , at , ax) =
  t , x , t≢x ,
  (ugo t kt u , ugo x (act (lookup (uthr (ugo t kt u)) x)) (ugo t kt u) ,
   (kt , refl , lt , refl) ,
   (_ , refl , subst (λ th → Live (act th)) (sym (ugo-other u t kt x (λ e → t≢x (sym e)))) lx , refl)) ,
  (ugo x kx u , ugo t (act (lookup (uthr (ugo x kx u)) t)) (ugo x kx u) ,
   (kx , refl , lx , refl) ,
   (_ , refl , subst (λ th → Live (act th)) (sym (ugo-other u x kx t t≢x)) lt , refl))
  where
    kt = act (lookup (uthr u) t)
    kx = act (lookup (uthr u) x)
    lt : Live kt
    lt = acc-live κt a _ at
    lx : Live kx
    lx = acc-live κx a _ ax
