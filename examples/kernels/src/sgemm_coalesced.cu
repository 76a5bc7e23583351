// SGEMM 2: global-memory coalescing. Same as sgemm_naive, but consecutive threads take
// consecutive COLUMNS of the 64 x 64 tile, so B and C accesses are coalesced.
// Launch: grid (N/64, M/64), block 256.
#define BM 64
#define BN 64

extern "C" __global__ void __launch_bounds__(256)
sgemm_coalesced(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K)
{
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    for (int e = threadIdx.x; e < BM * BN; e += blockDim.x) {
        const int r = row0 + e / BN;
        const int c = col0 + e % BN;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[r * K + k] * B[k * N + c];
        C[r * N + c] = acc;
    }
}
