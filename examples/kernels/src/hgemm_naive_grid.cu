// HGEMM reference (naive) for any CTA tile: C = A * B with f16 inputs converted to f32,
// f32 output; A [M][K], B [K][N], C [M][N] row-major. CTA (bx, by) owns the tile of
// BM = M / gridDim.y rows and BN = N / gridDim.x columns; its threads walk the tile's
// elements and compute each as a plain dot product from global memory.
// Launch: grid (N / BN, M / BM), any block.
#include <cuda_fp16.h>

extern "C" __global__ void
hgemm_naive_grid(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C,
                 int M, int N, int K)
{
    const int BM = M / gridDim.y, BN = N / gridDim.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    for (int e = threadIdx.x; e < BM * BN; e += blockDim.x) {
        const int r = row0 + e / BN, c = col0 + e % BN;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += __half2float(A[r * K + k]) * __half2float(B[k * N + c]);
        C[r * N + c] = acc;
    }
}
