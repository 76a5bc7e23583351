/-
Evident positivity (certificates/poly.py `_positive`).
Port of agda/Composition/Positivity.agda, statement by statement.  Core Lean only.

The Agda module parameters (the order facts of the reals used, and exp > 0) become the fields of `Reals`.
-/
namespace Pvcert.Composition.Positivity

/-- Agda: the module parameters -/
structure Reals where
  A : Type
  add : A → A → A
  mul : A → A → A
  div : A → A → A
  zero : A
  one : A
  le : A → A → Prop
  lt : A → A → Prop
  exp : A → A
  zero_le_zero : le zero zero
  zero_lt_one : lt zero one
  lt_le : ∀ {a}, lt zero a → le zero a
  square : ∀ x, le zero (mul x x)
  exp_pos : ∀ x, lt zero (exp x)
  mul_nonneg : ∀ {a b}, le zero a → le zero b → le zero (mul a b)
  mul_pos : ∀ {a b}, lt zero a → lt zero b → lt zero (mul a b)
  add_nonneg : ∀ {a b}, le zero a → le zero b → le zero (add a b)
  add_pos_left : ∀ {a b}, lt zero a → le zero b → lt zero (add a b)
  add_pos_right : ∀ {a b}, le zero a → lt zero b → lt zero (add a b)
  div_pos : ∀ {a b}, lt zero a → lt zero b → lt zero (div a b)

variable (R : Reals)

/-- Agda: `pow` -/
def pow (x : R.A) : Nat → R.A
  | 0 => R.one
  | k + 1 => R.mul x (pow x k)

/-- Agda: `evens` -/
def evens : List (R.A × Nat) → R.A
  | [] => R.one
  | (x, k) :: m => R.mul (R.mul (pow R x k) (pow R x k)) (evens m)

/-- Agda: `evens≥0` -/
theorem evens_nonneg : ∀ m, R.le R.zero (evens R m)
  | [] => R.lt_le R.zero_lt_one
  | (x, k) :: m => R.mul_nonneg (R.square (pow R x k)) (evens_nonneg m)

/-- Agda: `Term` -/
structure Term where
  c : R.A
  c_pos : R.lt R.zero c
  m : List (R.A × Nat)
  e : R.A

/-- Agda: `value` -/
def value (t : Term R) : R.A := R.mul (R.mul t.c (evens R t.m)) (R.exp t.e)

/-- Agda: `term≥0` -/
theorem term_nonneg (t : Term R) : R.le R.zero (value R t) :=
  R.mul_nonneg (R.mul_nonneg (R.lt_le t.c_pos) (evens_nonneg R t.m)) (R.lt_le (R.exp_pos t.e))

/-- Agda: `term>0` -/
theorem term_pos (t : Term R) (h : t.m = []) : R.lt R.zero (value R t) := by
  unfold value; rw [h]
  exact R.mul_pos (R.mul_pos t.c_pos R.zero_lt_one) (R.exp_pos t.e)

/-- Agda: `sum` -/
def sum : List (Term R) → R.A
  | [] => R.zero
  | t :: ts => R.add (value R t) (sum ts)

/-- Agda: `sum≥0` -/
theorem sum_nonneg : ∀ ts, R.le R.zero (sum R ts)
  | [] => R.zero_le_zero
  | t :: ts => R.add_nonneg (term_nonneg R t) (sum_nonneg ts)

/-- Agda: `positive` (Agda's `Any` is `∃ t ∈ ts`) -/
theorem positive : ∀ ts : List (Term R), (∃ t ∈ ts, t.m = []) → R.lt R.zero (sum R ts)
  | [], ⟨_, h, _⟩ => nomatch h
  | t :: ts, ⟨u, h, hu⟩ => by
    cases h with
    | head => exact R.add_pos_left (term_pos R t hu) (sum_nonneg R ts)
    | tail _ h' => exact R.add_pos_right (term_nonneg R t) (positive ts ⟨u, h', hu⟩)

/-- Agda: `quotient` -/
theorem quotient (ns ds : List (Term R)) (p : ∃ t ∈ ns, t.m = []) (q : ∃ t ∈ ds, t.m = []) :
    R.lt R.zero (R.div (sum R ns) (sum R ds)) :=
  R.div_pos (positive R ns p) (positive R ds q)

/-- Agda: `squares` (an RMS norm's argument, certificates/stages.py `evident`) -/
def squares : List R.A → R.A
  | [] => R.zero
  | x :: xs => R.add (R.mul x x) (squares xs)

/-- Agda: `squares≥0` -/
theorem squares_nonneg : ∀ xs, R.le R.zero (squares R xs)
  | [] => R.zero_le_zero
  | x :: xs => R.add_nonneg (R.square x) (squares_nonneg xs)

/-- Agda: `rms` -/
theorem rms (xs : List R.A) (k eps alpha : R.A) (hk : R.le R.zero k) (he : R.lt R.zero eps)
    (ha : R.lt R.zero alpha) : R.lt R.zero (R.add (R.mul (squares R xs) k) (R.mul alpha eps)) :=
  R.add_pos_right (R.mul_nonneg (squares_nonneg R xs) hk) (R.mul_pos ha he)

end Pvcert.Composition.Positivity
