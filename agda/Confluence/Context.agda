{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The race-tracking context of the checked semantics.  It mentions no
-- values, so it is shared by every instance of Confluence.Lang (this
-- matters in Confluence.Homomorphism, which relates two instances).
--
-- Per address: the set of threads not yet ordered after the last write
-- (wU), and for every thread r the set of threads not yet ordered after
-- r's last read of the address (rU r).
------------------------------------------------------------------------
open import Data.Nat using (ℕ)

module Confluence.Context (N M : ℕ) where

open import Data.Bool using (Bool; true; false; _∨_)
open import Data.Fin using (Fin)
open import Data.Vec using (Vec; lookup; _[_]≔_; map; replicate)
open import Confluence.Mask public

record ACtx : Set where
  constructor actx
  field
    wU : Mask N
    rU : Vec (Mask N) N
open ACtx public

-- a barrier over S whose active (not exited) participants are P
syncA : Mask N → Mask N → ACtx → ACtx
syncA S P c = actx (bar S P (wU c)) (map (bar S P) (rU c))

-- a read by t races with an unsynchronised last write
rdBad : Fin N → ACtx → Bool
rdBad t c = lookup (wU c) t

-- a write by t races with an unsynchronised last write or read
wrBad : Fin N → ACtx → Bool
wrBad t c = lookup (wU c) t ∨ anyAt t (rU c)

rdUpd : Fin N → ACtx → ACtx
rdUpd t c = actx (wU c) (rU c [ t ]≔ allBut t)

wrUpd : Fin N → ACtx → ACtx
wrUpd t c = actx (allBut t) (rU c)

-- initial context: nothing written or read yet
ctx₀ : Vec ACtx M
ctx₀ = replicate (actx (replicate false) (replicate (replicate false)))
