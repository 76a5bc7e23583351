/-
Congruence of a stage (certificates/stages.py `congruent`).
Port of agda/Composition/Congruence.agda, statement by statement.  Core Lean only.

Agda's `Pointwise _≡_ ys xs` on lists becomes `ys = xs` (pointwise equality of lists is equality).
-/
namespace Pvcert.Composition.Congruence

variable {V Target Attrs : Type} (run : Target → Attrs → List V → Option (List V))

/-- Agda: `congruence` — equal inputs, place by place: the same result (defined or not) -/
theorem congruence {f : Target} {a : Attrs} {xs ys : List V} (eq : ys = xs) : run f a ys = run f a xs := by
  rw [eq]

/-- Agda: `stage` — the spec node defined with outputs `outs`: the impl node gives the same -/
theorem stage {f : Target} {a : Attrs} {xs ys outs : List V} (eq : ys = xs) (defined : run f a xs = some outs) :
    run f a ys = some outs :=
  (congruence run eq).trans defined

/-- Agda: `Pieces.apply` -/
def apply {C D : Type} (φ : C → D) (x : Nat → C) : Nat → D := fun t => φ (x t)

/-- Agda: `Pieces.concat` -/
def concat {X : Type} (n : Nat) (a b : Nat → X) : Nat → X := fun t => if t < n then a t else b (t - n)

/-- Agda: `Pieces.pieces` — along a map axis, the node on concatenated pieces is the concatenation of its results -/
theorem pieces {C D : Type} (φ : C → D) (n : Nat) (a b : Nat → C) (t : Nat) :
    apply φ (concat n a b) t = concat n (apply φ a) (apply φ b) t := by
  unfold apply concat
  split <;> rfl

end Pvcert.Composition.Congruence
