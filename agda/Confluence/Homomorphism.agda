{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Symbolic replay tells everything about concrete runs
-- (Volta, Lemmas 3, 4 and 7, and the core of Theorem 9).
--
-- Two instances of the language: values V₁ (e.g. symbolic terms over
-- the input symbols, what the kernel replay computes with) and V₂
-- (e.g. the reals), related by a homomorphism φ (e.g. evaluation of
-- terms under an assignment of the inputs).  Every checked step on V₁
-- maps to a checked step on V₂ (race reports included) and terminal
-- configurations map to terminal configurations.  Hence, if the replay
-- runs ONE schedule symbolically to a race-free terminal state s₁, then
-- for every concrete input (every φ) every terminated concrete unchecked
-- schedule ends in φ(s₁), and no concrete schedule races.
------------------------------------------------------------------------
open import Data.Nat using (ℕ)
open import Relation.Binary.PropositionalEquality using (_≡_)

module Confluence.Homomorphism
  {V₁ V₂ Op : Set} (⟦_⟧₁ : Op → V₁ → V₁ → V₁) (⟦_⟧₂ : Op → V₂ → V₂ → V₂)
  (φ : V₁ → V₂) (hom : ∀ o a b → φ (⟦ o ⟧₁ a b) ≡ ⟦ o ⟧₂ (φ a) (φ b))
  (N M R : ℕ) where

import Confluence.Lang
import Confluence.Diamond
import Confluence.Corollaries
module L₁ = Confluence.Lang V₁ Op ⟦_⟧₁ N M R
module L₂ = Confluence.Lang V₂ Op ⟦_⟧₂ N M R
module D₁ = Confluence.Diamond V₁ Op ⟦_⟧₁ N M R
module D₂ = Confluence.Diamond V₂ Op ⟦_⟧₂ N M R
module C₂ = Confluence.Corollaries V₂ Op ⟦_⟧₂ N M R
open import Confluence.Context N M

open import Data.Bool using (Bool; true; false; _∧_; if_then_else_)
open import Data.Fin using (Fin)
import Data.List as List
open List using (List; []; _∷_)
open import Data.Vec using (Vec; []; _∷_; lookup; _[_]≔_; map)
open import Data.Vec.Properties using (lookup-map; map-[]≔)
open import Data.Product using (∃; _×_; _,_; proj₁; proj₂)
open import Data.Sum using (_⊎_; inj₁; inj₂)
open import Relation.Nullary using (¬_)
open import Relation.Binary.PropositionalEquality

------------------------------------------------------------------------
-- Mapping states along φ (the race-tracking context holds no values)

mapI : L₁.Instr → L₂.Instr
mapI (L₁.const r v)   = L₂.const r (φ v)
mapI (L₁.binop o r a b) = L₂.binop o r a b
mapI (L₁.load r a)    = L₂.load r a
mapI (L₁.store a r)   = L₂.store a r
mapI (L₁.sync S)      = L₂.sync S

mapT : L₁.Thread → L₂.Thread
mapT th = L₂.thread (map φ (L₁.regs th)) (List.map mapI (L₁.prog th))

mapS : L₁.State → L₂.State
mapS s = L₂.state (map mapT (L₁.thr s)) (map φ (L₁.mem s)) (L₁.ctx s)

mapU : L₁.UState → L₂.UState
mapU u = L₂.ustate (map mapT (L₁.uthr u)) (map φ (L₁.umem u))

mapC : L₁.Conf → L₂.Conf
mapC (L₁.ok s) = L₂.ok (mapS s)
mapC L₁.err    = L₂.err

------------------------------------------------------------------------
-- Steps map to steps

go-map : ∀ s t th {k} → L₁.act th ≡ k → L₁.Live k →
         ∃ λ k₂ → L₂.act (mapT th) ≡ k₂ × L₂.Live k₂ ×
                  L₂.badAct t k₂ (L₁.ctx s) ≡ L₁.badAct t k (L₁.ctx s) ×
                  mapS (L₁.go t k s) ≡ L₂.go t k₂ (mapS s)
go-map s t (L₁.thread rs [])                   refl ()
go-map s t (L₁.thread rs (L₁.const r v ∷ is))  refl l =
  _ , refl , L₂.loc _ , refl ,
  D₂.st≡ (trans (map-[]≔ mapT (L₁.thr s) t)
                (cong (λ z → map mapT (L₁.thr s) [ t ]≔ L₂.thread z (List.map mapI is)) (map-[]≔ φ rs r)))
         refl refl
go-map s t (L₁.thread rs (L₁.binop o r a b ∷ is)) refl l =
  _ , refl , L₂.loc _ , refl ,
  D₂.st≡ (trans (map-[]≔ mapT (L₁.thr s) t)
                (cong (λ z → map mapT (L₁.thr s) [ t ]≔ L₂.thread z (List.map mapI is))
                      (trans (map-[]≔ φ rs r)
                             (cong (map φ rs [ r ]≔_)
                                   (trans (hom o _ _) (cong₂ ⟦ o ⟧₂ (sym (lookup-map a φ rs)) (sym (lookup-map b φ rs))))))))
         refl refl
go-map s t (L₁.thread rs (L₁.load r a ∷ is))   refl l =
  _ , refl , L₂.rd a _ , refl ,
  D₂.st≡ (trans (map-[]≔ mapT (L₁.thr s) t)
                (cong (λ z → map mapT (L₁.thr s) [ t ]≔ L₂.thread z (List.map mapI is))
                      (trans (map-[]≔ φ rs r) (cong (map φ rs [ r ]≔_) (sym (lookup-map a φ (L₁.mem s)))))))
         refl refl
go-map s t (L₁.thread rs (L₁.store a r ∷ is))  refl l =
  _ , refl , L₂.wr a _ _ , refl ,
  D₂.st≡ (map-[]≔ mapT (L₁.thr s) t)
         (trans (map-[]≔ φ (L₁.mem s) a) (cong (map φ (L₁.mem s) [ a ]≔_) (sym (lookup-map r φ rs))))
         refl
go-map s t (L₁.thread rs (L₁.sync S ∷ is))     refl ()

cond-map : ∀ b th → mapT (if b then L₁.pop th else th) ≡ (if b then L₂.pop (mapT th) else mapT th)
cond-map false th                       = refl
cond-map true  (L₁.thread rs [])        = refl
cond-map true  (L₁.thread rs (i ∷ is))  = refl

popAll-map : ∀ {n} (S : Mask n) ths → map mapT (L₁.popAll S ths) ≡ L₂.popAll S (map mapT ths)
popAll-map []      []         = refl
popAll-map (b ∷ S) (th ∷ ths) = cong₂ _∷_ (cond-map b th) (popAll-map S ths)

atSync-map : ∀ S th → L₁.AtSync S th → L₂.AtSync S (mapT th)
atSync-map S th (is , e) = List.map mapI is , cong (List.map mapI) e

ready-map : ∀ S th → L₁.Ready S th → L₂.Ready S (mapT th)
ready-map S th (inj₁ a) = inj₁ (atSync-map S th a)
ready-map S th (inj₂ e) = inj₂ (cong (List.map mapI) e)

running-map : ∀ th → L₂.running (mapT th) ≡ L₁.running th
running-map (L₁.thread rs [])      = refl
running-map (L₁.thread rs (i ∷ is)) = refl

active-map : ∀ {n} (S : Mask n) ths → L₂.active S (map mapT ths) ≡ L₁.active S ths
active-map []      []         = refl
active-map (b ∷ S) (th ∷ ths) = cong₂ _∷_ (cong (b ∧_) (running-map th)) (active-map S ths)

map-step : ∀ {c c'} → c L₁.⟶ c' → mapC c L₂.⟶ mapC c'
map-step (L₁.s-go {s} t {k} p l b) with go-map s t (lookup (L₁.thr s) t) p l
... | k₂ , p₂ , l₂ , bq , eq =
  subst (λ z → L₂.ok (mapS s) L₂.⟶ L₂.ok z) (sym eq)
        (L₂.s-go t (trans (cong L₂.act (lookup-map t mapT (L₁.thr s))) p₂) l₂ (trans bq b))
map-step (L₁.s-bad {s} t {k} p b) with go-map s t (lookup (L₁.thr s) t) p (D₁.bad→live t k (L₁.ctx s) b)
... | k₂ , p₂ , l₂ , bq , eq =
  L₂.s-bad t (trans (cong L₂.act (lookup-map t mapT (L₁.thr s))) p₂) (trans bq b)
map-step (L₁.s-sync {s} S t₀ p₀ a₀ en) =
  subst (λ z → L₂.ok (mapS s) L₂.⟶ L₂.ok z)
        (sym (D₂.st≡ (popAll-map S (L₁.thr s)) refl
                     (cong (λ P → map (syncA S P) (L₁.ctx s)) (sym (active-map S (L₁.thr s))))))
        (L₂.s-sync S t₀ p₀
          (subst (L₂.AtSync S) (sym (lookup-map t₀ mapT (L₁.thr s))) (atSync-map S (lookup (L₁.thr s) t₀) a₀))
          (λ i q → subst (L₂.Ready S) (sym (lookup-map i mapT (L₁.thr s)))
                         (ready-map S (lookup (L₁.thr s) i) (en i q))))

map-run : ∀ {c c'} → c D₁.⟶* c' → mapC c D₂.⟶* mapC c'
map-run D₁.ε        = D₂.ε
map-run (st D₁.◅ r) = map-step st D₂.◅ map-run r

------------------------------------------------------------------------
-- Terminal configurations map to terminal configurations

live-unmap : ∀ th → L₂.Live (L₂.act (mapT th)) → L₁.Live (L₁.act th)
live-unmap (L₁.thread rs [])                   ()
live-unmap (L₁.thread rs (L₁.const r v ∷ is))  l = L₁.loc _
live-unmap (L₁.thread rs (L₁.binop o r a b ∷ is)) l = L₁.loc _
live-unmap (L₁.thread rs (L₁.load r a ∷ is))   l = L₁.rd a _
live-unmap (L₁.thread rs (L₁.store a r ∷ is))  l = L₁.wr a _ _
live-unmap (L₁.thread rs (L₁.sync S ∷ is))     ()

atSync-unmap : ∀ S th → L₂.AtSync S (mapT th) → L₁.AtSync S th
atSync-unmap S (L₁.thread rs [])                   (is , ())
atSync-unmap S (L₁.thread rs (L₁.const r v ∷ is))  (is' , ())
atSync-unmap S (L₁.thread rs (L₁.binop o r a b ∷ is)) (is' , ())
atSync-unmap S (L₁.thread rs (L₁.load r a ∷ is))   (is' , ())
atSync-unmap S (L₁.thread rs (L₁.store a r ∷ is))  (is' , ())
atSync-unmap S (L₁.thread rs (L₁.sync .S ∷ is))    (is' , refl) = is , refl

map-nil : ∀ p → List.map mapI p ≡ [] → p ≡ []
map-nil [] e = refl

ready-unmap : ∀ S th → L₂.Ready S (mapT th) → L₁.Ready S th
ready-unmap S th (inj₁ a) = inj₁ (atSync-unmap S th a)
ready-unmap S th (inj₂ e) = inj₂ (map-nil (L₁.prog th) e)

one-step : ∀ s t → L₁.Live (L₁.act (lookup (L₁.thr s) t)) → ∃ λ c → L₁.ok s L₁.⟶ c
one-step s t l with bcase (L₁.badAct t (L₁.act (lookup (L₁.thr s) t)) (L₁.ctx s))
... | inj₁ b = _ , L₁.s-bad t refl b
... | inj₂ b = _ , L₁.s-go t refl l b

live-at : ∀ s t {k₂} → L₂.act (lookup (map mapT (L₁.thr s)) t) ≡ k₂ → L₂.Live k₂ →
          L₁.Live (L₁.act (lookup (L₁.thr s) t))
live-at s t p₂ l₂ =
  live-unmap (lookup (L₁.thr s) t)
    (subst L₂.Live (sym (trans (cong L₂.act (sym (lookup-map t mapT (L₁.thr s)))) p₂)) l₂)

terminal-map : ∀ s → D₁.Terminal (L₁.ok s) → D₂.Terminal (L₂.ok (mapS s))
terminal-map s T (L₂.s-go t p₂ l₂ b₂) = T (proj₂ (one-step s t (live-at s t p₂ l₂)))
terminal-map s T (L₂.s-bad t {k₂} p₂ b₂) =
  T (proj₂ (one-step s t (live-at s t p₂ (D₂.bad→live t k₂ (L₁.ctx s) b₂))))
terminal-map s T (L₂.s-sync S t₀ p₀ a₀ en) =
  T (L₁.s-sync S t₀ p₀
       (atSync-unmap S (lookup (L₁.thr s) t₀) (subst (L₂.AtSync S) (lookup-map t₀ mapT (L₁.thr s)) a₀))
       (λ i q → ready-unmap S (lookup (L₁.thr s) i)
                  (subst (L₂.Ready S) (lookup-map i mapT (L₁.thr s)) (en i q))))

------------------------------------------------------------------------
-- The soundness of one symbolic replay for all concrete runs

-- if the symbolic replay of one schedule ends race-free in s₁, every
-- terminated concrete (unchecked) schedule from φ(s₀) ends in φ(s₁)
symbolic-replay-sound :
  ∀ {s₀ s₁} → L₁.ok s₀ D₁.⟶* L₁.ok s₁ → D₁.Terminal (L₁.ok s₁) →
  ∀ {u} → mapU (L₁.erase s₀) C₂.U.⟶* u → C₂.U.Terminal u → u ≡ mapU (L₁.erase s₁)
symbolic-replay-sound {s₀} {s₁} r T r₂ T₂ =
  C₂.unchecked-outputs-unique (map-run r) (terminal-map s₁ T) r₂ T₂

-- ... and no concrete schedule has a race
symbolic-replay-race-free :
  ∀ {s₀ s₁} → L₁.ok s₀ D₁.⟶* L₁.ok s₁ → D₁.Terminal (L₁.ok s₁) →
  ¬ (L₂.ok (mapS s₀) D₂.⟶* L₂.err)
symbolic-replay-race-free {s₀} {s₁} r T = C₂.no-race-anywhere (map-run r) (terminal-map s₁ T)

-- a race found symbolically is found for every concrete input
symbolic-race-concrete : ∀ {s₀} → L₁.ok s₀ D₁.⟶* L₁.err → L₂.ok (mapS s₀) D₂.⟶* L₂.err
symbolic-race-concrete r = map-run r
