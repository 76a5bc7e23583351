/-
Booleans as 0/1 variables (certificates/symint.py).
Port of agda/Composition/Booleans.agda, statement by statement.  Core Lean only.

The Agda module parameter (a commutative ring, equality its setoid's) becomes the
fields of `Ring` with Lean's `=`: only the laws the proofs use.
-/
namespace Pvcert.Composition.Booleans

/-- Agda: the module parameter `R : CommutativeRing` (the laws used) -/
structure Ring where
  C : Type
  add : C → C → C
  mul : C → C → C
  neg : C → C
  zero : C
  one : C
  add_assoc : ∀ a b d, add (add a b) d = add a (add b d)
  zero_add : ∀ a, add zero a = a
  add_zero : ∀ a, add a zero = a
  add_neg : ∀ a, add a (neg a) = zero
  one_mul : ∀ a, mul one a = a
  zero_mul : ∀ a, mul zero a = zero

variable (R : Ring)

/-- Agda: `⌊_⌋` -/
def fl : Bool → R.C
  | true => R.one
  | false => R.zero

/-- Agda: `_−_` -/
def sub (x y : R.C) : R.C := R.add x (R.neg y)

/-- Agda: `-0≈0` -/
theorem neg_zero : R.neg R.zero = R.zero := by
  have h := R.add_neg R.zero
  rw [R.zero_add] at h
  exact h

/-- Agda: `1−0≈1` -/
theorem one_sub_zero : sub R R.one R.zero = R.one := by
  unfold sub; rw [neg_zero, R.add_zero]

/-- Agda: `where01` -/
theorem where01 (b : Bool) (x y : R.C) :
    R.add (R.mul (fl R b) x) (R.mul (sub R R.one (fl R b)) y) = (if b then x else y) := by
  cases b
  · show R.add (R.mul R.zero x) (R.mul (sub R R.one R.zero) y) = y
    rw [one_sub_zero, R.zero_mul, R.zero_add, R.one_mul]
  · show R.add (R.mul R.one x) (R.mul (R.add R.one (R.neg R.one)) y) = x
    rw [R.one_mul, R.add_neg, R.zero_mul, R.add_zero]

/-- Agda: `not01` -/
theorem not01 (b : Bool) : fl R (!b) = sub R R.one (fl R b) := by
  cases b
  · exact (one_sub_zero R).symm
  · exact (R.add_neg R.one).symm

/-- Agda: `and01` -/
theorem and01 (b d : Bool) : fl R (b && d) = R.mul (fl R b) (fl R d) := by
  cases b
  · exact (R.zero_mul (fl R d)).symm
  · exact (R.one_mul (fl R d)).symm

/-- Agda: `or01` -/
theorem or01 (b d : Bool) :
    fl R (b || d) = sub R (R.add (fl R b) (fl R d)) (R.mul (fl R b) (fl R d)) := by
  cases b
  · show fl R d = R.add (R.add R.zero (fl R d)) (R.neg (R.mul R.zero (fl R d)))
    rw [R.zero_mul, neg_zero, R.zero_add, R.add_zero]
  · show R.one = R.add (R.add R.one (fl R d)) (R.neg (R.mul R.one (fl R d)))
    rw [R.one_mul, R.add_assoc, R.add_neg, R.add_zero]

/-- Agda: `specialize` -/
theorem specialize {n : Nat} (p q : (Fin n → R.C) → R.C) (eq : ∀ ρ, p ρ = q ρ)
    (β : Fin n → Bool) : p (fl R ∘ β) = q (fl R ∘ β) :=
  eq (fl R ∘ β)

end Pvcert.Composition.Booleans
