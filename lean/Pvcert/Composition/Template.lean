/-
The wiring of a train-template (certificates/wiring.py): the abstract run of
the schedule implies that the composed program computes the reference step R.
Port of agda/Composition/Template.agda, statement by statement.  Core Lean only.

The Agda module parameters (values, scales, block specs and impls, the block
refinement facts, registers) become the fields of `Model`.  `upTo k` is
`List.range k`; `All (_≡ a) vs` is `∀ v ∈ vs, v = a`.
-/
import Pvcert.Vec

namespace Pvcert.Composition.Template

open Pvcert

/-- Agda: the module parameters of `Composition.Template` -/
structure Model where
  V : Type
  add : V → V → V
  zero : V
  add_assoc : ∀ a b d, add (add a b) d = add a (add b d)
  add_comm : ∀ a b, add a b = add b a
  zero_add : ∀ a, add zero a = a
  S : Type
  sc : S → V → V
  c : S
  L : Nat
  n : Nat
  x : Idx n → V
  y : Idx n → V
  F : Nat → V → V
  Bg : Nat → V → V → V
  Bθ : Nat → Nat → V → V → V
  Hl : V → V → V
  Hg : V → V → V
  O : Nat → Nat → V → V
  Fi : Nat → Nat → List V → V
  Bgi : Nat → Nat → List (V × V) → V
  Bθi : Nat → Nat → List (V × V) → V
  Hli : Nat → List (V × V) → V
  Hgi : Nat → List (V × V) → V
  Oi : Nat → Nat → List V → V
  gather : List V → V
  fwd_ref : ∀ l t vs a, (∀ v, v ∈ vs → v = a) → Fi l t vs = F l a
  bwd_ref : ∀ l t ps a g, (∀ p, p ∈ ps → p = (a, g)) → Bgi l t ps = Bg l a g ∧ Bθi l t ps = Bθ l t a g
  loss_ref : ∀ t ps a y', (∀ p, p ∈ ps → p = (a, y')) → Hgi t ps = Hg a y' ∧ Hli t ps = Hl a y'
  sgd_ref : ∀ l t k gs (G : Nat → V), gs = (List.range k).map G → Oi l t gs = O l t (G t)
  Loc : Type
  decLoc : DecidableEq Loc

namespace Model
variable (M : Model)

/-! Masks of (replica, micro-batch) pairs and sums over them -/

abbrev Mask := Vec Bool M.n

def full : M.Mask := Vec.replicate true M.n

/-- Agda: `single` -/
def single : {k : Nat} → Idx k → Vec Bool k
  | k + 1, Idx.zero => Vec.cons true (Vec.replicate false k)
  | _, Idx.succ i => Vec.cons false (single i)

/-- Agda: `_∪_` -/
def union : {k : Nat} → Vec Bool k → Vec Bool k → Vec Bool k
  | _, Vec.nil, Vec.nil => Vec.nil
  | _, Vec.cons a m, Vec.cons b m' => Vec.cons (a || b) (union m m')

/-- Agda: `Disjoint` (wiring.Run.add: `a & b == 0`) -/
def Disjoint : {k : Nat} → Vec Bool k → Vec Bool k → Prop
  | _, Vec.nil, Vec.nil => True
  | _, Vec.cons a m, Vec.cons b m' => (a && b) = false ∧ Disjoint m m'

/-- Agda: `sumOver` -/
def sumOver : {k : Nat} → (Idx k → M.V) → Vec Bool k → M.V
  | _, _, Vec.nil => M.zero
  | _, g, Vec.cons true m => M.add (g Idx.zero) (sumOver (fun i => g (Idx.succ i)) m)
  | _, g, Vec.cons false m => sumOver (fun i => g (Idx.succ i)) m

/-- Agda: `sumAll` — the sequential sum over every pair -/
def sumAll : {k : Nat} → (Idx k → M.V) → M.V
  | 0, _ => M.zero
  | _ + 1, g => M.add (g Idx.zero) (sumAll (fun i => g (Idx.succ i)))

/-- Agda: `+-idʳ` -/
theorem add_zero (a : M.V) : M.add a M.zero = a := Eq.trans (M.add_comm a M.zero) (M.zero_add a)

/-- Agda: `+-swap` -/
theorem add_swap (a b d : M.V) : M.add a (M.add b d) = M.add b (M.add a d) :=
  Eq.trans (M.add_assoc a b d).symm
    (Eq.trans (congrArg (fun z => M.add z d) (M.add_comm a b)) (M.add_assoc b a d))

/-- Agda: `sum-none` -/
theorem sum_none : (k : Nat) → (g : Idx k → M.V) → M.sumOver g (Vec.replicate false k) = M.zero
  | 0, _ => rfl
  | k + 1, g => sum_none k (fun i => g (Idx.succ i))

/-- Agda: `sum-single` -/
theorem sum_single : {k : Nat} → (g : Idx k → M.V) → (i : Idx k) → M.sumOver g (single i) = g i
  | k + 1, g, Idx.zero =>
      Eq.trans (congrArg (M.add (g Idx.zero)) (M.sum_none k (fun i => g (Idx.succ i)))) (M.add_zero _)
  | _, g, Idx.succ i => sum_single (fun j => g (Idx.succ j)) i

/-- Agda: `sum-full` -/
theorem sum_full : (k : Nat) → (g : Idx k → M.V) → M.sumOver g (Vec.replicate true k) = M.sumAll g
  | 0, _ => rfl
  | k + 1, g => congrArg (M.add (g Idx.zero)) (sum_full k (fun i => g (Idx.succ i)))

/-- Agda: `sum-∪` — a sum over the union of disjoint masks is the sum of the two sums -/
theorem sum_union : {k : Nat} → (g : Idx k → M.V) → (m m' : Vec Bool k) → Disjoint m m' →
    M.sumOver g (union m m') = M.add (M.sumOver g m) (M.sumOver g m')
  | _, _, Vec.nil, Vec.nil, _ => (M.zero_add M.zero).symm
  | _, _, Vec.cons true _, Vec.cons true _, h => absurd (And.left h) (by decide)
  | _, g, Vec.cons true m, Vec.cons false m', h =>
      Eq.trans (congrArg (M.add (g Idx.zero)) (sum_union (fun i => g (Idx.succ i)) m m' (And.right h)))
        (M.add_assoc _ _ _).symm
  | _, g, Vec.cons false m, Vec.cons true m', h =>
      Eq.trans (congrArg (M.add (g Idx.zero)) (sum_union (fun i => g (Idx.succ i)) m m' (And.right h)))
        (M.add_swap _ _ _)
  | _, g, Vec.cons false m, Vec.cons false m', h => sum_union (fun i => g (Idx.succ i)) m m' (And.right h)

/-! The reference step R, per pair i -/

/-- Agda: `act-ref` -/
def actRef : Nat → Idx M.n → M.V
  | 0, i => M.x i
  | l + 1, i => M.F l (actRef l i)

/-- Agda: `cot′` — cotangent into layer l with k = L - l layers below the loss -/
def cot' : Nat → Nat → Idx M.n → M.S → M.V
  | 0, l, i, s => M.sc s (M.Hg (M.actRef l i) (M.y i))
  | k + 1, l, i, s => M.Bg l (M.actRef l i) (cot' k (l + 1) i s)

/-- Agda: `cot` -/
def cot (l : Nat) : Idx M.n → M.S → M.V := M.cot' (M.L - l) l

/-- Agda: `gc` — pair i's contribution to shard t of layer l's gradient -/
def gc (l t : Nat) (s : M.S) (i : Idx M.n) : M.V := M.Bθ l t (M.actRef l i) (M.cot (l + 1) i s)

/-- Agda: `lc` — pair i's loss -/
def lc (s : M.S) (i : Idx M.n) : M.V := M.sc s (M.Hl (M.actRef M.L i) (M.y i))

/-- Agda: `Gseq` — shard t of R's gradient of layer l -/
def Gseq (l t : Nat) : M.V := M.sumAll (M.gc l t M.c)

/-- Agda: `Lseq` — R's loss metric -/
def Lseq : M.V := M.sumAll (M.lc M.c)

/-- Agda: `∸-suc` -/
theorem sub_succ (m l : Nat) (h : l + 1 ≤ m) : m - l = (m - (l + 1)) + 1 := by omega

/-- Agda: `cot-step` -/
theorem cot_step (l : Nat) (i : Idx M.n) (s : M.S) (lt : l + 1 ≤ M.L) :
    M.cot l i s = M.Bg l (M.actRef l i) (M.cot (l + 1) i s) :=
  congrArg (fun k => M.cot' k l i s) (sub_succ M.L l lt)

/-- Agda: `cot-top` -/
theorem cot_top (i : Idx M.n) (s : M.S) : M.cot M.L i s = M.sc s (M.Hg (M.actRef M.L i) (M.y i)) :=
  congrArg (fun k => M.cot' k M.L i s) (Nat.sub_self M.L)

/-! Tags and what they mean -/

/-- Agda: `Tag` -/
inductive Tag (M : Model) where
  | act : Nat → Idx M.n → Tag M
  | gact : Nat → Idx M.n → M.S → Tag M
  | label : Idx M.n → Tag M
  | grad : Nat → Nat → Vec Bool M.n → M.S → Tag M
  | loss : Vec Bool M.n → M.S → Tag M
  | gathered : Tag M

/-- Agda: `Carries` -/
def Carries (v : M.V) : Tag M → Prop
  | Tag.act l i => v = M.actRef l i
  | Tag.gact l i s => v = M.cot l i s
  | Tag.label i => v = M.y i
  | Tag.grad l t m s => v = M.sumOver (M.gc l t s) m
  | Tag.loss m s => v = M.sumOver (M.lc s) m
  | Tag.gathered => True

/-- Agda: `Goods` -/
inductive Goods : List M.V → List (Tag M) → Prop where
  | nil : Goods [] []
  | cons {v : M.V} {τ : Tag M} {vs : List M.V} {τs : List (Tag M)} :
      M.Carries v τ → Goods vs τs → Goods (v :: vs) (τ :: τs)

/-! Gradient accumulation (wiring.Run.add, do_acc, fire for all_reduce) -/

/-- Agda: `Add` — equal tensors (layer, shard) at equal scales over disjoint masks -/
inductive Add : Tag M → Tag M → Tag M → Prop where
  | grad {l t : Nat} {m m' : Vec Bool M.n} {s : M.S} :
      Disjoint m m' → Add (Tag.grad l t m s) (Tag.grad l t m' s) (Tag.grad l t (union m m') s)
  | loss {m m' : Vec Bool M.n} {s : M.S} :
      Disjoint m m' → Add (Tag.loss m s) (Tag.loss m' s) (Tag.loss (union m m') s)

/-- Agda: `add-sound` -/
theorem add_sound {v w : M.V} {τ τ' τ'' : Tag M} (a : M.Add τ τ' τ'') (p : M.Carries v τ)
    (q : M.Carries w τ') : M.Carries (M.add v w) τ'' := by
  cases a with
  | grad d => exact Eq.trans (congr (congrArg M.add p) q) (M.sum_union _ _ _ d).symm
  | loss d => exact Eq.trans (congr (congrArg M.add p) q) (M.sum_union _ _ _ d).symm

/-- Agda: `AddAll` — fire: p0 = add(p0, p) over the group's members in order -/
inductive AddAll : Tag M → List (Tag M) → Tag M → Prop where
  | done {τ : Tag M} : AddAll τ [] τ
  | more {τ τ₁ τ₂ τ' : Tag M} {τs : List (Tag M)} : M.Add τ τ₁ τ₂ → AddAll τ₂ τs τ' → AddAll τ (τ₁ :: τs) τ'

/-- Agda: `addAll-sound` -/
theorem addAll_sound : {v : M.V} → {vs : List M.V} → {τ τ' : Tag M} → {τs : List (Tag M)} →
    M.AddAll τ τs τ' → M.Carries v τ → M.Goods vs τs → M.Carries (vs.foldl M.add v) τ'
  | _, _, _, _, _, AddAll.done, p, Goods.nil => p
  | _, _, _, _, _, AddAll.more a r, p, Goods.cons q g => addAll_sound r (M.add_sound a p q) g

/-- Agda: `grad-exact` — what do_opt demands: the full mask at the sequential scale -/
theorem grad_exact {v : M.V} {l t : Nat} (p : M.Carries v (Tag.grad l t M.full M.c)) : v = M.Gseq l t :=
  Eq.trans p (M.sum_full M.n (M.gc l t M.c))

/-- Agda: `loss-exact` — what do_metric demands -/
theorem loss_exact {v : M.V} (p : M.Carries v (Tag.loss M.full M.c)) : v = M.Lseq :=
  Eq.trans p (M.sum_full M.n (M.lc M.c))

/-! Events: the checker's condition on tags and the program's values -/

/-- Agda: `Ev` -/
inductive Ev (M : Model) where
  | inX : Idx M.n → M.Loc → Ev M
  | inY : Idx M.n → M.Loc → Ev M
  | mv : M.Loc → M.Loc → Ev M
  | accE : M.Loc → M.Loc → Ev M
  | fwdE : Nat → Nat → List M.Loc → List M.Loc → Ev M
  | bwdE : Nat → Nat → List M.Loc → List M.Loc → Ev M
  | lossE : M.S → Nat → List M.Loc → List M.Loc → Ev M
  | arE : Nat → List M.Loc → Ev M
  | agE : Nat → List M.Loc → Ev M

/-- Agda: `reads` -/
def reads : Ev M → List M.Loc
  | Ev.inX _ _ => []
  | Ev.inY _ _ => []
  | Ev.mv r _ => [r]
  | Ev.accE r r' => [r, r']
  | Ev.fwdE _ _ rs _ => rs
  | Ev.bwdE _ _ rs _ => rs
  | Ev.lossE _ _ rs _ => rs
  | Ev.arE _ rs => rs
  | Ev.agE _ rs => rs

/-- Agda: `writes` -/
def writes : Ev M → List M.Loc
  | Ev.inX _ w => [w]
  | Ev.inY _ w => [w]
  | Ev.mv _ w => [w]
  | Ev.accE r _ => [r]
  | Ev.fwdE _ _ _ ws => ws
  | Ev.bwdE _ _ _ ws => ws
  | Ev.lossE _ _ _ ws => ws
  | Ev.arE _ rs => rs
  | Ev.agE _ rs => rs

/-- Agda: `pairUp` -/
def pairUp {α : Type} : List α → List (α × α)
  | a :: g :: vs => (a, g) :: pairUp vs
  | _ => []

/-- Agda: `both` -/
def both {α : Type} (f g : Nat → α) : List Nat → List α
  | [] => []
  | t :: ts => f t :: g t :: both f g ts

/-- Agda: `prog` — member t of a block runs the block impl's rank t -/
def prog : Ev M → List M.V → List M.V
  | Ev.inX i _, _ => [M.x i]
  | Ev.inY i _, _ => [M.y i]
  | Ev.mv _ _, vs => vs
  | Ev.accE _ _, v :: w :: _ => [M.add v w]
  | Ev.accE _ _, _ => []
  | Ev.fwdE l k _ _, vs => (List.range k).map (fun t => M.Fi l t vs)
  | Ev.bwdE l k _ _, vs => both (fun t => M.Bgi l t (pairUp vs)) (fun t => M.Bθi l t (pairUp vs)) (List.range k)
  | Ev.lossE s k _ _, vs =>
      both (fun t => M.sc s (M.Hgi t (pairUp vs))) (fun t => M.sc s (M.Hli t (pairUp vs))) (List.range k)
  | Ev.arE _ _, [] => []
  | Ev.arE k _, v :: vs => List.replicate k (vs.foldl M.add v)
  | Ev.agE k _, vs => List.replicate k (M.gather vs)

/-- Agda: `Pairs` -/
inductive Pairs (P Q : Tag M) : List (Tag M) → Prop where
  | nil : Pairs P Q []
  | pair {τs : List (Tag M)} : Pairs P Q τs → Pairs P Q (P :: Q :: τs)

/-- Agda: `Ok` — the checks of wiring.Run.do_<op> (a block's `need`) and Run.fire
(every member of a TP group presents the same inputs) -/
inductive Ok : Ev M → List (Tag M) → List (Tag M) → Prop where
  | inX {i : Idx M.n} {w : M.Loc} : Ok (Ev.inX i w) [] [Tag.act 0 i]
  | inY {i : Idx M.n} {w : M.Loc} : Ok (Ev.inY i w) [] [Tag.label i]
  | mv {r w : M.Loc} {τ : Tag M} : Ok (Ev.mv r w) [τ] [τ]
  | acc {r r' : M.Loc} {τ τ' τ'' : Tag M} : M.Add τ τ' τ'' → Ok (Ev.accE r r') [τ, τ'] [τ'']
  | fwd {l k : Nat} {rs ws : List M.Loc} {i : Idx M.n} {τs : List (Tag M)} :
      (∀ τ, τ ∈ τs → τ = Tag.act l i) →
      Ok (Ev.fwdE l k rs ws) τs ((List.range k).map (fun _ => Tag.act (l + 1) i))
  | bwd {l k : Nat} {rs ws : List M.Loc} {i : Idx M.n} {s : M.S} {τs : List (Tag M)} :
      l + 1 ≤ M.L → M.Pairs (Tag.act l i) (Tag.gact (l + 1) i s) τs →
      Ok (Ev.bwdE l k rs ws) τs
        (both (fun _ => Tag.gact l i s) (fun t => Tag.grad l t (single i) s) (List.range k))
  | loss {s : M.S} {k : Nat} {rs ws : List M.Loc} {i : Idx M.n} {τs : List (Tag M)} :
      M.Pairs (Tag.act M.L i) (Tag.label i) τs →
      Ok (Ev.lossE s k rs ws) τs
        (both (fun _ => Tag.gact M.L i s) (fun _ => Tag.loss (single i) s) (List.range k))
  | ar {k : Nat} {rs : List M.Loc} {τ τ' : Tag M} {τs : List (Tag M)} :
      M.AddAll τ τs τ' → Ok (Ev.arE k rs) (τ :: τs) (List.replicate k τ')
  | ag {k : Nat} {rs : List M.Loc} {τs : List (Tag M)} : Ok (Ev.agE k rs) τs (List.replicate k Tag.gathered)

/-- Agda: `reps-vals` -/
theorem reps_vals {l : Nat} {i : Idx M.n} : {vs : List M.V} → {τs : List (Tag M)} →
    (∀ τ, τ ∈ τs → τ = Tag.act l i) → M.Goods vs τs → ∀ v, v ∈ vs → v = M.actRef l i
  | _, _, _, Goods.nil, _, h => nomatch h
  | _, _, es, @Goods.cons _ v τ vs τs p g, w, h => by
      cases h with
      | head => rw [es τ (List.Mem.head τs)] at p; exact p
      | tail _ h' => exact reps_vals (fun τ' m => es τ' (List.Mem.tail τ m)) g w h'

/-- Agda: `pairs-vals` -/
theorem pairs_vals {P Q : Tag M} {p q : M.V} (hp : ∀ v, M.Carries v P → v = p)
    (hq : ∀ v, M.Carries v Q → v = q) : {vs : List M.V} → {τs : List (Tag M)} →
    M.Pairs P Q τs → M.Goods vs τs → ∀ z, z ∈ pairUp vs → z = (p, q)
  | _, _, Pairs.nil, Goods.nil, _, h => nomatch h
  | _, _, Pairs.pair ps, Goods.cons pu (Goods.cons pw g), z, h => by
      cases h with
      | head => rw [hp _ pu, hq _ pw]
      | tail _ h' => exact pairs_vals hp hq ps g z h'

/-- Agda: `goods-map` -/
theorem goods_map {f : Nat → M.V} {g : Nat → Tag M} (h : ∀ t, M.Carries (f t) (g t)) :
    (ts : List Nat) → M.Goods (ts.map f) (ts.map g)
  | [] => Goods.nil
  | t :: ts => Goods.cons (h t) (goods_map h ts)

/-- Agda: `goods-both` -/
theorem goods_both {f g : Nat → M.V} {f' g' : Nat → Tag M} (hf : ∀ t, M.Carries (f t) (f' t))
    (hg : ∀ t, M.Carries (g t) (g' t)) : (ts : List Nat) → M.Goods (both f g ts) (both f' g' ts)
  | [] => Goods.nil
  | t :: ts => Goods.cons (hf t) (Goods.cons (hg t) (goods_both hf hg ts))

/-- Agda: `goods-rep` -/
theorem goods_rep {v : M.V} {τ : Tag M} (p : M.Carries v τ) :
    (k : Nat) → M.Goods (List.replicate k v) (List.replicate k τ)
  | 0 => Goods.nil
  | k + 1 => Goods.cons p (goods_rep p k)

/-- Agda: `local` — each event the checker accepts maps inputs that carry
their tags to outputs that carry theirs -/
theorem local_ok {e : Ev M} {vs : List M.V} {τs τs' : List (Tag M)} (ok : M.Ok e τs τs')
    (gs : M.Goods vs τs) : M.Goods (M.prog e vs) τs' := by
  cases ok with
  | inX => cases gs; refine Goods.cons ?_ Goods.nil; exact rfl
  | inY => cases gs; refine Goods.cons ?_ Goods.nil; exact rfl
  | mv => exact gs
  | acc a =>
    cases gs with
    | cons p gs => cases gs with
      | cons q gs => cases gs; exact Goods.cons (M.add_sound a p q) Goods.nil
  | @fwd l k _ _ i _ es =>
    exact M.goods_map (f := fun t => M.Fi l t vs) (g := fun _ => Tag.act (l + 1) i)
      (fun t => M.fwd_ref l t vs (M.actRef l i) (M.reps_vals es gs)) (List.range k)
  | @bwd l k _ _ i s _ lt ps =>
    have P := M.pairs_vals (P := Tag.act l i) (Q := Tag.gact (l + 1) i s) (p := M.actRef l i)
      (q := M.cot (l + 1) i s) (fun _ e => e) (fun _ e => e) ps gs
    exact M.goods_both (f := fun t => M.Bgi l t (pairUp vs)) (g := fun t => M.Bθi l t (pairUp vs))
      (f' := fun _ => Tag.gact l i s) (g' := fun t => Tag.grad l t (single i) s)
      (fun t => Eq.trans (M.bwd_ref l t (pairUp vs) _ _ P).1 (M.cot_step l i s lt).symm)
      (fun t => Eq.trans (M.bwd_ref l t (pairUp vs) _ _ P).2 (M.sum_single (M.gc l t s) i).symm)
      (List.range k)
  | @loss s k _ _ i _ ps =>
    have P := M.pairs_vals (P := Tag.act M.L i) (Q := Tag.label i) (p := M.actRef M.L i)
      (q := M.y i) (fun _ e => e) (fun _ e => e) ps gs
    exact M.goods_both (f := fun t => M.sc s (M.Hgi t (pairUp vs))) (g := fun t => M.sc s (M.Hli t (pairUp vs)))
      (f' := fun _ => Tag.gact M.L i s) (g' := fun _ => Tag.loss (single i) s)
      (fun t => Eq.trans (congrArg (M.sc s) (M.loss_ref t (pairUp vs) _ _ P).1) (M.cot_top i s).symm)
      (fun t => Eq.trans (congrArg (M.sc s) (M.loss_ref t (pairUp vs) _ _ P).2) (M.sum_single (M.lc s) i).symm)
      (List.range k)
  | @ar k _ _ _ _ a =>
    cases gs with
    | cons p g => exact M.goods_rep (M.addAll_sound a p g) k
  | @ag k _ _ => exact M.goods_rep (v := M.gather vs) (τ := Tag.gathered) trivial k

/-! The abstract run: registers, steps, and the simulation lemma -/

/-- Agda: `St` -/
abbrev St := M.Loc → Option (M.V × Tag M)

/-- Agda: `empty` -/
def empty : M.St := fun _ => none

/-- Agda: `set` -/
def set (σ : M.St) (r : M.Loc) (v : M.V) (τ : Tag M) (r' : M.Loc) : Option (M.V × Tag M) :=
  @ite _ (r' = r) (M.decLoc r' r) (some (v, τ)) (σ r')

/-- Agda: `write` -/
def write : M.St → List M.Loc → List M.V → List (Tag M) → M.St
  | σ, r :: rs, v :: vs, τ :: τs => write (M.set σ r v τ) rs vs τs
  | σ, _, _, _ => σ

/-- Agda: `Reads` — reading an empty register is an error (wiring.Run.get) -/
inductive Reads (σ : M.St) : List M.Loc → List M.V → List (Tag M) → Prop where
  | nil : Reads σ [] [] []
  | cons {r : M.Loc} {v : M.V} {τ : Tag M} {rs : List M.Loc} {vs : List M.V} {τs : List (Tag M)} :
      σ r = some (v, τ) → Reads σ rs vs τs → Reads σ (r :: rs) (v :: vs) (τ :: τs)

/-- Agda: `Step` -/
inductive Step (e : Ev M) (σ : M.St) : M.St → Prop where
  | step {vs : List M.V} {τs τs' : List (Tag M)} : M.Reads σ (M.reads e) vs τs → M.Ok e τs τs' →
      Step e σ (M.write σ (M.writes e) (M.prog e vs) τs')

/-- Agda: `Run` -/
inductive Run : List (Ev M) → M.St → M.St → Prop where
  | nil {σ : M.St} : Run [] σ σ
  | cons {e : Ev M} {es : List (Ev M)} {σ σ' σ'' : M.St} : M.Step e σ σ' → Run es σ' σ'' → Run (e :: es) σ σ''

/-- Agda: `Good` — every register carries its tag's reference value -/
def Good (σ : M.St) : Prop := ∀ r v τ, σ r = some (v, τ) → M.Carries v τ

/-- Agda: `empty-good` -/
theorem empty_good : M.Good M.empty := fun _ _ _ h => Option.noConfusion h

/-- Agda: `set-good` -/
theorem set_good {σ : M.St} (r : M.Loc) {v : M.V} {τ : Tag M} (g : M.Good σ) (p : M.Carries v τ) :
    M.Good (M.set σ r v τ) := by
  intro r' v' τ' e
  unfold set at e
  cases hd : M.decLoc r' r with
  | isTrue h => rw [hd] at e; cases e; exact p
  | isFalse h => rw [hd] at e; exact g r' v' τ' e

/-- Agda: `write-good` -/
theorem write_good : {σ : M.St} → (rs : List M.Loc) → {vs : List M.V} → {τs : List (Tag M)} →
    M.Good σ → M.Goods vs τs → M.Good (M.write σ rs vs τs)
  | _, [], _, _, g, _ => g
  | _, _ :: _, _, _, g, Goods.nil => g
  | _, r :: rs, _, _, g, Goods.cons p gs => write_good rs (M.set_good r g p) gs

/-- Agda: `reads-good` -/
theorem reads_good {σ : M.St} {rs : List M.Loc} {vs : List M.V} {τs : List (Tag M)}
    (g : M.Good σ) (rd : M.Reads σ rs vs τs) : M.Goods vs τs := by
  induction rd with
  | nil => exact Goods.nil
  | cons e _ ih => exact Goods.cons (g _ _ _ e) ih

/-- Agda: `simulation` -/
theorem simulation : {es : List (Ev M)} → {σ σ' : M.St} → M.Run es σ σ' → M.Good σ → M.Good σ'
  | _, _, _, Run.nil, g => g
  | _, _, _, Run.cons (Step.step rd ok) run, g =>
      simulation run (M.write_good _ g (M.local_ok ok (M.reads_good g rd)))

/-- Agda: `update-exact` — member t of an optimizer step reads grad[l, t, full, c]
(do_opt): its new shard is R's -/
theorem update_exact {es : List (Ev M)} {σ : M.St} (run : M.Run es M.empty σ) (l k : Nat) (rs : List M.Loc)
    (gs : List M.V) (rd : M.Reads σ rs gs ((List.range k).map (fun t => Tag.grad l t M.full M.c))) (t : Nat) :
    M.Oi l t gs = M.O l t (M.Gseq l t) := by
  have vals : ∀ (ts : List Nat) (gs' : List M.V),
      M.Goods gs' (ts.map (fun t => Tag.grad l t M.full M.c)) → gs' = ts.map (M.Gseq l) := by
    intro ts
    induction ts with
    | nil => intro gs' h; cases h; rfl
    | cons t ts ih =>
      intro gs' h
      cases h with
      | cons p g => exact congr (congrArg List.cons (M.grad_exact p)) (ih _ g)
  exact M.sgd_ref l t k gs (M.Gseq l) (vals _ gs (M.reads_good (M.simulation run M.empty_good) rd))

/-- Agda: `metric-exact` — a loss metric reads loss[full, c] (do_metric): it is R's -/
theorem metric_exact {es : List (Ev M)} {σ : M.St} (run : M.Run es M.empty σ) (r : M.Loc) {v : M.V}
    (e : σ r = some (v, Tag.loss M.full M.c)) : v = M.Lseq :=
  M.loss_exact (M.simulation run M.empty_good r v _ e)

end Model
end Pvcert.Composition.Template
