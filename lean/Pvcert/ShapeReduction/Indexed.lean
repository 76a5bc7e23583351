/-
Shape reduction of an axis whose rows are addressed by integer values.  Port of
agda/ShapeReduction/Indexed.agda, statement by statement.  Core Lean only.

The axis and the values that index it are cut into blocks of g rows; a row or a
value is a block and an offset in `Fin g`.  An instance at grain n (a stage's
inputs and one output element) uses some offsets (its values', its row's, 0).
Removing an offset `u` it does not use from every block pulls it back to grain
n - 1; the stage is natural when a pulled instance holds only if the instance
does.  Then the claim at grain n for every instance gives it at every grain
k + n for the instances using at most n offsets (`reduction`).  The membership
and list lemmas of agda-stdlib the Agda proof cites are proved here.
-/
namespace Pvcert.ShapeReduction.Indexed

/-! ## 1. Fewer than m offsets miss one of `Fin m` (a pigeonhole) -/

/-- Agda: `drop0`, the nonzero offsets of a list, one lower -/
def drop0 {m : Nat} : List (Fin (m + 1)) → List (Fin m)
  | [] => []
  | x :: L => if h : x.val = 0 then drop0 L else ⟨x.val - 1, by have := x.isLt; omega⟩ :: drop0 L

/-- Agda: `drop0-≤` -/
theorem drop0_le {m : Nat} : ∀ L : List (Fin (m + 1)), (drop0 L).length ≤ L.length
  | [] => Nat.le_refl _
  | x :: L => by
    unfold drop0
    split
    · exact Nat.le_succ_of_le (drop0_le L)
    · exact Nat.succ_le_succ (drop0_le L)

/-- Agda: `drop0-<` -/
theorem drop0_lt {m : Nat} : ∀ {L : List (Fin (m + 1))}, (0 : Fin (m + 1)) ∈ L → (drop0 L).length < L.length
  | [], h => absurd h (List.not_mem_nil _)
  | x :: L, h => by
    unfold drop0
    split
    · exact Nat.lt_succ_of_le (drop0_le L)
    · rename_i hx
      cases List.mem_cons.mp h with
      | inl e => exact absurd (congrArg Fin.val e) (by simp; omega)
      | inr t => exact Nat.succ_lt_succ (drop0_lt t)

/-- Agda: `drop0-∈` -/
theorem drop0_mem {m : Nat} {x : Fin m} : ∀ {L : List (Fin (m + 1))}, x.succ ∈ L → x ∈ drop0 L
  | [], h => absurd h (List.not_mem_nil _)
  | y :: L, h => by
    unfold drop0
    cases List.mem_cons.mp h with
    | inl e =>
      have hy : y.val = x.val + 1 := by rw [← e]; simp
      split
      · omega
      · exact List.mem_cons.mpr (Or.inl (Fin.ext (by simp; omega)))
    | inr t =>
      split
      · exact drop0_mem t
      · exact List.mem_cons_of_mem _ (drop0_mem t)

/-- Agda: `missing` -/
theorem missing : ∀ {m : Nat} (L : List (Fin m)), L.length < m → ∃ u, u ∉ L
  | 0, _, h => absurd h (Nat.not_lt_zero _)
  | m + 1, L, h => by
    by_cases z : (0 : Fin (m + 1)) ∈ L
    · obtain ⟨u, hu⟩ := missing (drop0 L) (Nat.lt_of_lt_of_le (drop0_lt z) (Nat.le_of_lt_succ h))
      exact ⟨u.succ, fun s => hu (drop0_mem s)⟩
    · exact ⟨0, z⟩

/-! ## 2. Natural stages reduce -/

/-- Agda: the record `Indexed` -/
structure Indexed where
  Inst : Nat → Type
  used : ∀ {n}, Inst n → List (Fin n)
  Holds : ∀ {n}, Inst n → Prop
  pull : ∀ {n} (u : Fin (n + 1)) (i : Inst (n + 1)), u ∉ used i → Inst n
  pull_used : ∀ {n} u (i : Inst (n + 1)) p, (used (pull (n := n) u i p)).length ≤ (used i).length
  natural : ∀ {n} u (i : Inst (n + 1)) p, Holds (pull (n := n) u i p) → Holds i

/-- Agda: `reduction` (grain `n + k` here: Lean's `+` recurses on its second argument, Agda's on its first) -/
theorem reduction (F : Indexed) {n : Nat} (all : ∀ i : F.Inst n, F.Holds i) :
    ∀ k (i : F.Inst (n + k)), (F.used i).length ≤ n → F.Holds i
  | 0, i, _ => all i
  | k + 1, i, p =>
    match missing (F.used i) (Nat.lt_succ_of_le (Nat.le_trans p (Nat.le_add_right n k))) with
    | ⟨u, hu⟩ => F.natural u i hu (reduction F all k (F.pull u i hu) (Nat.le_trans (F.pull_used u i hu) p))

end Pvcert.ShapeReduction.Indexed
