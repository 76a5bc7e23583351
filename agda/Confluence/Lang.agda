{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Structured CTAs: syntax, unchecked semantics, checked semantics.
--
-- Parameters: an abstract type of values, an abstract set of operation
-- codes with their interpretation as binary operations on values (every
-- arithmetic instruction; a unary one ignores its second operand), N threads,
-- M shared-memory addresses, R registers per thread.  Programs are
-- straight-line; addresses are static (as in Volta's structured CTAs);
-- `sync S` is a barrier over the explicit set S of thread ids; it fires
-- when every member waits at `sync S` or has exited, and one waits.
------------------------------------------------------------------------
open import Data.Nat using (ℕ)

module Confluence.Lang (Val : Set) (Op : Set) (⟦_⟧ₒ : Op → Val → Val → Val) (N M R : ℕ) where

open import Data.Bool using (Bool; true; false; _∨_; _∧_; if_then_else_)
open import Data.Fin using (Fin; zero; suc)
open import Data.List using (List; []; _∷_)
open import Data.Vec using (Vec; []; _∷_; lookup; _[_]≔_; map)
open import Data.Product using (∃; _×_; _,_)
open import Data.Sum using (_⊎_; inj₁; inj₂)
open import Relation.Binary.PropositionalEquality
open import Confluence.Context N M public

Tid  = Fin N
Addr = Fin M
Reg  = Fin R

data Instr : Set where
  const : Reg → Val → Instr          -- r := v
  binop : Op → Reg → Reg → Reg → Instr  -- r := op(r₁, r₂)
  load  : Reg → Addr → Instr         -- r := mem[a]
  store : Addr → Reg → Instr         -- mem[a] := r
  sync  : Mask N → Instr             -- barrier over the threads in the mask

record Thread : Set where
  constructor thread
  field
    regs : Vec Val R
    prog : List Instr
open Thread public

-- What the next instruction of a thread does, if it is not a barrier.
data Act : Set where
  loc : Thread → Act                 -- purely local: the new thread state
  rd  : Addr → (Val → Thread) → Act  -- read address a, continue with the value
  wr  : Addr → Val → Thread → Act    -- write a value at a, continue
  blk : Act                          -- finished, or waiting at a barrier

act : Thread → Act
act (thread rs [])                 = blk
act (thread rs (const r v ∷ is))   = loc (thread (rs [ r ]≔ v) is)
act (thread rs (binop o r a b ∷ is)) = loc (thread (rs [ r ]≔ ⟦ o ⟧ₒ (lookup rs a) (lookup rs b)) is)
act (thread rs (load r a ∷ is))    = rd a (λ v → thread (rs [ r ]≔ v) is)
act (thread rs (store a r ∷ is))   = wr a (lookup rs r) (thread rs is)
act (thread rs (sync S ∷ is))      = blk

data Live : Act → Set where
  loc : ∀ x → Live (loc x)
  rd  : ∀ a g → Live (rd a g)
  wr  : ∀ a w x → Live (wr a w x)

pop : Thread → Thread
pop (thread rs [])       = thread rs []
pop (thread rs (i ∷ is)) = thread rs is

AtSync : Mask N → Thread → Set
AtSync S th = ∃ λ is → prog th ≡ sync S ∷ is

-- a member of a barrier over S is ready when it waits at `sync S` or
-- has exited (as in Volta: exited threads do not block a barrier)
Ready : Mask N → Thread → Set
Ready S th = AtSync S th ⊎ prog th ≡ []

running : Thread → Bool
running (thread rs [])      = false
running (thread rs (i ∷ is)) = true

-- the active participants of a barrier over S: the members still running
active : ∀ {n} → Mask n → Vec Thread n → Mask n
active []      []         = []
active (b ∷ S) (th ∷ ths) = (b ∧ running th) ∷ active S ths

popAll : ∀ {n} → Mask n → Vec Thread n → Vec Thread n
popAll []      []         = []
popAll (b ∷ S) (th ∷ ths) = (if b then pop th else th) ∷ popAll S ths

------------------------------------------------------------------------
-- Unchecked semantics

record UState : Set where
  constructor ustate
  field
    uthr : Vec Thread N
    umem : Vec Val M
open UState public

-- one step of thread t performing a live action
ugo : Tid → Act → UState → UState
ugo t (loc x)    u = ustate (uthr u [ t ]≔ x) (umem u)
ugo t (rd a g)   u = ustate (uthr u [ t ]≔ g (lookup (umem u) a)) (umem u)
ugo t (wr a w x) u = ustate (uthr u [ t ]≔ x) (umem u [ a ]≔ w)
ugo t blk        u = u

udoSync : Mask N → UState → UState
udoSync S u = ustate (popAll S (uthr u)) (umem u)

infix 4 _⟶u_
data _⟶u_ : UState → UState → Set where
  u-go   : ∀ {u} t {k} → act (lookup (uthr u) t) ≡ k → Live k → u ⟶u ugo t k u
  u-sync : ∀ {u} S t₀ → lookup S t₀ ≡ true → AtSync S (lookup (uthr u) t₀) →
           (∀ t → lookup S t ≡ true → Ready S (lookup (uthr u) t)) →
           u ⟶u udoSync S u

------------------------------------------------------------------------
-- Checked semantics: per address, the set of threads not yet ordered
-- after the last write, and for every thread r the set of threads not
-- yet ordered after r's last read of the address.

badAct : Tid → Act → Vec ACtx M → Bool
badAct t (rd a g)   cs = rdBad t (lookup cs a)
badAct t (wr a w x) cs = wrBad t (lookup cs a)
badAct t (loc x)    cs = false
badAct t blk        cs = false

record State : Set where
  constructor state
  field
    thr : Vec Thread N
    mem : Vec Val M
    ctx : Vec ACtx M
open State public

go : Tid → Act → State → State
go t (loc x)    s = state (thr s [ t ]≔ x) (mem s) (ctx s)
go t (rd a g)   s = state (thr s [ t ]≔ g (lookup (mem s) a)) (mem s)
                          (ctx s [ a ]≔ rdUpd t (lookup (ctx s) a))
go t (wr a w x) s = state (thr s [ t ]≔ x) (mem s [ a ]≔ w)
                          (ctx s [ a ]≔ wrUpd t (lookup (ctx s) a))
go t blk        s = s

doSync : Mask N → State → State
doSync S s = state (popAll S (thr s)) (mem s) (map (syncA S (active S (thr s))) (ctx s))

data Conf : Set where
  ok  : State → Conf
  err : Conf

infix 4 _⟶_
data _⟶_ : Conf → Conf → Set where
  s-go   : ∀ {s} t {k} → act (lookup (thr s) t) ≡ k → Live k →
           badAct t k (ctx s) ≡ false → ok s ⟶ ok (go t k s)
  s-bad  : ∀ {s} t {k} → act (lookup (thr s) t) ≡ k →
           badAct t k (ctx s) ≡ true → ok s ⟶ err
  s-sync : ∀ {s} S t₀ → lookup S t₀ ≡ true → AtSync S (lookup (thr s) t₀) →
           (∀ t → lookup S t ≡ true → Ready S (lookup (thr s) t)) →
           ok s ⟶ ok (doSync S s)

-- forgetting the race-tracking context
erase : State → UState
erase s = ustate (thr s) (mem s)
