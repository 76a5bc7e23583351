/-
Shape reduction for reductions.  Port of agda/ShapeReduction/Reduction.agda
(TrainVerify, Appendix C, Definition 13, Theorem 11, corrected), statement by
statement.  Core Lean only.

  red h op [x₀, …, x_n] = h x₀ `op` (h x₁ `op` (… `op` h x_n))
-/
namespace Pvcert.ShapeReduction

/-- Agda: `Associative` -/
abbrev Associative {V : Type} (op : V → V → V) : Prop := ∀ a b c, op (op a b) c = op a (op b c)

/-- Agda: `Commutative` -/
abbrev Commutative {V : Type} (op : V → V → V) : Prop := ∀ a b, op a b = op b a

/-- Agda: `red` (reduction of the non-empty list x :: xs) -/
def red {A V : Type} (h : A → V) (op : V → V → V) : A → List A → V
  | x, [] => h x
  | x, y :: ys => op (h x) (red h op y ys)

/-- Agda: `reduction-length2` (Theorem 11, corrected): agreement at length 2
and the side condition "every value is the image of one element under both
element maps" give agreement at every length ≥ 2. -/
theorem reduction_length2 {A V : Type} (h₁ h₂ : A → V) (op₁ op₂ : V → V → V)
    (two : ∀ a b, red h₁ op₁ a [b] = red h₂ op₂ a [b])
    (surj : ∀ v, ∃ a, h₁ a = v ∧ h₂ a = v) :
    ∀ (x y : A) (ys : List A), red h₁ op₁ x (y :: ys) = red h₂ op₂ x (y :: ys)
  | x, y, [] => two x y
  | x, y, z :: zs => by
      obtain ⟨b, e₁, e₂⟩ := surj (red h₂ op₂ y (z :: zs))
      have ih := reduction_length2 h₁ h₂ op₁ op₂ two surj y z zs
      exact Eq.trans (congrArg (op₁ (h₁ x)) ih)
        (Eq.trans (congrArg (op₁ (h₁ x)) e₁.symm)
          (Eq.trans (two x b) (congrArg (op₂ (h₂ x)) e₂)))

/-- Agda: `reduction-length2-id` (the unmapped statement of the appendix) -/
theorem reduction_length2_id {V : Type} (op₁ op₂ : V → V → V)
    (two : ∀ a b, op₁ a b = op₂ a b) :
    ∀ (x y : V) (ys : List V), red (fun v => v) op₁ x (y :: ys) = red (fun v => v) op₂ x (y :: ys) :=
  reduction_length2 (fun v => v) (fun v => v) op₁ op₂ two (fun v => ⟨v, rfl, rfl⟩)

/-- Agda: `length2-not-enough` — without the side condition the statement is
false even for associative and commutative operators
(h = const 1, op₁ = +, op₂ = const 2: length 2 gives 2 = 2, length 3 gives 3 ≠ 2). -/
theorem length2_not_enough :
    ¬ (∀ (A V : Type) (h₁ h₂ : A → V) (op₁ op₂ : V → V → V),
        Associative op₁ → Commutative op₁ → Associative op₂ → Commutative op₂ →
        (∀ a b, red h₁ op₁ a [b] = red h₂ op₂ a [b]) →
        ∀ (x y : A) (ys : List A), red h₁ op₁ x (y :: ys) = red h₂ op₂ x (y :: ys)) := by
  intro claim
  have h := claim Unit Nat (fun _ => 1) (fun _ => 1) (fun a b => a + b) (fun _ _ => 2)
    Nat.add_assoc Nat.add_comm (fun _ _ _ => rfl) (fun _ _ => rfl) (fun _ _ => rfl)
    () () [()]
  have h3 : (3 : Nat) = 2 := h
  exact absurd h3 (by decide)

/-- Agda: `red-++` -/
theorem red_append {A V : Type} (h : A → V) (op : V → V → V) (assoc : Associative op) :
    ∀ (x : A) (ys : List A) (z : A) (zs : List A),
      red h op x (ys ++ z :: zs) = op (red h op x ys) (red h op z zs)
  | _, [], _, _ => rfl
  | x, y :: ys, z, zs =>
      Eq.trans (congrArg (op (h x)) (red_append h op assoc y ys z zs))
        (assoc (h x) (red h op y ys) (red h op z zs)).symm

/-- Agda: `red-split-comm` (partial reductions may be combined in any order) -/
theorem red_split_comm {A V : Type} (h : A → V) (op : V → V → V) (assoc : Associative op)
    (comm : Commutative op) (x : A) (ys : List A) (z : A) (zs : List A) :
    red h op x (ys ++ z :: zs) = red h op z (zs ++ x :: ys) :=
  Eq.trans (red_append h op assoc x ys z zs)
    (Eq.trans (comm (red h op x ys) (red h op z zs)) (red_append h op assoc z zs x ys).symm)

/-- Agda: `red-swap` -/
theorem red_swap {A V : Type} (h : A → V) (op : V → V → V) (assoc : Associative op)
    (comm : Commutative op) : ∀ (x y : A) (ys : List A), red h op x (y :: ys) = red h op y (x :: ys)
  | x, y, [] => comm (h x) (h y)
  | x, y, z :: zs =>
      Eq.trans (assoc (h x) (h y) (red h op z zs)).symm
        (Eq.trans (congrArg (fun v => op v (red h op z zs)) (comm (h x) (h y)))
          (assoc (h y) (h x) (red h op z zs)))

end Pvcert.ShapeReduction
