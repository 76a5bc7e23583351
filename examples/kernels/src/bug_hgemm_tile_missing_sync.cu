// PLANTED BUG (copy of hgemm_tile_32x32x32.cu): the double-buffered K loop of hgemm_tile.cuh
// without its __syncthreads(): a warp multiplies the next stage while another warp may still
// be storing it (and stores into a stage another warp may still be reading).
// Launch: grid (N / 32, M / 32), block 128.
#define HGEMM_TILE_BUG_NO_SYNC   // BUG
#include "hgemm_tile.cuh"

extern "C" __global__ void __launch_bounds__(128)
bug_hgemm_tile_missing_sync(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C,
                            int M, int N, int K)
{
    hgemm_tile<32, 32>(A, B, C, M, N, K);
}
