// TileLang / CUTLASS-style tensor-core GEMM, CTA tile 32 x 32 x 32 (see hgemm_tile.cuh):
// 4 warps of 16 x 16, swizzled A / padded B shared stages, register-staged double buffering.
// Launch: grid (N / 32, M / 32), block 128.
#include "hgemm_tile.cuh"

extern "C" __global__ void __launch_bounds__(128)
hgemm_tile_32x32x32(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    hgemm_tile<32, 32>(A, B, C, M, N, K);
}
