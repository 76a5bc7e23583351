/-
Integers on intervals (certificates/intervals.py, `integer_cases` in certificates/refinement.py).
Port of agda/Composition/Intervals.agda, statement by statement.  Core Lean only (Int and omega).
-/
namespace Pvcert.Composition.Intervals

/-- Agda: `In` (the points of the box [lo, hi)) -/
def In (lo hi v : Int) : Prop := lo ≤ v ∧ v < hi

/-- Agda: `split` (deciding [lo, t) and [t, hi) decides [lo, hi)) -/
theorem split {P : Int → Prop} {lo hi : Int} (t : Int)
    (below : ∀ v, In lo t v → P v) (above : ∀ v, In t hi v → P v) : ∀ v, In lo hi v → P v := by
  intro v ⟨h1, h2⟩
  by_cases h : v < t
  · exact below v ⟨h1, h⟩
  · exact above v ⟨by omega, h2⟩

/-- Agda: `steady` (no edge strictly inside the box: v < e has the truth of lo < e) -/
theorem steady {lo hi e v : Int} (no : ¬ (lo < e ∧ e < hi)) (h : In lo hi v) : (v < e ↔ lo < e) := by
  obtain ⟨h1, h2⟩ := h
  constructor
  · intro hv
    by_cases hl : lo < e
    · exact hl
    · omega
  · intro hl
    have : hi ≤ e := by
      by_cases he : e < hi
      · exact absurd ⟨hl, he⟩ no
      · omega
    omega

/-- Agda: `window` (the rows of a table from a on) -/
def window {A : Type} (f : Int → A) (a i : Int) : A := f (a + i)

/-- Agda: `sel` (the row v + c is the element at v - lo of the window from lo + c) -/
theorem sel {A : Type} (f : Int → A) (lo c v : Int) : window f (lo + c) (v - lo) = f (v + c) := by
  unfold window
  congr 1
  omega

/-- Agda: `eq` (v + c = k exactly when v - lo = (k - c) - lo) -/
theorem eq (lo c v k : Int) : (v + c = k ↔ v - lo = (k - c) - lo) := by
  constructor <;> intro h <;> omega

end Pvcert.Composition.Intervals
