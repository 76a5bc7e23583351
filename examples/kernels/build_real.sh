#!/usr/bin/env bash
# Regenerate ptx/real/<name>.ptx from src/real/<name>.cu as nvcc emits real kernels:
# -O3 with -lineinfo (.loc / .file directives), no fast math. No GPU needed.
# Usage: bash examples/kernels/build_real.sh        (from anywhere)
set -euo pipefail
cd "$(dirname "$0")"
NVCC="${NVCC:-nvcc}"
command -v "$NVCC" >/dev/null 2>&1 || { echo "build_real.sh: error: nvcc not found" >&2; exit 1; }
FLAGS=(-arch=sm_80 -ptx -O3 -std=c++17 -lineinfo)
mkdir -p ptx/real
rm -f ptx/real/*.ptx
{ "$NVCC" --version; echo "flags: $NVCC ${FLAGS[*]} src/real/<name>.cu -o ptx/real/<name>.ptx"; } > ptx/real/VERSION
for src in src/real/*.cu; do
    name="$(basename "$src" .cu)"
    "$NVCC" "${FLAGS[@]}" "$src" -o "ptx/real/$name.ptx"
done
echo "build_real.sh: generated $(ls ptx/real/*.ptx | wc -l) PTX files in $(pwd)/ptx/real"
