#!/usr/bin/env bash
# Regenerate ptx/<name>.ptx from src/<name>.cu with nvcc (no GPU needed).
# Usage: bash examples/kernels/build.sh        (from anywhere)
set -euo pipefail
cd "$(dirname "$0")"

NVCC="${NVCC:-nvcc}"
if ! command -v "$NVCC" >/dev/null 2>&1; then
    echo "build.sh: error: nvcc not found (set NVCC=/path/to/nvcc or put it on PATH)" >&2
    exit 1
fi

# Common flags: PTX only, optimized, no debug info / line info (keeps the PTX free of
# .loc directives). Every kernel targets sm_80; the WMMA kernel needs >= sm_70.
ARCH="-arch=sm_80"
FLAGS="-ptx -O3 -std=c++17"

mkdir -p ptx
rm -f ptx/*.ptx
"$NVCC" --version > ptx/VERSION
echo "flags: $NVCC $ARCH $FLAGS src/<name>.cu -o ptx/<name>.ptx" >> ptx/VERSION

n=0
for src in src/*.cu; do
    name="$(basename "$src" .cu)"
    cmd=("$NVCC" $ARCH $FLAGS "$src" -o "ptx/$name.ptx")
    echo "${cmd[*]}"
    "${cmd[@]}"
    n=$((n + 1))
done
echo "build.sh: generated $n PTX files in $(pwd)/ptx"

# Assemble every PTX file once (catches inline-PTX mistakes); output is discarded.
PTXAS="${PTXAS:-$(dirname "$(command -v "$NVCC")")/ptxas}"
if [ -x "$PTXAS" ]; then
    for ptx in ptx/*.ptx; do
        "$PTXAS" $ARCH -o /dev/null "$ptx"
    done
    echo "build.sh: ptxas $ARCH accepted all $n files"
else
    echo "build.sh: ptxas not found next to nvcc; skipped the assembly check" >&2
fi
