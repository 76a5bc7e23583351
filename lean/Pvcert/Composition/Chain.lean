/-
Composition: per-stage obligations, discharged in topological order, give the
end-to-end relation between the outputs of the specification graph and of the
implementation graph.  Port of agda/Composition/Chain.agda, statement by
statement.  Core Lean only.
-/
import Pvcert.Composition.Clean

namespace Pvcert.Composition

/-- Agda: `Op` -/
structure Op (T : Type) where
  out : Name
  ins : List Name
  fn : List T → T

/-- Agda: `upd` -/
def upd {T : Type} (ρ : Env T) (n : Name) (v : T) : Env T :=
  fun m => if m = n then v else ρ m

/-- Agda: `upd-same` -/
theorem upd_same {T : Type} (ρ : Env T) (n : Name) (v : T) : upd ρ n v n = v := by
  show (if n = n then v else ρ n) = v
  exact if_pos rfl

/-- Agda: `upd-other` -/
theorem upd_other {T : Type} (ρ : Env T) (n : Name) (v : T) (m : Name) (h : m ≠ n) :
    upd ρ n v m = ρ m := by
  show (if m = n then v else ρ m) = ρ m
  exact if_neg h

/-- Agda: `exec` -/
def exec {T : Type} (o : Op T) (ρ : Env T) : Env T := upd ρ o.out (o.fn (o.ins.map ρ))

/-- Agda: `run` -/
def run {T : Type} : List (Op T) → Env T → Env T
  | [], ρ => ρ
  | o :: os, ρ => run os (exec o ρ)

/-- Agda: `writes` -/
def writes {T : Type} (os : List (Op T)) : List Name := os.map Op.out

/-- Agda: `run-++` -/
theorem run_append {T : Type} : (xs ys : List (Op T)) → (ρ : Env T) →
    run (xs ++ ys) ρ = run ys (run xs ρ)
  | [], _, _ => rfl
  | o :: xs, ys, ρ => run_append xs ys (exec o ρ)

/-- Agda: `run-frame` — running operators leaves every name they do not write unchanged -/
theorem run_frame {T : Type} : (os : List (Op T)) → (ρ : Env T) → (n : Name) →
    ¬ Mem n (writes os) → run os ρ n = ρ n
  | [], _, _, _ => rfl
  | o :: os, ρ, n, nin =>
      Eq.trans (run_frame os (exec o ρ) n (fun m => nin (Mem.there o.out m)))
        (upd_other ρ o.out (o.fn (o.ins.map ρ)) n
          (fun e => nin (@Eq.subst Name (fun z => Mem z (writes (o :: os))) o.out n e.symm
                           (Mem.here (writes os)))))

/-- Agda: `Stage` — a sub-graph of the specification (one operator, or a
TrainVerify stage of several), the implementation operators realising it,
the input relations its obligation assumes and the relations of its outputs -/
structure Stage (T : Type) where
  spec : List (Op T)   -- the specification operators of the stage
  impl : List (Op T)   -- the implementation operators of the stage
  inrels : Rel         -- the input relations the obligation assumes
  outrels : Rel        -- the relations of the stage's outputs

/-- Agda: `Obligation` -/
def Obligation {T : Type} (O : TensorOps T) (s : Stage T) : Prop :=
  ∀ ρs ρd : Env T, Holds O s.inrels ρs ρd → Holds O s.outrels (run s.spec ρs) (run s.impl ρd)

/-- Agda: `dom` -/
def dom (R : Rel) : List Name := R.map Prod.fst

/-- Agda: `_⊆R_` -/
def SubRel (R L : Rel) : Prop := ∀ p, Mem p R → Mem p L

/-- Agda: `StageOK` — the side conditions of a stage, given the relations L
established so far -/
structure StageOK {T : Type} (O : TensorOps T) (L : Rel) (s : Stage T) : Prop where
  inputs : SubRel s.inrels L
  fresh : ∀ n, Mem n (writes s.spec) → ¬ Mem n (dom L)
  frame : ∀ p, Mem p L → ∀ n, Mem n (names p.2) → ¬ Mem n (writes s.impl)
  oblig : Obligation O s

/-- Agda: `extend` -/
def extend {T : Type} (L : Rel) (s : Stage T) : Rel := s.outrels ++ L

/-- Agda: `Valid` -/
def Valid {T : Type} (O : TensorOps T) : Rel → List (Stage T) → Prop
  | _, [] => True
  | L, s :: ss => StageOK O L s ∧ Valid O (extend L s) ss

/-- Agda: `final` -/
def final {T : Type} : Rel → List (Stage T) → Rel
  | L, [] => L
  | L, s :: ss => final (extend L s) ss

/-- Agda: `specG` -/
def specG {T : Type} : List (Stage T) → List (Op T)
  | [] => []
  | s :: ss => s.spec ++ specG ss

/-- Agda: `implG` -/
def implG {T : Type} : List (Stage T) → List (Op T)
  | [] => []
  | s :: ss => s.impl ++ implG ss

/-- Agda: `holds-sub` -/
theorem holds_sub {T : Type} (O : TensorOps T) {R L : Rel} {ρs ρd : Env T} (sub : SubRel R L)
    (h : Holds O L ρs ρd) : Holds O R ρs ρd :=
  holds_of_forall O R (fun p m => holds_of_mem O h (sub p m))

/-- Agda: `++⁺` of All -/
theorem holds_append {T : Type} (O : TensorOps T) {ρs ρd : Env T} : (R L : Rel) →
    Holds O R ρs ρd → Holds O L ρs ρd → Holds O (R ++ L) ρs ρd
  | [], _, _, hL => hL
  | _ :: R, L, hR, hL => And.intro (And.left hR) (holds_append O R L (And.right hR) hL)

/-- Agda: `preserve` — established relations survive a stage that satisfies
its side conditions -/
theorem preserve {T : Type} (O : TensorOps T) (L : Rel) (s : Stage T) (ρs ρd : Env T)
    (ok : StageOK O L s) (h : Holds O L ρs ρd) :
    Holds O L (run s.spec ρs) (run s.impl ρd) :=
  holds_of_forall O L (fun p m =>
    Eq.trans
      (run_frame s.spec ρs p.1 (fun w => ok.fresh p.1 w (mem_map Prod.fst m)))
      (Eq.trans (holds_of_mem O h m)
        (eval_frame O p.2 ρd (run s.impl ρd)
          (fun n nm => (run_frame s.impl ρd n (ok.frame p m n nm)).symm))))

/-- Agda: `chain` — the composition theorem: obligations discharged in
topological order give the end-to-end relation. -/
theorem chain {T : Type} (O : TensorOps T) : (L : Rel) → (ss : List (Stage T)) → Valid O L ss →
    (ρs ρd : Env T) → Holds O L ρs ρd →
    Holds O (final L ss) (run (specG ss) ρs) (run (implG ss) ρd)
  | _, [], _, _, _, h => h
  | L, s :: ss, hv, ρs, ρd, h => by
      have ok : StageOK O L s := And.left hv
      have v : Valid O (extend L s) ss := And.right hv
      have ih : Holds O (final (extend L s) ss) (run (specG ss) (run s.spec ρs))
          (run (implG ss) (run s.impl ρd)) :=
        chain O (extend L s) ss v (run s.spec ρs) (run s.impl ρd)
          (holds_append O s.outrels L (ok.oblig ρs ρd (holds_sub O ok.inputs h))
            (preserve O L s ρs ρd ok h))
      have e1 : run (specG (s :: ss)) ρs = run (specG ss) (run s.spec ρs) :=
        run_append s.spec (specG ss) ρs
      have e2 : run (implG (s :: ss)) ρd = run (implG ss) (run s.impl ρd) :=
        run_append s.impl (implG ss) ρd
      exact Eq.mpr (congr (congrArg (Holds O (final (extend L s) ss)) e1) e2) ih

/-- Agda: `refinement` — every relation of the final lineage holds between the
outputs of the two graphs. -/
theorem refinement {T : Type} (O : TensorOps T) (L : Rel) (ss : List (Stage T))
    (v : Valid O L ss) (ρs ρd : Env T) (h : Holds O L ρs ρd) {t : Name} {e : Expr}
    (m : Mem (t, e) (final L ss)) :
    run (specG ss) ρs t = eval O e (run (implG ss) ρd) :=
  holds_of_mem O (chain O L ss v ρs ρd h) m

/-- Agda: `refinement-compose` -/
theorem refinement_compose {T : Type} (O : TensorOps T) (L : Rel) (ss : List (Stage T))
    (v : Valid O L ss) (ρs ρd : Env T) (h : Holds O L ρs ρd) (σ : Name → Expr) (ρr : Env T)
    (hσ : ∀ n, run (implG ss) ρd n = eval O (σ n) ρr) :
    Holds O (compose (final L ss) σ) (run (specG ss) ρs) ρr :=
  compose_sound O σ (run (specG ss) ρs) (run (implG ss) ρd) ρr hσ (final L ss)
    (chain O L ss v ρs ρd h)

/-! The per-operator form (ENTANGLE): a stage of one specification operator
whose obligation is stated for its single output. -/

/-- Agda: `single` -/
def single {T : Type} (o : Op T) (is : List (Op T)) (inr : Rel) (e : Expr) : Stage T :=
  { spec := [o], impl := is, inrels := inr, outrels := [(o.out, e)] }

/-- Agda: `single-obligation` -/
theorem single_obligation {T : Type} (O : TensorOps T) (o : Op T) (is : List (Op T)) (inr : Rel)
    (e : Expr) (ob : ∀ ρs ρd : Env T, Holds O inr ρs ρd → o.fn (o.ins.map ρs) = eval O e (run is ρd)) :
    Obligation O (single o is inr e) :=
  fun ρs ρd h => And.intro (Eq.trans (upd_same ρs o.out (o.fn (o.ins.map ρs))) (ob ρs ρd h)) True.intro

/-- Agda: `single-fresh` -/
theorem single_fresh {T : Type} (o : Op T) (L : Rel) (nin : ¬ Mem o.out (dom L)) :
    (n : Name) → Mem n [o.out] → ¬ Mem n (dom L)
  | _, Mem.here _ => nin
  | _, Mem.there _ h => nomatch h

end Pvcert.Composition
