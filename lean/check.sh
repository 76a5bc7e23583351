#!/usr/bin/env bash
# Check the Lean 4 port (core Lean only):  bash lean/check.sh
# Skips (exit 0) when lean/lake are not installed; installs nothing.
set -euo pipefail
cd "$(dirname "$0")"

status=0
# forbidden constructs (comments included, to keep it simple)
for pat in 'sorry' 'admit' 'axiom ' 'axiom	' 'native_decide' 'implemented_by' 'import Mathlib' 'import Std' 'import Batteries'; do
  if grep -rnF -e "$pat" --include='*.lean' . ; then
    echo "lean/check.sh: forbidden construct '$pat' found" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] || exit 1

if command -v lake >/dev/null 2>&1; then
  lake build
  echo "lean/check.sh: OK (lake build)"
elif command -v lean >/dev/null 2>&1; then
  out=.lake/manual
  for f in Pvcert/Vec.lean Pvcert/ShapeReduction/SIMD.lean Pvcert/ShapeReduction/Reduction.lean \
           Pvcert/ShapeReduction/MapAxis.lean Pvcert/Composition/Clean.lean Pvcert/Composition/Chain.lean \
           Pvcert/ShapeReduction/Summed.lean Pvcert/Composition/Template.lean Pvcert/Composition/Booleans.lean Pvcert/Composition/Congruence.lean Pvcert/Composition/Intervals.lean Pvcert/Composition/Positivity.lean \
           Pvcert.lean; do
    mkdir -p "$out/$(dirname "$f")"
    LEAN_PATH="$out${LEAN_PATH:+:$LEAN_PATH}" lean -o "$out/${f%.lean}.olean" "$f"
  done
  echo "lean/check.sh: OK (lean)"
else
  echo "lean not found, skipping"
  exit 0
fi
