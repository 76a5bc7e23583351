// TileLang / CUTLASS-style tensor-core GEMM, CTA tile 64 x 64 x 32 (see hgemm_tile.cuh):
// 4 warps of 32 x 32, swizzled A / padded B shared stages, register-staged double buffering.
// Launch: grid (N / 64, M / 64), block 128.
#include "hgemm_tile.cuh"

extern "C" __global__ void __launch_bounds__(128)
hgemm_tile_64x64x32(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    hgemm_tile<64, 64>(A, B, C, M, N, K);
}
