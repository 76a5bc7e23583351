/-
Shape reduction of map axes.  Port of agda/ShapeReduction/MapAxis.agda,
statement by statement.  Core Lean only.

A tensor is seen through its slices along one axis (`Fin n → A`; A holds the
rest of the tensor and the other inputs).  The axis is cut into r regions;
`reg : Fin n → Fin r` gives the region of each index.  A map-axis obligation
computes output element i from input element i by one per-region function,
the same at every size.  Section 4 states it for whole cones in the checker's
coordinates: element = (region, offset within the region).
-/
import Pvcert.Vec

namespace Pvcert.ShapeReduction.MapAxis

open Pvcert

/-! ## 1. Map-axis functions -/

/-- Agda: `Family` (the size n is explicit here) -/
abbrev Family (r : Nat) (A B : Type) : Type :=
  (n : Nat) → (Fin n → Fin r) → (Fin n → A) → Fin n → B

/-- Agda: `Map` -/
def Map {r : Nat} {A B : Type} (f : Fin r → A → B) : Family r A B :=
  fun _ reg x i => f (reg i) (x i)

/-- Agda: `IsMap` -/
abbrev IsMap {r : Nat} {A B : Type} (F : Family r A B) : Prop :=
  ∃ f : Fin r → A → B, ∀ (n : Nat) (reg : Fin n → Fin r) (x : Fin n → A) (i : Fin n),
    F n reg x i = Map f n reg x i

/-- Agda: `Map-map` -/
theorem Map_map {r : Nat} {A B : Type} (f : Fin r → A → B) : IsMap (Map f) :=
  ⟨f, fun _ _ _ _ => rfl⟩

/-- Agda: `map-compose` -/
theorem map_compose {r : Nat} {A B C : Type} {F : Family r A B} {G : Family r B C}
    (hF : IsMap F) (hG : IsMap G) : IsMap (fun n reg x => G n reg (F n reg x)) :=
  match hF, hG with
  | ⟨f, pf⟩, ⟨g, pg⟩ =>
    ⟨fun k a => g k (f k a), fun n reg x i =>
      (pg n reg (F n reg x) i).trans (congrArg (g (reg i)) (pf n reg x i))⟩

/-- Agda: `map-pair` -/
theorem map_pair {r : Nat} {A B C : Type} {F : Family r A B} {G : Family r A C}
    (hF : IsMap F) (hG : IsMap G) : IsMap (fun n reg x i => (F n reg x i, G n reg x i)) :=
  match hF, hG with
  | ⟨f, pf⟩, ⟨g, pg⟩ =>
    ⟨fun k a => (f k a, g k a), fun n reg x i =>
      congr (congrArg Prod.mk (pf n reg x i)) (pg n reg x i)⟩

/-- Agda: `map-coarsen` -/
theorem map_coarsen {r r₁ : Nat} {A B : Type} (π : Fin r → Fin r₁) {F : Family r₁ A B}
    (hF : IsMap F) : IsMap (fun n reg => F n (fun i => π (reg i))) :=
  match hF with
  | ⟨f, pf⟩ => ⟨fun k => f (π k), fun n reg => pf n (fun i => π (reg i))⟩

/-! ## 2. The reduction theorem -/

/-- Agda: `Covers` (a Subtype, so that the chosen index is data, as the Agda Σ) -/
abbrev Covers {n n' r : Nat} (reg' : Fin n' → Fin r) (reg : Fin n → Fin r) : Type :=
  (i : Fin n) → { j : Fin n' // reg' j = reg i }

/-- Agda: `Holds` -/
abbrev Holds {n r : Nat} {A : Type} (P : Fin r → A → Prop) (reg : Fin n → Fin r) (x : Fin n → A) : Prop :=
  ∀ i, P (reg i) (x i)

/-- Agda: `pick` -/
def pick {n n' : Nat} (back : Fin n' → Fin n) (j₀ : Fin n') (i : Fin n) (j : Fin n') : Fin n :=
  if j = j₀ then i else back j

/-- Agda: `pick-at` -/
theorem pick_at {n n' : Nat} (back : Fin n' → Fin n) (j₀ : Fin n') (i : Fin n) :
    pick back j₀ i j₀ = i := by
  show (if j₀ = j₀ then i else back j₀) = i
  exact if_pos rfl

/-- Agda: `pick-reg` -/
theorem pick_reg {n n' r : Nat} (reg : Fin n → Fin r) (reg' : Fin n' → Fin r) (back : Fin n' → Fin n)
    (eb : ∀ j, reg (back j) = reg' j) (j₀ : Fin n') (i : Fin n) (e : reg' j₀ = reg i) :
    ∀ j, reg (pick back j₀ i j) = reg' j := by
  intro j
  show reg (if j = j₀ then i else back j) = reg' j
  by_cases h : j = j₀
  · rw [if_pos h, h]
    exact e.symm
  · rw [if_neg h]
    exact eb j

/-- Agda: `map-reduction` -/
theorem map_reduction {r : Nat} {A B : Type} {F G : Family r A B} (P : Fin r → A → Prop)
    (hF : IsMap F) (hG : IsMap G) {n n' : Nat} (reg : Fin n → Fin r) (reg' : Fin n' → Fin r)
    (cov : Covers reg' reg) (back : Covers reg reg')
    (small : ∀ x', Holds P reg' x' → ∀ j, F n' reg' x' j = G n' reg' x' j) :
    ∀ x, Holds P reg x → ∀ i, F n reg x i = G n reg x i := by
  intro x hx i
  obtain ⟨f, pf⟩ := hF
  obtain ⟨g, pg⟩ := hG
  obtain ⟨j₀, e⟩ := cov i
  have er := pick_reg reg reg' (fun j => (back j).val) (fun j => (back j).property) j₀ i e
  have hx' : Holds P reg' (fun j => x (pick (fun j => (back j).val) j₀ i j)) := by
    intro j
    have h := hx (pick (fun j => (back j).val) j₀ i j)
    rw [er j] at h
    exact h
  have at' : x (pick (fun j => (back j).val) j₀ i j₀) = x i :=
    congrArg x (pick_at (fun j => (back j).val) j₀ i)
  have hs := small _ hx' j₀
  rw [pf n reg x i, pg n reg x i]
  rw [pf n' reg' _ j₀, pg n' reg' _ j₀] at hs
  have hs' : f (reg' j₀) (x (pick (fun j => (back j).val) j₀ i j₀)) =
             g (reg' j₀) (x (pick (fun j => (back j).val) j₀ i j₀)) := hs
  rw [e, at'] at hs'
  exact hs'

/-- Agda: `map-reduction₀` -/
theorem map_reduction₀ {r : Nat} {A B : Type} {F G : Family r A B} (hF : IsMap F) (hG : IsMap G)
    {n n' : Nat} (reg : Fin n → Fin r) (reg' : Fin n' → Fin r) (cov : Covers reg' reg)
    (small : ∀ x' j, F n' reg' x' j = G n' reg' x' j) : ∀ x i, F n reg x i = G n reg x i := by
  intro x i
  obtain ⟨f, pf⟩ := hF
  obtain ⟨g, pg⟩ := hG
  obtain ⟨j₀, e⟩ := cov i
  have hs := small (fun _ => x i) j₀
  rw [pf n' reg' _ j₀, pg n' reg' _ j₀] at hs
  have hs' : f (reg' j₀) (x i) = g (reg' j₀) (x i) := hs
  rw [e] at hs'
  rw [pf n reg x i, pg n reg x i]
  exact hs'

/-! ## 3. Regions given by their lengths (on natural-number indices here) -/

/-- Agda: `sum` of the region lengths -/
def total : List Nat → Nat
  | [] => 0
  | l :: ls => l + total ls

/-- Agda: `lookup` of a region length (0 past the end) -/
def lenAt : List Nat → Nat → Nat
  | [], _ => 0
  | l :: _, 0 => l
  | _ :: ls, k + 1 => lenAt ls k

/-- Agda: `regionOf` -/
def regionOf : List Nat → Nat → Nat
  | [], _ => 0
  | l :: ls, i => if i < l then 0 else regionOf ls (i - l) + 1

/-- Agda: `regionOf-nonempty` -/
theorem regionOf_nonempty : ∀ (ls : List Nat) (i : Nat), i < total ls → 1 ≤ lenAt ls (regionOf ls i)
  | [], i, h => absurd h (Nat.not_lt_zero i)
  | l :: ls, i, h => by
    show 1 ≤ lenAt (l :: ls) (if i < l then 0 else regionOf ls (i - l) + 1)
    by_cases hl : i < l
    · rw [if_pos hl]
      show 1 ≤ l
      omega
    · rw [if_neg hl]
      show 1 ≤ lenAt ls (regionOf ls (i - l))
      have h' : i < l + total ls := h
      exact regionOf_nonempty ls (i - l) (by omega)

/-- Agda: `regionOf-hits` -/
theorem regionOf_hits : ∀ (ls : List Nat) (k : Nat), 1 ≤ lenAt ls k → ∃ i, i < total ls ∧ regionOf ls i = k
  | [], _, h => absurd (h : 1 ≤ 0) (by decide)
  | l :: ls, 0, h => by
    have hl : 1 ≤ l := h
    refine ⟨0, ?_, ?_⟩
    · show 0 < l + total ls
      omega
    · show (if 0 < l then 0 else regionOf ls (0 - l) + 1) = 0
      rw [if_pos (show 0 < l by omega)]
  | l :: ls, k + 1, h => by
    obtain ⟨j, hj, e⟩ := regionOf_hits ls k h
    refine ⟨l + j, ?_, ?_⟩
    · show l + j < l + total ls
      omega
    · show (if l + j < l then 0 else regionOf ls (l + j - l) + 1) = k + 1
      rw [if_neg (show ¬ (l + j < l) by omega), Nat.add_sub_cancel_left, e]

/-- Agda: `regions-cover` -/
theorem regions_cover (ls ls' : List Nat) (ne : ∀ k, 1 ≤ lenAt ls k → 1 ≤ lenAt ls' k) :
    ∀ i, i < total ls → ∃ j, j < total ls' ∧ regionOf ls' j = regionOf ls i :=
  fun i h => regionOf_hits ls' (regionOf ls i) (ne _ (regionOf_nonempty ls i h))

/-! ## 4. Cones, in the checker's coordinates: element = (region, offset) -/

/-- Agda: `Cone.Op` (regions are `Idx r`, names natural numbers, lengths `Nat → Idx r → Nat`) -/
structure Op (V : Type) (r : Nat) where
  out : Nat
  ins : List Nat
  fn : (Nat → Idx r → Nat) → List (Idx r → Nat → V) → Idx r → Nat → V
  φ : Idx r → List (Vec V r) → V
  is_map : ∀ (len : Nat → Idx r → Nat) (xs : List (Idx r → Nat → V)) (k : Idx r) (t : Nat),
    fn len xs k t = φ k (xs.map (fun x => Vec.tabulate (fun k' => x k' t)))

section Cone
variable {V : Type} {r : Nat}

/-- Agda: `Cone.upd` -/
def upd {T : Type} (ρ : Nat → T) (a : Nat) (v : T) : Nat → T :=
  fun m => if m = a then v else ρ m

/-- Agda: `Cone.col` -/
def col (ρ : Nat → Idx r → Nat → V) (t : Nat) : Nat → Vec V r :=
  fun m => Vec.tabulate (fun k => ρ m k t)

/-- Agda: `Cone.exec` -/
def exec (len : Nat → Idx r → Nat) (o : Op V r) (ρ : Nat → Idx r → Nat → V) : Nat → Idx r → Nat → V :=
  upd ρ o.out (o.fn len (o.ins.map ρ))

/-- Agda: `Cone.run` -/
def run (len : Nat → Idx r → Nat) : List (Op V r) → (Nat → Idx r → Nat → V) → Nat → Idx r → Nat → V
  | [], ρ => ρ
  | o :: os, ρ => run len os (exec len o ρ)

/-- Agda: `Cone.execC` -/
def execC (o : Op V r) (c : Nat → Vec V r) : Nat → Vec V r :=
  upd c o.out (Vec.tabulate (fun k => o.φ k (o.ins.map c)))

/-- Agda: `Cone.runC` -/
def runC : List (Op V r) → (Nat → Vec V r) → Nat → Vec V r
  | [], c => c
  | o :: os, c => runC os (execC o c)

/-- `map-cong` of agda-stdlib (no function extensionality) -/
theorem map_congr' {α β : Type} {f g : α → β} (e : ∀ a, f a = g a) : ∀ l : List α, l.map f = l.map g
  | [] => rfl
  | a :: l => by
    show f a :: l.map f = g a :: l.map g
    rw [e a, map_congr' e l]

/-- `tabulate-cong` of agda-stdlib -/
theorem tabulate_congr {α : Type} {n : Nat} {f g : Idx n → α} (h : ∀ i, f i = g i) :
    Vec.tabulate f = Vec.tabulate g :=
  Vec.ext _ _ (fun i => (Vec.get_tabulate f i).trans ((h i).trans (Vec.get_tabulate g i).symm))

/-- Agda: `Cone.runC-cong` -/
theorem runC_cong : ∀ (os : List (Op V r)) (c c' : Nat → Vec V r),
    (∀ m, c m = c' m) → ∀ m, runC os c m = runC os c' m
  | [], _, _, e => e
  | o :: os, c, c', e => runC_cong os (execC o c) (execC o c') (fun m => by
      show (if m = o.out then Vec.tabulate (fun k => o.φ k (o.ins.map c)) else c m) =
           (if m = o.out then Vec.tabulate (fun k => o.φ k (o.ins.map c')) else c' m)
      by_cases h : m = o.out
      · rw [if_pos h, if_pos h, map_congr' e o.ins]
      · rw [if_neg h, if_neg h]
        exact e m)

/-- Agda: `Cone.col-exec` -/
theorem col_exec (len : Nat → Idx r → Nat) (o : Op V r) (ρ : Nat → Idx r → Nat → V) (t m : Nat) :
    col (exec len o ρ) t m = execC o (col ρ t) m := by
  show Vec.tabulate (fun k => (if m = o.out then o.fn len (o.ins.map ρ) else ρ m) k t) =
       (if m = o.out then Vec.tabulate (fun k => o.φ k (o.ins.map (col ρ t)))
        else Vec.tabulate (fun k => ρ m k t))
  by_cases h : m = o.out
  · rw [if_pos h, if_pos h]
    exact tabulate_congr (fun k => by
      show o.fn len (o.ins.map ρ) k t = o.φ k (o.ins.map (col ρ t))
      rw [o.is_map len (o.ins.map ρ) k t, List.map_map] <;> rfl)
  · rw [if_neg h, if_neg h]

/-- Agda: `Cone.cone-map` -/
theorem cone_map (len : Nat → Idx r → Nat) : ∀ (os : List (Op V r)) (ρ : Nat → Idx r → Nat → V)
    (m : Nat) (k : Idx r) (t : Nat), run len os ρ m k t = Vec.get (runC os (col ρ t) m) k
  | [], ρ, m, k, t => (Vec.get_tabulate (fun k => ρ m k t) k).symm
  | o :: os, ρ, m, k, t =>
    (cone_map len os (exec len o ρ) m k t).trans
      (congrArg (fun v => Vec.get v k) (runC_cong os _ _ (col_exec len o ρ t) m))

/-- Agda: `Cone.flat` (an environment constant along the axis) -/
def flat (c : Nat → Idx r → V) : Nat → Idx r → Nat → V := fun m k _ => c m k

/-- Agda: `Cone.cone-reduction` -/
theorem cone_reduction (os : List (Op V r)) (a b : Nat) (P : (Nat → Vec V r) → Prop)
    (len len' : Nat → Idx r → Nat) (ne : ∀ k, 1 ≤ len a k → 1 ≤ len' a k)
    (small : ∀ c : Nat → Idx r → V, P (col (flat c) 0) →
      ∀ k s, s < len' a k → run len' os (flat c) a k s = run len' os (flat c) b k s) :
    ∀ ρ : Nat → Idx r → Nat → V, (∀ t, P (col ρ t)) →
      ∀ k t, t < len a k → run len os ρ a k t = run len os ρ b k t := by
  intro ρ hρ k t lt
  have h := small (fun m k => ρ m k t) (hρ t) k 0 (ne k (by omega))
  rw [cone_map len' os _ a k 0, cone_map len' os _ b k 0] at h
  rw [cone_map len os ρ a k t, cone_map len os ρ b k t]
  exact h

end Cone

/-! ## 5. Summed axes are not covered -/

/-- Agda: `sumF` (sum along a non-empty axis of length n + 1) -/
def sumF : (n : Nat) → (Fin (n + 1) → Nat) → Nat
  | 0, x => x ⟨0, Nat.succ_pos 0⟩
  | n + 1, x => x ⟨0, Nat.succ_pos (n + 1)⟩ + sumF n (fun i => x i.succ)

/-- Agda: `trapL` (p₁³ + 2 p₃) -/
def trapL (n : Nat) (x : Fin (n + 1) → Nat) : Nat :=
  sumF n x * sumF n x * sumF n x + 2 * sumF n (fun i => x i * x i * x i)

/-- Agda: `trapR` (3 p₁ p₂) -/
def trapR (n : Nat) (x : Fin (n + 1) → Nat) : Nat :=
  3 * sumF n x * sumF n (fun i => x i * x i)

/-- Agda: `e₃-vanishes` -/
theorem e3_vanishes (a b : Nat) :
    (a + b) * (a + b) * (a + b) + 2 * (a * a * a + b * b * b) = 3 * (a + b) * (a * a + b * b) := by
  have three : ∀ t : Nat, 3 * t = t + (t + t) := fun t => by omega
  rw [Nat.two_mul, three]
  simp only [Nat.add_mul, Nat.mul_add]
  first
  | ac_rfl
  | simp only [Nat.mul_comm, Nat.mul_assoc, Nat.mul_left_comm, Nat.add_comm, Nat.add_assoc, Nat.add_left_comm]

/-- Agda: `trap-size2` -/
theorem trap_size2 (x : Fin 2 → Nat) : trapL 1 x = trapR 1 x :=
  e3_vanishes (x ⟨0, by decide⟩) (x ⟨1, by decide⟩)

/-- Agda: `trap-size3` (33 ≠ 27) -/
theorem trap_size3 : trapL 2 (fun _ => 1) ≠ trapR 2 (fun _ => 1) := by decide

/-- Agda: `summed-not-covered` -/
theorem summed_not_covered :
    ¬ (∀ F G : (n : Nat) → (Fin (n + 1) → Nat) → Nat,
        (∀ x, F 1 x = G 1 x) → ∀ x, F 2 x = G 2 x) :=
  fun claim => trap_size3 (claim trapL trapR trap_size2 (fun _ => 1))

end Pvcert.ShapeReduction.MapAxis
