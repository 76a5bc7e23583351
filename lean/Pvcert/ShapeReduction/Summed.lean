/-
Shape reduction of summed axes.  Port of agda/ShapeReduction/Summed.agda,
statement by statement.  Core Lean only.

Fix one summed axis class (a matmul contraction, a plain sum), cut into r
regions.  At scale s region R has s * m R slices; a slice (type A) holds every
input variable at one offset, y : Y the inputs not on the axis, P R the
per-slice assumption.  The checker relies on the affine-separable form
    E s y x = G y + Σ_R Σ_{t < s * m R} Δ R y (x R t)
with G and Δ independent of s (`Affine`; closed under the operations of
section 2).  In a torsion-free commutative ring, an obligation that vanishes on
every valid input at two different scales vanishes at every scale s ≥ 1
(`two_scales`); one scale is not enough (`one_scale_not_enough`).

The Agda module parameter (a commutative ring, equality its setoid's) becomes
the fields of `Ring` with Lean's `=`: only the laws the proofs use.  The
agda-stdlib lemmas the Agda proofs cite (sums, multiples `_×_`, group laws)
are proved here from them.  The parameters of the Agda module `Axis` are
bundled in the structure `Axis`; `ΣΣ` is `sumsum` (`Σ` is reserved in Lean).
-/
namespace Pvcert.ShapeReduction.Summed

/-! ## 1. Sums and multiples -/

/-- Agda: the module parameter `K : CommutativeRing` (the laws used) -/
structure Ring where
  C : Type
  add : C → C → C
  mul : C → C → C
  neg : C → C
  zero : C
  add_assoc : ∀ a b d, add (add a b) d = add a (add b d)
  add_comm : ∀ a b, add a b = add b a
  zero_add : ∀ a, add zero a = a
  add_neg : ∀ a, add a (neg a) = zero
  mul_add : ∀ a b d, mul a (add b d) = add (mul a b) (mul a d)
  mul_zero : ∀ a, mul a zero = zero

section Sums
variable (K : Ring)

/-- agda-stdlib `+-identityʳ` -/
theorem add_zero (a : K.C) : K.add a K.zero = a :=
  (K.add_comm a K.zero).trans (K.zero_add a)

/-- agda-stdlib `-‿inverseˡ` -/
theorem neg_add_self (a : K.C) : K.add (K.neg a) a = K.zero :=
  (K.add_comm (K.neg a) a).trans (K.add_neg a)

/-- agda-stdlib `inverseʳ-unique` -/
theorem neg_unique {x y : K.C} (h : K.add x y = K.zero) : y = K.neg x :=
  calc y = K.add K.zero y := (K.zero_add y).symm
    _ = K.add (K.add (K.neg x) x) y := by rw [neg_add_self K x]
    _ = K.add (K.neg x) (K.add x y) := K.add_assoc _ _ _
    _ = K.add (K.neg x) K.zero := by rw [h]
    _ = K.neg x := add_zero K _

/-- agda-stdlib `⁻¹-involutive` -/
theorem neg_neg (z : K.C) : K.neg (K.neg z) = z :=
  (neg_unique K (neg_add_self K z)).symm

/-- agda-stdlib `ε⁻¹≈ε` -/
theorem neg_zero : K.neg K.zero = K.zero :=
  (neg_unique K (K.zero_add K.zero)).symm

/-- Agda: `+-interchange` -/
theorem add_interchange (a b d e : K.C) :
    K.add (K.add a b) (K.add d e) = K.add (K.add a d) (K.add b e) := by
  rw [K.add_assoc a b, ← K.add_assoc b d e, K.add_comm b d, K.add_assoc d b e,
    ← K.add_assoc a d]

/-- the rearrangement in the Agda `∑-upd` -/
theorem add_swap (a s b : K.C) : K.add (K.add a s) b = K.add (K.add b s) a :=
  (K.add_assoc a s b).trans
    ((congrArg (K.add a) (K.add_comm s b)).trans (K.add_comm a (K.add b s)))

/-- agda-stdlib `⁻¹-∙-comm` -/
theorem neg_add (x y : K.C) : K.add (K.neg x) (K.neg y) = K.neg (K.add x y) :=
  neg_unique K (by rw [add_interchange K, K.add_neg, K.add_neg, K.zero_add])

/-- Agda: agda-stdlib `_×_` (k × x: x added k times) -/
def nsmul : Nat → K.C → K.C
  | 0, _ => K.zero
  | k + 1, x => K.add x (nsmul k x)

/-- agda-stdlib `×-homo-+` -/
theorem nsmul_add (x : K.C) : ∀ a b : Nat, nsmul K (a + b) x = K.add (nsmul K a x) (nsmul K b x)
  | 0, b => by
    rw [Nat.zero_add]
    exact (K.zero_add _).symm
  | a + 1, b => by
    rw [Nat.add_right_comm a 1 b]
    show K.add x (nsmul K (a + b) x) = K.add (K.add x (nsmul K a x)) (nsmul K b x)
    rw [nsmul_add x a b, K.add_assoc]

/-- agda-stdlib `×-assocˡ` -/
theorem nsmul_mul (x : K.C) : ∀ a b : Nat, nsmul K a (nsmul K b x) = nsmul K (a * b) x
  | 0, b => (congrArg (fun k => nsmul K k x) (Nat.zero_mul b)).symm
  | a + 1, b => by
    rw [Nat.add_mul, Nat.one_mul, nsmul_add K x (a * b) b, ← nsmul_mul x a b]
    show K.add (nsmul K b x) (nsmul K a (nsmul K b x)) =
         K.add (nsmul K a (nsmul K b x)) (nsmul K b x)
    exact K.add_comm _ _

/-- agda-stdlib `×-distrib-+` -/
theorem nsmul_add_distrib (x y : K.C) :
    ∀ k : Nat, nsmul K k (K.add x y) = K.add (nsmul K k x) (nsmul K k y)
  | 0 => (K.zero_add K.zero).symm
  | k + 1 => by
    show K.add (K.add x y) (nsmul K k (K.add x y)) =
         K.add (K.add x (nsmul K k x)) (K.add y (nsmul K k y))
    rw [nsmul_add_distrib x y k]
    exact add_interchange K _ _ _ _

/-- Agda: `×-0` -/
theorem nsmul_zero : ∀ k : Nat, nsmul K k K.zero = K.zero
  | 0 => rfl
  | k + 1 => (congrArg (K.add K.zero) (nsmul_zero k)).trans (K.zero_add K.zero)

/-- Agda: `×-neg` -/
theorem nsmul_neg (k : Nat) (x : K.C) : nsmul K k (K.neg x) = K.neg (nsmul K k x) :=
  neg_unique K ((nsmul_add_distrib K x (K.neg x) k).symm.trans
    ((congrArg (nsmul K k) (K.add_neg x)).trans (nsmul_zero K k)))

/-- Agda: `∑` (agda-stdlib `sum`: f 0 + (f 1 + (… + 0))) -/
def sum : (n : Nat) → (Fin n → K.C) → K.C
  | 0, _ => K.zero
  | n + 1, f => K.add (f ⟨0, Nat.succ_pos n⟩) (sum n (fun i => f ⟨i.val + 1, Nat.succ_lt_succ i.isLt⟩))

/-- Agda: `∑-cong` -/
theorem sum_cong : ∀ (n : Nat) (f g : Fin n → K.C), (∀ i, f i = g i) → sum K n f = sum K n g
  | 0, _, _, _ => rfl
  | n + 1, f, g, h => by
    show K.add (f ⟨0, Nat.succ_pos n⟩) (sum K n (fun i => f ⟨i.val + 1, Nat.succ_lt_succ i.isLt⟩)) =
         K.add (g ⟨0, Nat.succ_pos n⟩) (sum K n (fun i => g ⟨i.val + 1, Nat.succ_lt_succ i.isLt⟩))
    rw [h ⟨0, Nat.succ_pos n⟩, sum_cong n (fun i => f ⟨i.val + 1, Nat.succ_lt_succ i.isLt⟩)
      (fun i => g ⟨i.val + 1, Nat.succ_lt_succ i.isLt⟩) (fun i => h ⟨i.val + 1, Nat.succ_lt_succ i.isLt⟩)]

/-- Agda: `∑-+` -/
theorem sum_add : ∀ (n : Nat) (f g : Fin n → K.C),
    sum K n (fun i => K.add (f i) (g i)) = K.add (sum K n f) (sum K n g)
  | 0, _, _ => (K.zero_add K.zero).symm
  | n + 1, f, g =>
    (congrArg (K.add (K.add (f ⟨0, Nat.succ_pos n⟩) (g ⟨0, Nat.succ_pos n⟩)))
      (sum_add n (fun i => f ⟨i.val + 1, Nat.succ_lt_succ i.isLt⟩)
        (fun i => g ⟨i.val + 1, Nat.succ_lt_succ i.isLt⟩))).trans
      (add_interchange K _ _ _ _)

/-- Agda: `∑-const` -/
theorem sum_const : ∀ (n : Nat) (x : K.C), sum K n (fun _ => x) = nsmul K n x
  | 0, _ => rfl
  | n + 1, x => congrArg (K.add x) (sum_const n x)

/-- Agda: `∑-0` -/
theorem sum_zero : ∀ n : Nat, sum K n (fun _ => K.zero) = K.zero
  | 0 => rfl
  | n + 1 => (congrArg (K.add K.zero) (sum_zero n)).trans (K.zero_add K.zero)

/-- Agda: `∑-neg` -/
theorem sum_neg : ∀ (n : Nat) (f : Fin n → K.C),
    sum K n (fun i => K.neg (f i)) = K.neg (sum K n f)
  | 0, _ => (neg_zero K).symm
  | n + 1, f =>
    (congrArg (K.add (K.neg (f ⟨0, Nat.succ_pos n⟩)))
      (sum_neg n (fun i => f ⟨i.val + 1, Nat.succ_lt_succ i.isLt⟩))).trans (neg_add K _ _)

/-- Agda: `∑-*` -/
theorem sum_mul (a : K.C) : ∀ (n : Nat) (f : Fin n → K.C),
    sum K n (fun i => K.mul a (f i)) = K.mul a (sum K n f)
  | 0, _ => (K.mul_zero a).symm
  | n + 1, f =>
    (congrArg (K.add (K.mul a (f ⟨0, Nat.succ_pos n⟩)))
      (sum_mul a n (fun i => f ⟨i.val + 1, Nat.succ_lt_succ i.isLt⟩))).trans (K.mul_add a _ _).symm

/-- Agda: `∑-×` -/
theorem sum_nsmul (k : Nat) : ∀ (n : Nat) (f : Fin n → K.C),
    sum K n (fun i => nsmul K k (f i)) = nsmul K k (sum K n f)
  | 0, _ => (nsmul_zero K k).symm
  | n + 1, f =>
    (congrArg (K.add (nsmul K k (f ⟨0, Nat.succ_pos n⟩)))
      (sum_nsmul k n (fun i => f ⟨i.val + 1, Nat.succ_lt_succ i.isLt⟩))).trans
      (nsmul_add_distrib K _ _ k).symm

/-- Agda: `upd` (entry i of c replaced by v) -/
def upd {T : Type} {n : Nat} (c : Fin n → T) (i : Fin n) (v : T) (j : Fin n) : T :=
  if j = i then v else c j

theorem upd_eq {T : Type} {n : Nat} (c : Fin n → T) (i : Fin n) (v : T) : upd c i v i = v := by
  show (if i = i then v else c i) = v
  exact if_pos rfl

theorem upd_ne {T : Type} {n : Nat} (c : Fin n → T) (i : Fin n) (v : T) (j : Fin n) (h : j ≠ i) :
    upd c i v j = c j := by
  show (if j = i then v else c j) = c j
  exact if_neg h

/-- Agda: `upd-all` -/
theorem upd_all {T : Type} {n : Nat} (Q : Fin n → T → Prop) (c : Fin n → T) (i : Fin n) (v : T)
    (hc : ∀ j, Q j (c j)) (hv : Q i v) : ∀ j, Q j (upd c i v j) := by
  intro j
  by_cases h : j = i
  · rw [h, upd_eq]
    exact hv
  · rw [upd_ne c i v j h]
    exact hc j

/-- two sums whose summands agree except at i differ by the summands at i -/
theorem sum_except : ∀ (n : Nat) (f f' : Fin n → K.C) (i : Fin n), (∀ j, j ≠ i → f j = f' j) →
    K.add (sum K n f) (f' i) = K.add (sum K n f') (f i)
  | 0, _, _, i, _ => absurd i.isLt (Nat.not_lt_zero _)
  | n + 1, f, f', ⟨0, h0⟩, hf => by
    have e : sum K n (fun j => f ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩) =
             sum K n (fun j => f' ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩) :=
      sum_cong K n _ _ (fun j => hf ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩
        (fun e => Nat.succ_ne_zero j.val (congrArg Fin.val e)))
    show K.add (K.add (f ⟨0, h0⟩) (sum K n (fun j => f ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩)))
               (f' ⟨0, h0⟩) =
         K.add (K.add (f' ⟨0, h0⟩) (sum K n (fun j => f' ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩)))
               (f ⟨0, h0⟩)
    rw [e]
    exact add_swap K _ _ _
  | n + 1, f, f', ⟨k + 1, hk⟩, hf => by
    have e0 : f ⟨0, Nat.succ_pos n⟩ = f' ⟨0, Nat.succ_pos n⟩ :=
      hf ⟨0, Nat.succ_pos n⟩ (fun e => Nat.succ_ne_zero k (congrArg Fin.val e).symm)
    have ih := sum_except n (fun j => f ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩)
      (fun j => f' ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩) ⟨k, Nat.lt_of_succ_lt_succ hk⟩
      (fun j hj => hf ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩
        (fun e => hj (Fin.eq_of_val_eq (Nat.succ.inj (congrArg Fin.val e)))))
    show K.add (K.add (f ⟨0, Nat.succ_pos n⟩)
                 (sum K n (fun j => f ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩))) (f' ⟨k + 1, hk⟩) =
         K.add (K.add (f' ⟨0, Nat.succ_pos n⟩)
                 (sum K n (fun j => f' ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩))) (f ⟨k + 1, hk⟩)
    calc _ = K.add (f ⟨0, Nat.succ_pos n⟩)
               (K.add (sum K n (fun j => f ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩)) (f' ⟨k + 1, hk⟩)) :=
          K.add_assoc _ _ _
      _ = K.add (f ⟨0, Nat.succ_pos n⟩)
               (K.add (sum K n (fun j => f' ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩)) (f ⟨k + 1, hk⟩)) :=
          congrArg (K.add _) ih
      _ = K.add (f' ⟨0, Nat.succ_pos n⟩)
               (K.add (sum K n (fun j => f' ⟨j.val + 1, Nat.succ_lt_succ j.isLt⟩)) (f ⟨k + 1, hk⟩)) := by
          rw [e0]
      _ = _ := (K.add_assoc _ _ _).symm

/-- Agda: `∑-upd` -/
theorem sum_upd {T : Type} (n : Nat) (g : Fin n → T → K.C) (c : Fin n → T) (i : Fin n) (v : T) :
    K.add (sum K n (fun j => g j (upd c i v j))) (g i (c i)) =
      K.add (sum K n (fun j => g j (c j))) (g i v) := by
  have h : K.add (sum K n (fun j => g j (upd c i v j))) (g i (c i)) =
      K.add (sum K n (fun j => g j (c j))) (g i (upd c i v i)) :=
    sum_except K n (fun j => g j (upd c i v j)) (fun j => g j (c j)) i
      (fun j hj => congrArg (g j) (upd_ne c i v j hj))
  rw [upd_eq c i v] at h
  exact h

/-- Agda: the module parameter `torsion-free` -/
def TorsionFree : Prop := ∀ (k : Nat) (x : K.C), nsmul K (k + 1) x = K.zero → x = K.zero

/-- Agda: `×-cancel` -/
theorem nsmul_cancel (tf : TorsionFree K) :
    ∀ (k : Nat), 1 ≤ k → ∀ (x z : K.C), nsmul K k x = nsmul K k z → x = z
  | 0, hk, _, _, _ => absurd hk (by decide)
  | j + 1, _, x, z, e => by
    have h : nsmul K (j + 1) (K.add x (K.neg z)) = K.zero := by
      rw [nsmul_add_distrib K x (K.neg z) (j + 1), e, nsmul_neg K (j + 1) z, K.add_neg]
    have h' : K.add (K.neg z) x = K.zero := (K.add_comm (K.neg z) x).trans (tf j _ h)
    exact (neg_unique K h').trans (neg_neg K z)

/-- Agda: `gap` -/
theorem gap {a b : Nat} (h : a < b) : ∃ k, b = a + (k + 1) := ⟨b - a - 1, by omega⟩

/-- Agda: `cancel<` -/
theorem cancel_lt (tf : TorsionFree K) (g d : K.C) (a k : Nat)
    (h₁ : K.add g (nsmul K (a + (k + 1)) d) = K.zero) (h₂ : K.add g (nsmul K a d) = K.zero) :
    d = K.zero := by
  apply tf k d
  rw [nsmul_add K d a (k + 1), ← K.add_assoc, h₂, K.zero_add] at h₁
  exact h₁

/-- Agda: `cancel` (g + s₁ × d = 0 and g + s₂ × d = 0 at s₁ ≠ s₂ force d = 0) -/
theorem cancel (tf : TorsionFree K) {s₁ s₂ : Nat} (hne : s₁ ≠ s₂) (g d : K.C)
    (h₁ : K.add g (nsmul K s₁ d) = K.zero) (h₂ : K.add g (nsmul K s₂ d) = K.zero) :
    d = K.zero := by
  by_cases lt : s₁ < s₂
  · obtain ⟨k, e⟩ := gap lt
    subst e
    exact cancel_lt K tf g d s₁ k h₂ h₁
  · obtain ⟨k, e⟩ := gap (show s₂ < s₁ by omega)
    subst e
    exact cancel_lt K tf g d s₂ k h₁ h₂

/-- Agda: `cancel-g` -/
theorem cancel_g (g d : K.C) (s : Nat) (hd : d = K.zero)
    (h : K.add g (nsmul K s d) = K.zero) : g = K.zero := by
  rw [hd, nsmul_zero K s, add_zero K g] at h
  exact h

end Sums

/-! ## 2. The affine-separable form and its closure -/

/-- Agda: the parameters of module `Axis` (ring, region lengths at scale 1, slice, rest) -/
structure Axis where
  K : Ring
  r : Nat
  m : Fin r → Nat
  A : Type
  Y : Type

section AxisSec
variable (X : Axis)

/-- Agda: `Input` (region R has s * m R slices) -/
abbrev Input (s : Nat) : Type := (R : Fin X.r) → Fin (s * X.m R) → X.A

/-- Agda: `Family` -/
abbrev Family : Type := (s : Nat) → X.Y → Input X s → X.K.C

/-- Agda: `ΣΣ` -/
def sumsum (Δ : Fin X.r → X.Y → X.A → X.K.C) (s : Nat) (y : X.Y) (x : Input X s) : X.K.C :=
  sum X.K X.r (fun R => sum X.K (s * X.m R) (fun t => Δ R y (x R t)))

/-- Agda: `Affine` (G and Δ do not depend on the scale) -/
structure Affine (E : Family X) where
  G : X.Y → X.K.C
  Δ : Fin X.r → X.Y → X.A → X.K.C
  form : ∀ (s : Nat) (y : X.Y) (x : Input X s), E s y x = X.K.add (G y) (sumsum X Δ s y x)

/-- Agda: `ΣΣ-+` -/
theorem sumsum_add (Δ₁ Δ₂ : Fin X.r → X.Y → X.A → X.K.C) (s : Nat) (y : X.Y) (x : Input X s) :
    sumsum X (fun R y v => X.K.add (Δ₁ R y v) (Δ₂ R y v)) s y x =
      X.K.add (sumsum X Δ₁ s y x) (sumsum X Δ₂ s y x) :=
  (sum_cong X.K X.r _ _ (fun R =>
      sum_add X.K (s * X.m R) (fun t => Δ₁ R y (x R t)) (fun t => Δ₂ R y (x R t)))).trans
    (sum_add X.K X.r (fun R => sum X.K (s * X.m R) (fun t => Δ₁ R y (x R t)))
      (fun R => sum X.K (s * X.m R) (fun t => Δ₂ R y (x R t))))

/-- Agda: `ΣΣ-0` -/
theorem sumsum_zero (s : Nat) (y : X.Y) (x : Input X s) :
    sumsum X (fun _ _ _ => X.K.zero) s y x = X.K.zero :=
  (sum_cong X.K X.r _ _ (fun R => sum_zero X.K (s * X.m R))).trans (sum_zero X.K X.r)

/-- Agda: `ΣΣ-neg` -/
theorem sumsum_neg (Δ : Fin X.r → X.Y → X.A → X.K.C) (s : Nat) (y : X.Y) (x : Input X s) :
    sumsum X (fun R y v => X.K.neg (Δ R y v)) s y x = X.K.neg (sumsum X Δ s y x) :=
  (sum_cong X.K X.r _ _ (fun R => sum_neg X.K (s * X.m R) (fun t => Δ R y (x R t)))).trans
    (sum_neg X.K X.r (fun R => sum X.K (s * X.m R) (fun t => Δ R y (x R t))))

/-- Agda: `ΣΣ-*` -/
theorem sumsum_mul (c : X.Y → X.K.C) (Δ : Fin X.r → X.Y → X.A → X.K.C) (s : Nat) (y : X.Y)
    (x : Input X s) :
    sumsum X (fun R y v => X.K.mul (c y) (Δ R y v)) s y x = X.K.mul (c y) (sumsum X Δ s y x) :=
  (sum_cong X.K X.r _ _ (fun R => sum_mul X.K (c y) (s * X.m R) (fun t => Δ R y (x R t)))).trans
    (sum_mul X.K (c y) X.r (fun R => sum X.K (s * X.m R) (fun t => Δ R y (x R t))))

/-- Agda: `affine-const` (a term without the axis: Δ = 0) -/
def affine_const (g : X.Y → X.K.C) : Affine X (fun _ y _ => g y) where
  G := g
  Δ := fun _ _ _ => X.K.zero
  form := fun s y x =>
    ((congrArg (X.K.add (g y)) (sumsum_zero X s y x)).trans (add_zero X.K (g y))).symm

/-- Agda: `affine-map` (a map-axis summand: G = 0) -/
def affine_map (f : Fin X.r → X.Y → X.A → X.K.C) : Affine X (sumsum X f) where
  G := fun _ => X.K.zero
  Δ := f
  form := fun s y x => (X.K.zero_add (sumsum X f s y x)).symm

/-- Agda: `affine-+` -/
def affine_add {E₁ E₂ : Family X} (a₁ : Affine X E₁) (a₂ : Affine X E₂) :
    Affine X (fun s y x => X.K.add (E₁ s y x) (E₂ s y x)) where
  G := fun y => X.K.add (a₁.G y) (a₂.G y)
  Δ := fun R y v => X.K.add (a₁.Δ R y v) (a₂.Δ R y v)
  form := fun s y x =>
    (congr (congrArg X.K.add (a₁.form s y x)) (a₂.form s y x)).trans
      ((add_interchange X.K _ _ _ _).trans
        (congrArg (X.K.add (X.K.add (a₁.G y) (a₂.G y))) (sumsum_add X a₁.Δ a₂.Δ s y x).symm))

/-- Agda: `affine-neg` -/
def affine_neg {E : Family X} (a : Affine X E) : Affine X (fun s y x => X.K.neg (E s y x)) where
  G := fun y => X.K.neg (a.G y)
  Δ := fun R y v => X.K.neg (a.Δ R y v)
  form := fun s y x =>
    (congrArg X.K.neg (a.form s y x)).trans
      ((neg_add X.K _ _).symm.trans
        (congrArg (X.K.add (X.K.neg (a.G y))) (sumsum_neg X a.Δ s y x).symm))

/-- Agda: `affine-*` (a factor not on the axis) -/
def affine_mul {E : Family X} (c : X.Y → X.K.C) (a : Affine X E) :
    Affine X (fun s y x => X.K.mul (c y) (E s y x)) where
  G := fun y => X.K.mul (c y) (a.G y)
  Δ := fun R y v => X.K.mul (c y) (a.Δ R y v)
  form := fun s y x =>
    (congrArg (X.K.mul (c y)) (a.form s y x)).trans
      ((X.K.mul_add _ _ _).trans
        (congrArg (X.K.add (X.K.mul (c y) (a.G y))) (sumsum_mul X c a.Δ s y x).symm))

/-- Agda: `affine-cong` -/
def affine_cong {E E' : Family X} (eq : ∀ s y x, E s y x = E' s y x) (a : Affine X E) :
    Affine X E' where
  G := a.G
  Δ := a.Δ
  form := fun s y x => (eq s y x).symm.trans (a.form s y x)

/-! ## 3. Two scales -/

/-- Agda: `Valid` (every slice satisfies the assumption) -/
def Valid (P : Fin X.r → X.A → Prop) (s : Nat) (x : Input X s) : Prop := ∀ R t, P R (x R t)

/-- Agda: `Holds` (the obligation holds at scale s) -/
def Holds (P : Fin X.r → X.A → Prop) (E : Family X) (s : Nat) : Prop :=
  ∀ (y : X.Y) (x : Input X s), Valid X P s x → E s y x = X.K.zero

/-- Agda: `flat` (every slice of region R is b R) -/
def flat (s : Nat) (b : Fin X.r → X.A) : Input X s := fun R _ => b R

/-- Agda: `C` (Σ_R m R × Δ R y (b R)) -/
def C (Δ : Fin X.r → X.Y → X.A → X.K.C) (y : X.Y) (b : Fin X.r → X.A) : X.K.C :=
  sum X.K X.r (fun R => nsmul X.K (X.m R) (Δ R y (b R)))

/-- Agda: `ΣΣ-flat` -/
theorem sumsum_flat (s : Nat) (Δ : Fin X.r → X.Y → X.A → X.K.C) (y : X.Y) (b : Fin X.r → X.A) :
    sumsum X Δ s y (flat X s b) = nsmul X.K s (C X Δ y b) :=
  (sum_cong X.K X.r _ _ (fun R =>
      (sum_const X.K (s * X.m R) (Δ R y (b R))).trans
        (nsmul_mul X.K (Δ R y (b R)) s (X.m R)).symm)).trans
    (sum_nsmul X.K s X.r (fun R => nsmul X.K (X.m R) (Δ R y (b R))))

/-- Agda: `first` -/
def first_slice (n : Nat) (h : 1 ≤ n) : Fin n := ⟨0, Nat.lt_of_lt_of_le Nat.zero_lt_one h⟩

/-- Agda: `at-flat` ((ii): at a flat input, E s is G + s × C) -/
theorem at_flat {E : Family X} (aff : Affine X E) (P : Fin X.r → X.A → Prop) {s : Nat}
    (h : Holds X P E s) (y : X.Y) (b : Fin X.r → X.A) (pb : ∀ R, P R (b R)) :
    X.K.add (aff.G y) (nsmul X.K s (C X aff.Δ y b)) = X.K.zero :=
  (congrArg (X.K.add (aff.G y)) (sumsum_flat X s aff.Δ y b).symm).trans
    ((aff.form s y (flat X s b)).symm.trans (h y (flat X s b) (fun R _ => pb R)))

/-- Agda: `C≈0` ((iii): two scales, a valid flat input) -/
theorem C_eq_zero (tf : TorsionFree X.K) {E : Family X} (aff : Affine X E)
    (P : Fin X.r → X.A → Prop) {s₁ s₂ : Nat} (hne : s₁ ≠ s₂)
    (h₁ : Holds X P E s₁) (h₂ : Holds X P E s₂) (y : X.Y) (b : Fin X.r → X.A)
    (pb : ∀ R, P R (b R)) : C X aff.Δ y b = X.K.zero :=
  cancel X.K tf hne (aff.G y) _ (at_flat X aff P h₁ y b pb) (at_flat X aff P h₂ y b pb)

/-- Agda: `G≈0` -/
theorem G_eq_zero (tf : TorsionFree X.K) {E : Family X} (aff : Affine X E)
    (P : Fin X.r → X.A → Prop) {s₁ s₂ : Nat} (hne : s₁ ≠ s₂)
    (h₁ : Holds X P E s₁) (h₂ : Holds X P E s₂) (y : X.Y) (b : Fin X.r → X.A)
    (pb : ∀ R, P R (b R)) : aff.G y = X.K.zero :=
  cancel_g X.K (aff.G y) _ s₁ (C_eq_zero X tf aff P hne h₁ h₂ y b pb) (at_flat X aff P h₁ y b pb)

/-- Agda: `Δ-flat` ((i): Δ R y is constant on the valid slices of a non-empty region) -/
theorem Δ_flat (tf : TorsionFree X.K) {E : Family X} (aff : Affine X E)
    (P : Fin X.r → X.A → Prop) {s₁ s₂ : Nat} (hne : s₁ ≠ s₂)
    (h₁ : Holds X P E s₁) (h₂ : Holds X P E s₂) (y : X.Y) (b : Fin X.r → X.A)
    (pb : ∀ R, P R (b R)) (R : Fin X.r) (hR : 1 ≤ X.m R) (v : X.A) (pv : P R v) :
    aff.Δ R y v = aff.Δ R y (b R) := by
  have pb' : ∀ R', P R' (upd b R v R') := upd_all P b R v pb pv
  have c' := C_eq_zero X tf aff P hne h₁ h₂ y (upd b R v) pb'
  have c := C_eq_zero X tf aff P hne h₁ h₂ y b pb
  have u := sum_upd X.K X.r (fun R' a => nsmul X.K (X.m R') (aff.Δ R' y a)) b R v
  apply nsmul_cancel X.K tf (X.m R) hR
  calc nsmul X.K (X.m R) (aff.Δ R y v) = X.K.add X.K.zero (nsmul X.K (X.m R) (aff.Δ R y v)) :=
        (X.K.zero_add _).symm
    _ = X.K.add (C X aff.Δ y b) (nsmul X.K (X.m R) (aff.Δ R y v)) := by rw [c]
    _ = X.K.add (C X aff.Δ y (upd b R v)) (nsmul X.K (X.m R) (aff.Δ R y (b R))) := u.symm
    _ = X.K.add X.K.zero (nsmul X.K (X.m R) (aff.Δ R y (b R))) := by rw [c']
    _ = nsmul X.K (X.m R) (aff.Δ R y (b R)) := X.K.zero_add _

/-- Agda: `two-scales`.  Checked at two different scales (any two, 0 included), the
obligation holds at every scale s ≥ 1 (regions non-empty). -/
theorem two_scales (tf : TorsionFree X.K) (P : Fin X.r → X.A → Prop) (hm : ∀ R, 1 ≤ X.m R)
    {E : Family X} (aff : Affine X E) {s₁ s₂ : Nat} (hne : s₁ ≠ s₂)
    (h₁ : Holds X P E s₁) (h₂ : Holds X P E s₂) (s : Nat) (hs : 1 ≤ s) : Holds X P E s := by
  intro y x px
  let b : Fin X.r → X.A := fun R => x R (first_slice (s * X.m R) (Nat.mul_le_mul hs (hm R)))
  have pb : ∀ R, P R (b R) := fun R => px R _
  have hflat : sumsum X aff.Δ s y x = sumsum X aff.Δ s y (flat X s b) :=
    sum_cong X.K X.r _ _ (fun R => sum_cong X.K (s * X.m R) _ _ (fun t =>
      Δ_flat X tf aff P hne h₁ h₂ y b pb R (hm R) (x R t) (px R t)))
  rw [aff.form s y x, hflat, sumsum_flat X s aff.Δ y b,
    G_eq_zero X tf aff P hne h₁ h₂ y b pb, C_eq_zero X tf aff P hne h₁ h₂ y b pb,
    nsmul_zero X.K s, X.K.zero_add]

end AxisSec

/-! ## 4. One scale is not enough: over the integers, one region of length 1, a slice
one integer, the obligation Σ_t (x_t + 1) = Σ_t x_t + 2 (G = -2, Δ = 1) holds at
scale 2 for every input and fails at scale 4. -/

/-- Agda: `Data.Integer.Properties.+-*-commutativeRing` (the laws used) -/
abbrev IntRing : Ring :=
  { C := Int
    add := fun a b => a + b
    mul := fun a b => a * b
    neg := fun a => -a
    zero := 0
    add_assoc := fun a b d => by show a + b + d = a + (b + d); omega
    add_comm := fun a b => by show a + b = b + a; omega
    zero_add := fun a => by show 0 + a = a; omega
    add_neg := fun a => by show a + -a = 0; omega
    mul_add := fun a b d => Int.mul_add a b d
    mul_zero := fun a => Int.mul_zero a }

/-- Agda: `Axis +-*-commutativeRing {1} (λ _ → 1) ℤ ⊤` -/
abbrev IntAxis : Axis := { K := IntRing, r := 1, m := fun _ => 1, A := Int, Y := Unit }

/-- Agda: `trap` (spec minus impl) -/
def trap : Family IntAxis := fun s y x =>
  IntRing.add (sumsum IntAxis (fun _ _ v => IntRing.add v (1 : Int)) s y x)
    (IntRing.neg (IntRing.add (sumsum IntAxis (fun _ _ v => v) s y x) (2 : Int)))

/-- Agda: `trap-affine` -/
def trap_affine : Affine IntAxis trap :=
  affine_add IntAxis (affine_map IntAxis (fun _ _ v => IntRing.add v (1 : Int)))
    (affine_neg IntAxis (affine_add IntAxis (affine_map IntAxis (fun _ _ v => v))
      (affine_const IntAxis (fun _ => (2 : Int)))))

/-- Agda: `trap-2` -/
theorem trap_2 : Holds IntAxis (fun _ _ => True) trap 2 := by
  intro y x _
  have key : ∀ a b : Int, a + 1 + (b + 1 + 0) + 0 + -(a + (b + 0) + 0 + 2) = 0 := by
    intro a b
    omega
  exact key (x ⟨0, Nat.zero_lt_one⟩ ⟨0, (by decide : 0 < 2)⟩)
    (x ⟨0, Nat.zero_lt_one⟩ ⟨1, (by decide : 1 < 2)⟩)

/-- Agda: `trap-4` (it is 2) -/
theorem trap_4 : trap 4 () (fun _ _ => (0 : Int)) ≠ (0 : Int) := by decide

/-- Agda: `one-scale-not-enough` -/
theorem one_scale_not_enough :
    ¬ (∀ E : Family IntAxis, Affine IntAxis E →
        Holds IntAxis (fun _ _ => True) E 2 → Holds IntAxis (fun _ _ => True) E 4) :=
  fun claim => trap_4 (claim trap trap_affine trap_2 () (fun _ _ => (0 : Int)) (fun _ _ => trivial))

end Pvcert.ShapeReduction.Summed
