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

/-- Agda: `Stage` -/
structure Stage (T : Type) where
  sop : Op T          -- the specification operator
  impl : List (Op T)  -- the implementation operators of the stage
  inrels : Rel        -- the input relations the obligation assumes
  outrel : Expr       -- out sop = outrel, over implementation tensors

/-- Agda: `Obligation` -/
def Obligation {T : Type} (O : TensorOps T) (s : Stage T) : Prop :=
  ∀ ρs ρd : Env T, Holds O s.inrels ρs ρd →
    s.sop.fn (s.sop.ins.map ρs) = eval O s.outrel (run s.impl ρd)

/-- Agda: `dom` -/
def dom (R : Rel) : List Name := R.map Prod.fst

/-- Agda: `_⊆R_` -/
def SubRel (R L : Rel) : Prop := ∀ p, Mem p R → Mem p L

/-- Agda: `StageOK` — the side conditions of a stage, given the relations L
established so far -/
structure StageOK {T : Type} (O : TensorOps T) (L : Rel) (s : Stage T) : Prop where
  inputs : SubRel s.inrels L
  fresh : ¬ Mem s.sop.out (dom L)
  frame : ∀ p, Mem p L → ∀ n, Mem n (names p.2) → ¬ Mem n (writes s.impl)
  oblig : Obligation O s

/-- Agda: `extend` -/
def extend {T : Type} (L : Rel) (s : Stage T) : Rel := (s.sop.out, s.outrel) :: L

/-- Agda: `Valid` -/
def Valid {T : Type} (O : TensorOps T) : Rel → List (Stage T) → Prop
  | _, [] => True
  | L, s :: ss => StageOK O L s ∧ Valid O (extend L s) ss

/-- Agda: `final` -/
def final {T : Type} : Rel → List (Stage T) → Rel
  | L, [] => L
  | L, s :: ss => final (extend L s) ss

/-- Agda: `specG` -/
def specG {T : Type} (ss : List (Stage T)) : List (Op T) := ss.map Stage.sop

/-- Agda: `implG` -/
def implG {T : Type} : List (Stage T) → List (Op T)
  | [] => []
  | s :: ss => s.impl ++ implG ss

/-- Agda: `holds-sub` -/
theorem holds_sub {T : Type} (O : TensorOps T) {R L : Rel} {ρs ρd : Env T} (sub : SubRel R L)
    (h : Holds O L ρs ρd) : Holds O R ρs ρd :=
  holds_of_forall O R (fun p m => holds_of_mem O h (sub p m))

/-- Agda: `preserve` — established relations survive a stage that satisfies
its side conditions -/
theorem preserve {T : Type} (O : TensorOps T) (L : Rel) (s : Stage T) (ρs ρd : Env T) (v : T)
    (ok : StageOK O L s) (h : Holds O L ρs ρd) :
    Holds O L (upd ρs s.sop.out v) (run s.impl ρd) :=
  holds_of_forall O L (fun p m =>
    Eq.trans
      (upd_other ρs s.sop.out v p.1
        (fun e => ok.fresh (@Eq.subst Name (fun z => Mem z (dom L)) p.1 s.sop.out e
                              (mem_map Prod.fst m))))
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
      have hd : HoldsFor O (exec s.sop ρs) (run s.impl ρd) (s.sop.out, s.outrel) :=
        Eq.trans (upd_same ρs s.sop.out (s.sop.fn (s.sop.ins.map ρs)))
          (ok.oblig ρs ρd (holds_sub O ok.inputs h))
      have ih : Holds O (final (extend L s) ss) (run (specG ss) (exec s.sop ρs))
          (run (implG ss) (run s.impl ρd)) :=
        chain O (extend L s) ss v (exec s.sop ρs) (run s.impl ρd)
          (And.intro hd (preserve O L s ρs ρd (s.sop.fn (s.sop.ins.map ρs)) ok h))
      exact Eq.mpr
        (congrArg (fun z => Holds O (final (extend L s) ss) (run (specG ss) (exec s.sop ρs)) z)
          (run_append s.impl (implG ss) ρd))
        ih

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

end Pvcert.Composition
