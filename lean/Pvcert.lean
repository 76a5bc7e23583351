-- Lean 4 port (core Lean only) of the pvcert Agda development: parts (b), (c) and the template wiring (d).
import Pvcert.Vec
import Pvcert.ShapeReduction.SIMD
import Pvcert.ShapeReduction.Reduction
import Pvcert.ShapeReduction.MapAxis
import Pvcert.Composition.Clean
import Pvcert.Composition.Chain
import Pvcert.Composition.Template
