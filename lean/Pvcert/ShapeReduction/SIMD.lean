/-
Shape reduction for SIMD functions.  Port of agda/ShapeReduction/SIMD.agda
(TrainVerify, Appendix C, Definitions 10-12, 14-16, Claim 6, Lemmas 7-8,
Theorem 10, corrected), statement by statement.  Core Lean only.

A SIMD function with n-dimensional output, m-dimensional input and a kernel
of arity k is given by a kernel θ : Vec V k → V, the linear part M of its
affine dependency map (as its n columns) and k offsets b₁ … b_k; it computes
  y[i] = θ (x[M·i + b₁], …, x[M·i + b_k]).
-/
import Pvcert.Vec

namespace Pvcert.ShapeReduction

open Pvcert

/-! ## Indices -/

abbrev Index (m : Nat) := Vec Nat m

/-- Agda: `_⊞_` -/
def addI {m : Nat} (a b : Index m) : Index m := Vec.zipWith (fun x y => x + y) a b

/-- Agda: `0ᵢ` -/
def zeroI (m : Nat) : Index m := Vec.replicate 0 m

/-- Agda: `scale` -/
def scale {m : Nat} (c : Nat) (v : Index m) : Index m := Vec.map (fun x => c * x) v

/-- Agda: `_·_` (M given by its columns) -/
def linApp {m : Nat} : {n : Nat} → Vec (Index m) n → Index n → Index m
  | _, Vec.nil, Vec.nil => zeroI m
  | _, Vec.cons c M, Vec.cons x i => addI (scale x c) (linApp M i)

/-- Agda: `unit` -/
def unit : {n : Nat} → Idx n → Index n
  | _, @Idx.zero k => Vec.cons 1 (zeroI k)
  | _, Idx.succ j => Vec.cons 0 (unit j)

/-- Agda: `Corner` (the corners {0,1}^n) -/
abbrev Corner {n : Nat} (i : Index n) : Prop := ∀ c : Idx n, Vec.get i c ≤ 1

/-- Agda: `corner-0` -/
theorem corner_zero : {n : Nat} → (c : Idx n) → Vec.get (zeroI n) c ≤ 1
  | _, Idx.zero => Nat.zero_le 1
  | _, Idx.succ c => corner_zero c

/-- Agda: `corner-unit` -/
theorem corner_unit : {n : Nat} → (j c : Idx n) → Vec.get (unit j) c ≤ 1
  | _, Idx.zero, Idx.zero => Nat.le_refl 1
  | _, Idx.zero, Idx.succ c => corner_zero c
  | _, Idx.succ _, Idx.zero => Nat.zero_le 1
  | _, Idx.succ j, Idx.succ c => corner_unit j c

/-- Agda: `⊞-identityˡ` -/
theorem addI_zero_left : {m : Nat} → (b : Index m) → addI (zeroI m) b = b
  | _, Vec.nil => rfl
  | _, Vec.cons x b => Vec.cons_congr (Nat.zero_add x) (addI_zero_left b)

/-- Agda: `⊞-identityʳ` -/
theorem addI_zero_right : {m : Nat} → (b : Index m) → addI b (zeroI m) = b
  | _, Vec.nil => rfl
  | _, Vec.cons x b => Vec.cons_congr (Nat.add_zero x) (addI_zero_right b)

/-- Agda: `scale-0` -/
theorem scale_zero : {m : Nat} → (c : Index m) → scale 0 c = zeroI m
  | _, Vec.nil => rfl
  | _, Vec.cons x c => Vec.cons_congr (Nat.zero_mul x) (scale_zero c)

/-- Agda: `scale-1` -/
theorem scale_one : {m : Nat} → (c : Index m) → scale 1 c = c
  | _, Vec.nil => rfl
  | _, Vec.cons x c => Vec.cons_congr (Nat.one_mul x) (scale_one c)

/-- Agda: `mul-0` -/
theorem lin_zero {m : Nat} : {n : Nat} → (M : Vec (Index m) n) → linApp M (zeroI n) = zeroI m
  | _, Vec.nil => rfl
  | _, Vec.cons c M => by
      show addI (scale 0 c) (linApp M (zeroI _)) = zeroI m
      rw [scale_zero c, lin_zero M, addI_zero_left]

/-- Agda: `mul-unit` -/
theorem lin_unit {m : Nat} : {n : Nat} → (M : Vec (Index m) n) → (j : Idx n) →
    linApp M (unit j) = Vec.get M j
  | _, Vec.cons c M, Idx.zero => by
      show addI (scale 1 c) (linApp M (zeroI _)) = c
      rw [scale_one c, lin_zero M, addI_zero_right]
  | _, Vec.cons c M, Idx.succ j => by
      show addI (scale 0 c) (linApp M (unit j)) = Vec.get M j
      rw [scale_zero c, lin_unit M j, addI_zero_left]

/-- Agda: `⊞-cancelˡ` -/
theorem addI_cancel_left : {m : Nat} → (a b c : Index m) → addI a b = addI a c → b = c
  | _, Vec.nil, Vec.nil, Vec.nil, _ => rfl
  | _, Vec.cons _ a, Vec.cons _ b, Vec.cons _ c, h =>
      Vec.cons_congr (Nat.add_left_cancel (Vec.cons_inj_head h))
        (addI_cancel_left a b c (Vec.cons_inj_tail h))

/-- Agda: `lookup-⊞` -/
theorem get_addI {m : Nat} (a b : Index m) (c : Idx m) :
    Vec.get (addI a b) c = Vec.get a c + Vec.get b c :=
  Vec.get_zipWith (fun x y => x + y) a b c

/-! ## SIMD functions (Definitions 10-12) -/

/-- Agda: `SIMD` -/
structure SIMD (V : Type) (n m k : Nat) where
  kernel : Vec V k → V
  lin : Vec (Index m) n
  off : Vec (Index m) k

/-- Agda: `deps` -/
def deps {V : Type} {n m k : Nat} (f : SIMD V n m k) (i : Index n) : Vec (Index m) k :=
  Vec.map (fun b => addI (linApp f.lin i) b) f.off

/-- Agda: `apply` (renamed: `apply` is also a tactic name) -/
def simdApply {V : Type} {n m k : Nat} (f : SIMD V n m k) (x : Index m → V) (i : Index n) : V :=
  f.kernel (Vec.map x (deps f i))

/-- Agda: `Distinct` (Fact 5: no duplicated input indices) -/
abbrev Distinct {α : Type} {k : Nat} (xs : Vec α k) : Prop :=
  ∀ l l' : Idx k, Vec.get xs l = Vec.get xs l' → l = l'

/-- Agda: `WellFormed` (Definition 16, quantifiers in the order the proof needs) -/
abbrev WellFormed {V : Type} {k : Nat} (θ : Vec V k → V) : Prop :=
  ∀ l : Idx k, ∃ X : Vec V k, ∃ v : V, θ X ≠ θ (Vec.set X l v)

/-- Agda: `_∈ᵥ_` (proof-relevant: the position is data) -/
abbrev MemV {m k : Nat} (a : Index m) (B : Vec (Index m) k) : Type :=
  { l : Idx k // Vec.get B l = a }

theorem memV_cons_absurd {m k : Nat} {a b : Index m} {B : Vec (Index m) k}
    (ne : ¬ b = a) (nin : MemV a B → False) : MemV a (Vec.cons b B) → False
  | ⟨Idx.zero, e⟩ => ne e
  | ⟨Idx.succ l, e⟩ => nin ⟨l, e⟩

/-- Agda: `find` -/
def find {m : Nat} (a : Index m) : {k : Nat} → (B : Vec (Index m) k) → PSum (MemV a B) (MemV a B → False)
  | _, Vec.nil => PSum.inr (fun s => nomatch s.1)
  | _, Vec.cons b B =>
    match Vec.decEqNat b a with
    | Decidable.isTrue e => PSum.inl ⟨Idx.zero, e⟩
    | Decidable.isFalse ne =>
      match find a B with
      | PSum.inl s => PSum.inl ⟨Idx.succ s.1, s.2⟩
      | PSum.inr nin => PSum.inr (memV_cons_absurd ne nin)

def pick {V : Type} (v0 : V) {m k : Nat} {A : Vec (Index m) k} {p : Index m} (X : Vec V k) :
    PSum (MemV p A) (MemV p A → False) → V
  | PSum.inl s => Vec.get X s.1
  | PSum.inr _ => v0

/-- Agda: `mk` (the input tensor holding X at the indices A, v0 elsewhere) -/
def mk {V : Type} (v0 : V) {m k : Nat} (A : Vec (Index m) k) (X : Vec V k) (p : Index m) : V :=
  pick v0 X (find p A)

theorem pick_at {V : Type} (v0 : V) {m k : Nat} (A : Vec (Index m) k) (dA : Distinct A)
    (X : Vec V k) (l : Idx k) :
    (r : PSum (MemV (Vec.get A l) A) (MemV (Vec.get A l) A → False)) → pick v0 X r = Vec.get X l
  | PSum.inl s => congrArg (Vec.get X) (dA s.1 l s.2)
  | PSum.inr nin => False.elim (nin ⟨l, rfl⟩)

/-- Agda: `mk-at` -/
theorem mk_at {V : Type} (v0 : V) {m k : Nat} (A : Vec (Index m) k) (dA : Distinct A)
    (X : Vec V k) (l : Idx k) : mk v0 A X (Vec.get A l) = Vec.get X l :=
  pick_at v0 A dA X l (find (Vec.get A l) A)

/-- Agda: `mk-map` -/
theorem mk_map {V : Type} (v0 : V) {m k : Nat} (A : Vec (Index m) k) (dA : Distinct A)
    (X : Vec V k) : Vec.map (mk v0 A X) A = X :=
  Vec.ext _ _ (fun l => Eq.trans (Vec.get_map (mk v0 A X) A l) (mk_at v0 A dA X l))

theorem pick_other {V : Type} (v0 : V) {m k : Nat} (A : Vec (Index m) k) (X : Vec V k)
    (l : Idx k) (v : V) (p : Index m) (h : ∀ l' : Idx k, Vec.get A l' = p → l' ≠ l) :
    (r : PSum (MemV p A) (MemV p A → False)) → pick v0 X r = pick v0 (Vec.set X l v) r
  | PSum.inl s => (Vec.get_set_ne X s.1 l v (h s.1 s.2)).symm
  | PSum.inr _ => rfl

/-! ## Claim 6 -/

theorem claim6_absurd {V : Type} (v0 : V) {m k : Nat} (θ θ' : Vec V k → V)
    (A B : Vec (Index m) k) (dA : Distinct A) (wf : WellFormed θ)
    (agree : ∀ x : Index m → V, θ (Vec.map x A) = θ' (Vec.map x B)) (l : Idx k)
    (nin : MemV (Vec.get A l) B → False) : False := by
  obtain ⟨X, v, ne⟩ := wf l
  apply ne
  have same : Vec.map (mk v0 A X) B = Vec.map (mk v0 A (Vec.set X l v)) B :=
    Vec.ext _ _ (fun l' =>
      Eq.trans (Vec.get_map (mk v0 A X) B l')
        (Eq.trans
          (pick_other v0 A X l v (Vec.get B l')
            (fun l'' e e' => nin ⟨l', Eq.trans e.symm (congrArg (Vec.get A) e')⟩)
            (find (Vec.get B l') A))
          (Vec.get_map (mk v0 A (Vec.set X l v)) B l').symm))
  exact Eq.trans (congrArg θ (mk_map v0 A dA X).symm)
    (Eq.trans (agree (mk v0 A X))
      (Eq.trans (congrArg θ' same)
        (Eq.trans (agree (mk v0 A (Vec.set X l v))).symm
          (congrArg θ (mk_map v0 A dA (Vec.set X l v))))))

/-- Agda: `claim6` — if θ(x[A]) = θ'(x[B]) for all x, A is duplicate-free and
θ is well-formed, then every index of A occurs in B. -/
def claim6 {V : Type} (v0 : V) {m k : Nat} (θ θ' : Vec V k → V) (A B : Vec (Index m) k)
    (dA : Distinct A) (wf : WellFormed θ)
    (agree : ∀ x : Index m → V, θ (Vec.map x A) = θ' (Vec.map x B)) (l : Idx k) :
    MemV (Vec.get A l) B :=
  match find (Vec.get A l) B with
  | PSum.inl s => s
  | PSum.inr nin => False.elim (claim6_absurd v0 θ θ' A B dA wf agree l nin)

/-! ## Lemma 7 (corrected) -/

/-- Agda: `kernel-rel` -/
theorem kernel_rel {V : Type} (v0 : V) {m k : Nat} (θ θ' : Vec V k → V) (A B : Vec (Index m) k)
    (dA : Distinct A) (sub : (l : Idx k) → MemV (Vec.get B l) A)
    (agree : ∀ x : Index m → V, θ (Vec.map x A) = θ' (Vec.map x B)) (X : Vec V k) :
    θ X = θ' (Vec.tabulate (fun l => Vec.get X (sub l).1)) :=
  Eq.trans (congrArg θ (mk_map v0 A dA X).symm)
    (Eq.trans (agree (mk v0 A X))
      (congrArg θ' (Vec.ext _ _ (fun l =>
        Eq.trans (Vec.get_map (mk v0 A X) B l)
          (Eq.trans (congrArg (mk v0 A X) (sub l).2.symm)
            (Eq.trans (mk_at v0 A dA X (sub l).1)
              (Vec.get_tabulate (fun l => Vec.get X (sub l).1) l).symm))))))

/-- Agda: `transfer` -/
theorem transfer {V : Type} (v0 : V) {m k : Nat} (θ θ' : Vec V k → V) (A B : Vec (Index m) k)
    (dA : Distinct A) (sub : (l : Idx k) → MemV (Vec.get B l) A)
    (agree : ∀ x : Index m → V, θ (Vec.map x A) = θ' (Vec.map x B))
    (c : Index m) (x : Index m → V) :
    θ (Vec.map x (Vec.map (fun b => addI c b) A)) = θ' (Vec.map x (Vec.map (fun b => addI c b) B)) :=
  Eq.trans (kernel_rel v0 θ θ' A B dA sub agree (Vec.map x (Vec.map (fun b => addI c b) A)))
    (congrArg θ' (Vec.ext _ _ (fun l =>
      Eq.trans (Vec.get_tabulate
          (fun l => Vec.get (Vec.map x (Vec.map (fun b => addI c b) A)) (sub l).1) l)
        (Eq.trans (Vec.get_map x (Vec.map (fun b => addI c b) A) (sub l).1)
          (Eq.trans (congrArg x (Vec.get_map (fun b => addI c b) A (sub l).1))
            (Eq.trans (congrArg (fun z => x (addI c z)) (sub l).2)
              (Eq.trans (congrArg x (Vec.get_map (fun b => addI c b) B l)).symm
                (Vec.get_map x (Vec.map (fun b => addI c b) B) l).symm)))))))

/-! ## Lemma 8 (corrected): a non-empty set of indices determines its shift -/

def nmin : Nat → Nat → Nat
  | 0, _ => 0
  | _ + 1, 0 => 0
  | a + 1, b + 1 => nmin a b + 1

theorem nmin_le_left : (a b : Nat) → nmin a b ≤ a
  | 0, _ => Nat.le_refl 0
  | _ + 1, 0 => Nat.zero_le _
  | a + 1, b + 1 => Nat.succ_le_succ (nmin_le_left a b)

theorem nmin_le_right : (a b : Nat) → nmin a b ≤ b
  | 0, _ => Nat.zero_le _
  | _ + 1, 0 => Nat.le_refl 0
  | a + 1, b + 1 => Nat.succ_le_succ (nmin_le_right a b)

theorem nmin_sel : (a b : Nat) → nmin a b = a ∨ nmin a b = b
  | 0, _ => Or.inl rfl
  | _ + 1, 0 => Or.inr rfl
  | a + 1, b + 1 =>
    match nmin_sel a b with
    | Or.inl h => Or.inl (congrArg (fun z => z + 1) h)
    | Or.inr h => Or.inr (congrArg (fun z => z + 1) h)

/-- Agda: `IsMin` -/
abbrev IsMin {m k : Nat} (c : Idx m) (μ : Nat) (A : Vec (Index m) k) : Prop :=
  (∀ l : Idx k, μ ≤ Vec.get (Vec.get A l) c) ∧ (∃ l : Idx k, Vec.get (Vec.get A l) c = μ)

/-- Agda: `min-exists` -/
theorem min_exists {m : Nat} (c : Idx m) : {k : Nat} → (A : Vec (Index m) (k + 1)) →
    ∃ μ, IsMin c μ A
  | 0, Vec.cons a Vec.nil =>
      ⟨Vec.get a c, And.intro
        (fun l => match l with
          | Idx.zero => Nat.le_refl _
          | Idx.succ l' => nomatch l')
        ⟨Idx.zero, rfl⟩⟩
  | _ + 1, Vec.cons a (Vec.cons b A) => by
      obtain ⟨μ, lo, l, e⟩ := min_exists c (Vec.cons b A)
      refine ⟨nmin (Vec.get a c) μ, And.intro ?_ ?_⟩
      · intro l'
        match l' with
        | Idx.zero => exact nmin_le_left (Vec.get a c) μ
        | Idx.succ l'' => exact Nat.le_trans (nmin_le_right (Vec.get a c) μ) (lo l'')
      · cases nmin_sel (Vec.get a c) μ with
        | inl q => exact ⟨Idx.zero, q.symm⟩
        | inr q => exact ⟨Idx.succ l, Eq.trans e q.symm⟩

/-- Agda: `min-unique` -/
theorem min_unique {m k k' : Nat} (c : Idx m) {μ μ' : Nat} (A : Vec (Index m) k)
    (B : Vec (Index m) k') (hA : IsMin c μ A) (hB : IsMin c μ' B)
    (AB : (l : Idx k) → MemV (Vec.get A l) B) (BA : (l : Idx k') → MemV (Vec.get B l) A) :
    μ = μ' := by
  obtain ⟨loA, lA, eA⟩ := hA
  obtain ⟨loB, lB, eB⟩ := hB
  apply Nat.le_antisymm
  · exact Nat.le_trans (loA (BA lB).1)
      (Nat.le_of_eq (Eq.trans (congrArg (fun z => Vec.get z c) (BA lB).2) eB))
  · exact Nat.le_trans (loB (AB lA).1)
      (Nat.le_of_eq (Eq.trans (congrArg (fun z => Vec.get z c) (AB lA).2) eA))

/-- Agda: `min-shift` -/
theorem min_shift {m k : Nat} (c : Idx m) {μ : Nat} (d : Index m) (A : Vec (Index m) k)
    (h : IsMin c μ A) : IsMin c (Vec.get d c + μ) (Vec.map (fun b => addI d b) A) := by
  obtain ⟨lo, l, e⟩ := h
  have at_ : ∀ l' : Idx k, Vec.get (Vec.get (Vec.map (fun b => addI d b) A) l') c
      = Vec.get d c + Vec.get (Vec.get A l') c := fun l' =>
    Eq.trans (congrArg (fun z => Vec.get z c) (Vec.get_map (fun b => addI d b) A l'))
      (get_addI d (Vec.get A l') c)
  exact And.intro
    (fun l' => Nat.le_trans (Nat.add_le_add_left (lo l') (Vec.get d c)) (Nat.le_of_eq (at_ l').symm))
    ⟨l, Eq.trans (at_ l) (congrArg (fun z => Vec.get d c + z) e)⟩

/-- Agda: `shift-determined` -/
theorem shift_determined {m k : Nat} (A B : Vec (Index m) (k + 1)) (d d' : Index m)
    (AB : (l : Idx (k + 1)) → MemV (Vec.get A l) B)
    (BA : (l : Idx (k + 1)) → MemV (Vec.get B l) A)
    (AB' : (l : Idx (k + 1)) →
      MemV (Vec.get (Vec.map (fun b => addI d b) A) l) (Vec.map (fun b => addI d' b) B))
    (BA' : (l : Idx (k + 1)) →
      MemV (Vec.get (Vec.map (fun b => addI d' b) B) l) (Vec.map (fun b => addI d b) A)) :
    d = d' :=
  Vec.ext d d' (fun c => by
    obtain ⟨μ, mA⟩ := min_exists c A
    obtain ⟨μ', mB⟩ := min_exists c B
    have e1 : μ = μ' := min_unique c A B mA mB AB BA
    have e2 : Vec.get d c + μ = Vec.get d' c + μ' :=
      min_unique c _ _ (min_shift c d A mA) (min_shift c d' B mB) AB' BA'
    exact Nat.add_right_cancel (Eq.trans e2 (congrArg (fun z => Vec.get d' c + z) e1.symm)))

/-- Agda: `distinct-shift` -/
theorem distinct_shift {m k : Nat} (d : Index m) (A : Vec (Index m) k) (dA : Distinct A) :
    Distinct (Vec.map (fun b => addI d b) A) :=
  fun l l' e => dA l l' (addI_cancel_left d _ _
    (Eq.trans (Vec.get_map (fun b => addI d b) A l).symm
      (Eq.trans e (Vec.get_map (fun b => addI d b) A l'))))

/-! ## Theorem 10 (corrected) -/

/-- Agda: `shift-0` -/
theorem shift_zero {n m k : Nat} (M : Vec (Index m) n) (A : Vec (Index m) k) :
    Vec.map (fun b => addI (linApp M (zeroI n)) b) A = A :=
  Vec.ext _ _ (fun l =>
    Eq.trans (Vec.get_map (fun b => addI (linApp M (zeroI n)) b) A l)
      (Eq.trans (congrArg (fun z => addI z (Vec.get A l)) (lin_zero M))
        (addI_zero_left (Vec.get A l))))

theorem simd_reduction_succ {V : Type} (v0 : V) {n m k : Nat}
    (θf θg : Vec V (k + 1) → V) (Mf Mg : Vec (Index m) n) (A B : Vec (Index m) (k + 1))
    (dA : Distinct A) (dB : Distinct B) (wf : WellFormed θf) (wg : WellFormed θg)
    (p0 : ∀ x : Index m → V,
      simdApply (SIMD.mk θf Mf A) x (zeroI n) = simdApply (SIMD.mk θg Mg B) x (zeroI n))
    (pu : ∀ (j : Idx n) (x : Index m → V),
      simdApply (SIMD.mk θf Mf A) x (unit j) = simdApply (SIMD.mk θg Mg B) x (unit j))
    (x : Index m → V) (i : Index n) :
    simdApply (SIMD.mk θf Mf A) x i = simdApply (SIMD.mk θg Mg B) x i := by
  have agree0 : ∀ x : Index m → V, θf (Vec.map x A) = θg (Vec.map x B) := fun x =>
    Eq.trans (congrArg (fun z => θf (Vec.map x z)) (shift_zero Mf A).symm)
      (Eq.trans (p0 x) (congrArg (fun z => θg (Vec.map x z)) (shift_zero Mg B)))
  let AB := claim6 v0 θf θg A B dA wf agree0
  let BA := claim6 v0 θg θf B A dB wg (fun x => (agree0 x).symm)
  have agreej : ∀ (j : Idx n) (x : Index m → V),
      θf (Vec.map x (Vec.map (fun b => addI (Vec.get Mf j) b) A))
        = θg (Vec.map x (Vec.map (fun b => addI (Vec.get Mg j) b) B)) := fun j x =>
    Eq.trans
      (congrArg (fun c => θf (Vec.map x (Vec.map (fun b => addI c b) A))) (lin_unit Mf j).symm)
      (Eq.trans (pu j x)
        (congrArg (fun c => θg (Vec.map x (Vec.map (fun b => addI c b) B))) (lin_unit Mg j)))
  have col : ∀ j : Idx n, Vec.get Mf j = Vec.get Mg j := fun j =>
    shift_determined A B (Vec.get Mf j) (Vec.get Mg j) AB BA
      (claim6 v0 θf θg _ _ (distinct_shift (Vec.get Mf j) A dA) wf (agreej j))
      (claim6 v0 θg θf _ _ (distinct_shift (Vec.get Mg j) B dB) wg (fun x => (agreej j x).symm))
  have hM : Mf = Mg := Vec.ext Mf Mg col
  exact Eq.trans
    (congrArg (fun M => θf (Vec.map x (Vec.map (fun b => addI (linApp M i) b) A))) hM)
    (transfer v0 θf θg A B dA BA agree0 (linApp Mg i) x)

/-- Agda: `simd-reduction` — two SIMD functions with duplicate-free offsets
and well-formed kernels that agree, for all inputs, at the index 0 and at the
unit indices e_j agree, for all inputs, at every index. -/
theorem simd_reduction {V : Type} (v0 : V) {n m : Nat} : {k : Nat} → (f g : SIMD V n m k) →
    Distinct f.off → Distinct g.off → WellFormed f.kernel → WellFormed g.kernel →
    (∀ x : Index m → V, simdApply f x (zeroI n) = simdApply g x (zeroI n)) →
    (∀ (j : Idx n) (x : Index m → V), simdApply f x (unit j) = simdApply g x (unit j)) →
    ∀ (x : Index m → V) (i : Index n), simdApply f x i = simdApply g x i
  | 0, ⟨_, _, Vec.nil⟩, ⟨_, _, Vec.nil⟩, _, _, _, _, p0, _, x, _ => p0 x
  | _ + 1, ⟨θf, Mf, A⟩, ⟨θg, Mg, B⟩, dA, dB, wf, wg, p0, pu, x, i =>
      simd_reduction_succ v0 θf θg Mf Mg A B dA dB wf wg p0 pu x i

/-- Agda: `simd-corners` — the form the checker uses. -/
theorem simd_corners {V : Type} (v0 : V) {n m k : Nat} (f g : SIMD V n m k)
    (dA : Distinct f.off) (dB : Distinct g.off) (wf : WellFormed f.kernel)
    (wg : WellFormed g.kernel)
    (corners : ∀ i : Index n, Corner i → ∀ x : Index m → V, simdApply f x i = simdApply g x i) :
    ∀ (x : Index m → V) (i : Index n), simdApply f x i = simdApply g x i :=
  simd_reduction v0 f g dA dB wf wg
    (corners (zeroI n) (fun c => corner_zero c))
    (fun j => corners (unit j) (fun c => corner_unit j c))

end Pvcert.ShapeReduction
