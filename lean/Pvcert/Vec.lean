/-
Length-indexed vectors and their positions, with the few lemmas the
shape-reduction proof needs.  Mirrors the parts of agda-stdlib's
Data.Vec / Data.Fin used by agda/ShapeReduction/SIMD.agda.
Core Lean only; no axioms are declared.
-/
namespace Pvcert

/-- positions `0 … n-1` (Agda: `Fin n`) -/
inductive Idx : Nat → Type where
  | zero {n : Nat} : Idx (n + 1)
  | succ {n : Nat} : Idx n → Idx (n + 1)

/-- vectors (Agda: `Vec A n`) -/
inductive Vec (α : Type) : Nat → Type where
  | nil : Vec α 0
  | cons {n : Nat} : α → Vec α n → Vec α (n + 1)

namespace Vec

/-- Agda: `lookup` -/
def get {α : Type} : {n : Nat} → Vec α n → Idx n → α
  | _, Vec.cons x _, Idx.zero => x
  | _, Vec.cons _ xs, Idx.succ i => get xs i

def map {α β : Type} (f : α → β) : {n : Nat} → Vec α n → Vec β n
  | _, Vec.nil => Vec.nil
  | _, Vec.cons x xs => Vec.cons (f x) (map f xs)

def zipWith {α β γ : Type} (f : α → β → γ) : {n : Nat} → Vec α n → Vec β n → Vec γ n
  | _, Vec.nil, Vec.nil => Vec.nil
  | _, Vec.cons x xs, Vec.cons y ys => Vec.cons (f x y) (zipWith f xs ys)

def replicate {α : Type} (a : α) : (n : Nat) → Vec α n
  | 0 => Vec.nil
  | n + 1 => Vec.cons a (replicate a n)

def tabulate {α : Type} : {n : Nat} → (Idx n → α) → Vec α n
  | 0, _ => Vec.nil
  | _ + 1, f => Vec.cons (f Idx.zero) (tabulate (fun i => f (Idx.succ i)))

/-- Agda: `xs [ i ]≔ v` -/
def set {α : Type} : {n : Nat} → Vec α n → Idx n → α → Vec α n
  | _, Vec.cons _ xs, Idx.zero, v => Vec.cons v xs
  | _, Vec.cons x xs, Idx.succ i, v => Vec.cons x (set xs i v)

theorem cons_congr {α : Type} {n : Nat} {x y : α} {xs ys : Vec α n}
    (h1 : x = y) (h2 : xs = ys) : Vec.cons x xs = Vec.cons y ys := by
  subst h1
  subst h2
  rfl

theorem cons_inj_head {α : Type} {n : Nat} {x y : α} {xs ys : Vec α n}
    (h : Vec.cons x xs = Vec.cons y ys) : x = y := by
  cases h
  rfl

theorem cons_inj_tail {α : Type} {n : Nat} {x y : α} {xs ys : Vec α n}
    (h : Vec.cons x xs = Vec.cons y ys) : xs = ys := by
  cases h
  rfl

/-- Agda: `vext` (vectors are equal when they agree at every position) -/
theorem ext {α : Type} : {n : Nat} → (xs ys : Vec α n) → (∀ i, get xs i = get ys i) → xs = ys
  | _, Vec.nil, Vec.nil, _ => rfl
  | _, Vec.cons _ xs, Vec.cons _ ys, h =>
      cons_congr (h Idx.zero) (ext xs ys (fun i => h (Idx.succ i)))

/-- Agda: `lookup-map` -/
theorem get_map {α β : Type} (f : α → β) : {n : Nat} → (xs : Vec α n) → (i : Idx n) →
    get (map f xs) i = f (get xs i)
  | _, Vec.cons _ _, Idx.zero => rfl
  | _, Vec.cons _ xs, Idx.succ i => get_map f xs i

/-- Agda: `lookup-zipWith` -/
theorem get_zipWith {α β γ : Type} (f : α → β → γ) : {n : Nat} → (xs : Vec α n) →
    (ys : Vec β n) → (i : Idx n) → get (zipWith f xs ys) i = f (get xs i) (get ys i)
  | _, Vec.cons _ _, Vec.cons _ _, Idx.zero => rfl
  | _, Vec.cons _ xs, Vec.cons _ ys, Idx.succ i => get_zipWith f xs ys i

/-- Agda: `lookup∘tabulate` -/
theorem get_tabulate {α : Type} : {n : Nat} → (f : Idx n → α) → (i : Idx n) →
    get (tabulate f) i = f i
  | _, _, Idx.zero => rfl
  | _, f, Idx.succ i => get_tabulate (fun j => f (Idx.succ j)) i

/-- Agda: `lookup∘update′` -/
theorem get_set_ne {α : Type} : {n : Nat} → (xs : Vec α n) → (i j : Idx n) → (v : α) →
    i ≠ j → get (set xs j v) i = get xs i
  | _, Vec.cons _ _, Idx.zero, Idx.zero, _, h => False.elim (h rfl)
  | _, Vec.cons _ _, Idx.zero, Idx.succ _, _, _ => rfl
  | _, Vec.cons _ _, Idx.succ _, Idx.zero, _, _ => rfl
  | _, Vec.cons _ xs, Idx.succ i, Idx.succ j, v, h =>
      get_set_ne xs i j v (fun e => h (congrArg Idx.succ e))

/-- decidable equality of vectors of naturals (indices) -/
def decEqNat : {m : Nat} → (a b : Vec Nat m) → Decidable (a = b)
  | _, Vec.nil, Vec.nil => Decidable.isTrue rfl
  | _, Vec.cons x xs, Vec.cons y ys =>
    match Nat.decEq x y, decEqNat xs ys with
    | Decidable.isTrue h1, Decidable.isTrue h2 => Decidable.isTrue (cons_congr h1 h2)
    | Decidable.isFalse h1, _ => Decidable.isFalse (fun h => h1 (cons_inj_head h))
    | Decidable.isTrue _, Decidable.isFalse h2 => Decidable.isFalse (fun h => h2 (cons_inj_tail h))

end Vec

end Pvcert
