#!/usr/bin/env bash
# Regenerate ptx/real/<name>.ptx from src/real/<name>.cu as nvcc emits real kernels:
# -O3 with -lineinfo (.loc / .file directives), no fast math. No GPU needed.
# src/real/cutlass_sgemm.cu includes the CUTLASS 4.2 headers, which the nvidia-cutlass wheel holds:
#   pip download --no-deps nvidia-cutlass==4.2.0.0 -d /tmp/cutlass_dl
#   unzip -q /tmp/cutlass_dl/nvidia_cutlass-4.2.0.0-py3-none-any.whl 'cutlass_library/source/include/*' -d /tmp/cutlass_x
#   CUTLASS_INCLUDE=/tmp/cutlass_x/cutlass_library/source/include   (the default)
# Usage: bash examples/kernels/build_real.sh        (from anywhere)
set -euo pipefail
cd "$(dirname "$0")"
NVCC="${NVCC:-nvcc}"
CUTLASS_INCLUDE="${CUTLASS_INCLUDE:-/tmp/cutlass_x/cutlass_library/source/include}"
command -v "$NVCC" >/dev/null 2>&1 || { echo "build_real.sh: error: nvcc not found" >&2; exit 1; }
[ -f "$CUTLASS_INCLUDE/cutlass/gemm/device/gemm.h" ] || {
    echo "build_real.sh: error: CUTLASS headers not found in $CUTLASS_INCLUDE (see the pip command above)" >&2; exit 1; }
FLAGS=(-arch=sm_80 -ptx -O3 -std=c++17 -lineinfo)
mkdir -p ptx/real
rm -f ptx/real/*.ptx
CUTLASS_FLAGS=(-I"$CUTLASS_INCLUDE" --expt-relaxed-constexpr)
{ "$NVCC" --version; echo "flags: $NVCC ${FLAGS[*]} src/real/<name>.cu -o ptx/real/<name>.ptx"
  echo "cutlass_sgemm.cu also: -I<CUTLASS_INCLUDE> ${CUTLASS_FLAGS[1]} (headers of the nvidia-cutlass 4.2.0.0 wheel)"; } > ptx/real/VERSION
for src in src/real/*.cu; do
    name="$(basename "$src" .cu)"
    extra=()
    [ "$name" = cutlass_sgemm ] && extra=("${CUTLASS_FLAGS[@]}")
    "$NVCC" "${FLAGS[@]}" "${extra[@]}" "$src" -o "ptx/real/$name.ptx"
done
echo "build_real.sh: generated $(ls ptx/real/*.ptx | wc -l) PTX files in $(pwd)/ptx/real"
