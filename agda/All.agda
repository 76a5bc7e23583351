{-# OPTIONS --safe --without-K #-}
module All where
import Confluence.Mask
import Confluence.Context
import Confluence.Lang
import Confluence.Abstract
import Confluence.Diamond
import Confluence.Corollaries
import ShapeReduction.SIMD
import ShapeReduction.Reduction
import ShapeReduction.MapAxis
import ShapeReduction.Summed
import Composition.Clean
import Composition.Chain
import Confluence.TruePositives
import Confluence.Homomorphism
import Confluence.Counted
import Composition.Template
import Composition.Booleans
import Composition.Congruence
import Composition.Intervals
import Composition.Positivity
import ShapeReduction.Indexed
