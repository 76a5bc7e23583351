{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Congruence of a stage (certificates/stages.py ``congruent``;
-- docs/stages.md, "Stages held by congruence").
--
-- A plain operator's value is a (partial) function of its target, its
-- attributes and its input values alone: ``run``. A stage whose every
-- goal ``t = u`` names an impl tensor ``u`` made by the spec node's
-- target with the spec node's attributes, in ``t``'s output place, from
-- impl tensors the hypotheses equate to the spec node's inputs in their
-- places, holds at every size without evaluating anything: wherever the
-- spec node is defined, the impl node is too, with the same outputs.
-- Along a map axis of the node, the same holds piece by piece (``Pieces``).
------------------------------------------------------------------------
module Composition.Congruence where

open import Data.Nat using (ℕ; _<?_; _∸_)
open import Relation.Nullary using (yes; no)
open import Relation.Binary.PropositionalEquality using (refl)
open import Data.List using (List)
open import Data.Maybe using (Maybe; just)
open import Data.List.Relation.Binary.Pointwise using (Pointwise; Pointwise-≡⇒≡)
open import Relation.Binary.PropositionalEquality using (_≡_; cong; trans)

module _ {V Target Attrs : Set} (run : Target → Attrs → List V → Maybe (List V)) where

  -- equal inputs, place by place: the same result (defined or not)
  congruence : ∀ {f a xs ys} → Pointwise _≡_ ys xs → run f a ys ≡ run f a xs
  congruence eq = cong (run _ _) (Pointwise-≡⇒≡ eq)

  -- the spec node defined with outputs ``outs``: the impl node gives the same, so each output place
  -- ``j`` of it equals the spec node's (the goal ``t = u``)
  stage : ∀ {f a xs ys outs} → Pointwise _≡_ ys xs → run f a xs ≡ just outs → run f a ys ≡ just outs
  stage eq defined = trans (congruence eq) defined

-- Pieces along a map axis (``stages._along``: the axis is one class of the node's rule, not pinned, summed or cut
-- by a constant, so ``MapAxis`` reads the node as one function φ of each offset's column). The node applied to
-- pieces concatenated along the axis is its results on the pieces, concatenated: a goal ``t = concat(u_0, ...)``
-- from hypotheses ``x = concat(x_0, ...)`` holds by ``stage`` piece by piece.
module Pieces {C D : Set} (φ : C → D) where

  apply : (ℕ → C) → (ℕ → D)
  apply x t = φ (x t)

  concat : ∀ {X : Set} → ℕ → (ℕ → X) → (ℕ → X) → (ℕ → X)
  concat n a b t with t <? n
  ... | yes _ = a t
  ... | no _ = b (t ∸ n)

  pieces : ∀ n a b t → apply (concat n a b) t ≡ concat n (apply a) (apply b) t
  pieces n a b t with t <? n
  ... | yes _ = refl
  ... | no _ = refl
