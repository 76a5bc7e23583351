// SGEMM reference (naive): C = A * B, A is M x K, B is K x N, C is M x N, all row-major.
// Each CTA owns the 64 x 64 tile C[64*blockIdx.y .., 64*blockIdx.x ..]; its 256 threads
// walk the tile's 4096 elements and compute each with a plain dot product from global
// memory. Consecutive threads take consecutive ROWS (uncoalesced, as in the tutorial's
// first kernel). Launch: grid (N/64, M/64), block 256.
#define BM 64
#define BN 64

extern "C" __global__ void __launch_bounds__(256)
sgemm_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K)
{
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    for (int e = threadIdx.x; e < BM * BN; e += blockDim.x) {
        const int r = row0 + e % BM;
        const int c = col0 + e / BM;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[r * K + k] * B[k * N + c];
        C[r * N + c] = acc;
    }
}
