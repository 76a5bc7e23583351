-- Lean 4 port (core Lean only) of the pvcert Agda development: parts (b), (c), the template wiring (d) and booleans as 0/1 variables.
import Pvcert.Vec
import Pvcert.ShapeReduction.SIMD
import Pvcert.ShapeReduction.Reduction
import Pvcert.ShapeReduction.MapAxis
import Pvcert.ShapeReduction.Summed
import Pvcert.ShapeReduction.Indexed
import Pvcert.Composition.Clean
import Pvcert.Composition.Chain
import Pvcert.Composition.Template
import Pvcert.Composition.Booleans
import Pvcert.Composition.Congruence
import Pvcert.Composition.Intervals
import Pvcert.Composition.Positivity
