/-
Clean expressions and relations.  Port of agda/Composition/Clean.agda,
statement by statement.  Core Lean only.

The tensor operations are abstract (the Agda module parameters become the
fields of `TensorOps`): the theorems hold for every interpretation.
-/
namespace Pvcert.Composition

/-- list membership (Agda: `_∈_` of Data.List.Membership.Propositional) -/
inductive Mem {α : Type} (a : α) : List α → Prop where
  | here (l : List α) : Mem a (a :: l)
  | there (b : α) {l : List α} : Mem a l → Mem a (b :: l)

theorem mem_append_left {α : Type} {a : α} {xs : List α} (ys : List α) (h : Mem a xs) :
    Mem a (xs ++ ys) := by
  induction h with
  | here l => exact Mem.here (l ++ ys)
  | there b _ ih => exact Mem.there b ih

theorem mem_append_right {α : Type} {a : α} {ys : List α} : (xs : List α) → Mem a ys →
    Mem a (xs ++ ys)
  | [], h => h
  | x :: xs, h => Mem.there x (mem_append_right xs h)

theorem mem_map {α β : Type} (f : α → β) {a : α} {xs : List α} (h : Mem a xs) :
    Mem (f a) (xs.map f) := by
  induction h with
  | here l => exact Mem.here (l.map f)
  | there b _ ih => exact Mem.there (f b) ih

/-- the abstract tensor operations (Agda: module parameters sliceT, concatT, addT) -/
structure TensorOps (T : Type) where
  slice : Nat → Nat → Nat → T → T   -- dimension, start, stop
  concat : Nat → T → T → T          -- dimension
  add : T → T → T                   -- elementwise sum (sum over ranks)

abbrev Name := Nat

/-- an environment of tensors (compared only pointwise) -/
abbrev Env (T : Type) := Name → T

/-- Agda: `Expr` -/
inductive Expr where
  | var : Name → Expr
  | slice : Nat → Nat → Nat → Expr → Expr
  | concat : Nat → Expr → Expr → Expr
  | sum : Expr → Expr → Expr

/-- Agda: `⟦_⟧` -/
def eval {T : Type} (O : TensorOps T) : Expr → Env T → T
  | Expr.var n, ρ => ρ n
  | Expr.slice d a b e, ρ => O.slice d a b (eval O e ρ)
  | Expr.concat d e₁ e₂, ρ => O.concat d (eval O e₁ ρ) (eval O e₂ ρ)
  | Expr.sum e₁ e₂, ρ => O.add (eval O e₁ ρ) (eval O e₂ ρ)

/-- Agda: `names` -/
def names : Expr → List Name
  | Expr.var n => [n]
  | Expr.slice _ _ _ e => names e
  | Expr.concat _ e₁ e₂ => names e₁ ++ names e₂
  | Expr.sum e₁ e₂ => names e₁ ++ names e₂

/-- Agda: `eval-frame` — evaluation only depends on the names an expression mentions -/
theorem eval_frame {T : Type} (O : TensorOps T) : (e : Expr) → (ρ ρ' : Env T) →
    (∀ n, Mem n (names e) → ρ n = ρ' n) → eval O e ρ = eval O e ρ'
  | Expr.var n, _, _, h => h n (Mem.here [])
  | Expr.slice d a b e, ρ, ρ', h => congrArg (O.slice d a b) (eval_frame O e ρ ρ' h)
  | Expr.concat d e₁ e₂, ρ, ρ', h =>
      congr (congrArg (O.concat d)
              (eval_frame O e₁ ρ ρ' (fun n m => h n (mem_append_left (names e₂) m))))
            (eval_frame O e₂ ρ ρ' (fun n m => h n (mem_append_right (names e₁) m)))
  | Expr.sum e₁ e₂, ρ, ρ', h =>
      congr (congrArg O.add
              (eval_frame O e₁ ρ ρ' (fun n m => h n (mem_append_left (names e₂) m))))
            (eval_frame O e₂ ρ ρ' (fun n m => h n (mem_append_right (names e₁) m)))

/-- Agda: `_⟨_⟩` (substitution of expressions for names) -/
def esubst (σ : Name → Expr) : Expr → Expr
  | Expr.var n => σ n
  | Expr.slice d a b e => Expr.slice d a b (esubst σ e)
  | Expr.concat d e₁ e₂ => Expr.concat d (esubst σ e₁) (esubst σ e₂)
  | Expr.sum e₁ e₂ => Expr.sum (esubst σ e₁) (esubst σ e₂)

/-- Agda: `subst-sound` — substitution is sound with respect to evaluation -/
theorem subst_sound {T : Type} (O : TensorOps T) (σ : Name → Expr) (ρ' ρ : Env T)
    (h : ∀ n, ρ' n = eval O (σ n) ρ) : (e : Expr) → eval O e ρ' = eval O (esubst σ e) ρ
  | Expr.var n => h n
  | Expr.slice d a b e => congrArg (O.slice d a b) (subst_sound O σ ρ' ρ h e)
  | Expr.concat d e₁ e₂ =>
      congr (congrArg (O.concat d) (subst_sound O σ ρ' ρ h e₁)) (subst_sound O σ ρ' ρ h e₂)
  | Expr.sum e₁ e₂ =>
      congr (congrArg O.add (subst_sound O σ ρ' ρ h e₁)) (subst_sound O σ ρ' ρ h e₂)

/-- Agda: `Rel` — each listed tensor of the first environment equals a clean
expression over the second environment -/
abbrev Rel := List (Name × Expr)

/-- Agda: `HoldsFor` -/
abbrev HoldsFor {T : Type} (O : TensorOps T) (ρs ρd : Env T) (p : Name × Expr) : Prop :=
  ρs p.1 = eval O p.2 ρd

/-- Agda: `Holds` (All of HoldsFor) -/
def Holds {T : Type} (O : TensorOps T) : Rel → Env T → Env T → Prop
  | [], _, _ => True
  | p :: R, ρs, ρd => HoldsFor O ρs ρd p ∧ Holds O R ρs ρd

/-- Agda: `All.lookup` -/
theorem holds_of_mem {T : Type} (O : TensorOps T) {ρs ρd : Env T} {p : Name × Expr} :
    {R : Rel} → Holds O R ρs ρd → Mem p R → HoldsFor O ρs ρd p
  | _ :: _, h, Mem.here _ => And.left h
  | _ :: _, h, Mem.there _ m => holds_of_mem O (And.right h) m

/-- Agda: `All.tabulate` -/
theorem holds_of_forall {T : Type} (O : TensorOps T) {ρs ρd : Env T} : (R : Rel) →
    (∀ p, Mem p R → HoldsFor O ρs ρd p) → Holds O R ρs ρd
  | [], _ => True.intro
  | p :: R, h => And.intro (h p (Mem.here R)) (holds_of_forall O R (fun q m => h q (Mem.there p m)))

/-- Agda: `compose` -/
def compose (R : Rel) (σ : Name → Expr) : Rel := R.map (fun p => (p.1, esubst σ p.2))

/-- Agda: `compose-sound` -/
theorem compose_sound {T : Type} (O : TensorOps T) (σ : Name → Expr) (ρs ρm ρd : Env T)
    (hσ : ∀ n, ρm n = eval O (σ n) ρd) : (R : Rel) → Holds O R ρs ρm → Holds O (compose R σ) ρs ρd
  | [], _ => True.intro
  | p :: R, h =>
      And.intro (Eq.trans (And.left h) (subst_sound O σ ρm ρd hσ p.2))
        (compose_sound O σ ρs ρm ρd hσ R (And.right h))

end Pvcert.Composition
