// HGEMM reference (naive): C = A * B with f16 inputs converted to f32, f32 output.
// A is M x K, B is K x N, C is M x N, row-major. Each CTA owns the 64 x 64 tile
// C[64*blockIdx.y .., 64*blockIdx.x ..]; its 256 threads walk the tile's elements and
// compute each as a plain dot product from global memory.
// Launch: grid (N/64, M/64), block 256.
#include <cuda_fp16.h>
#define BM 64
#define BN 64

extern "C" __global__ void __launch_bounds__(256)
hgemm_naive(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C,
            int M, int N, int K)
{
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    for (int e = threadIdx.x; e < BM * BN; e += blockDim.x) {
        const int r = row0 + e / BN;
        const int c = col0 + e % BN;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += __half2float(A[r * K + k]) * __half2float(B[k * N + c]);
        C[r * N + c] = acc;
    }
}
