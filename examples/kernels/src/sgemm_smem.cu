// SGEMM 3: shared-memory blocking. Per K-step the CTA stages a 64 x 8 tile of A and an
// 8 x 64 tile of B in shared memory; each of the 256 threads computes 16 outputs
// (column tx, rows ty + 4*i) reading both operands from shared memory.
// K must be a multiple of BK = 8. Launch: grid (N/64, M/64), block 256.
#define BM 64
#define BN 64
#define BK 8
#define NT 256

extern "C" __global__ void __launch_bounds__(NT)
sgemm_smem(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
           int M, int N, int K)
{
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int t = threadIdx.x;
    const int tx = t % BN;         // output column inside the tile
    const int ty = t / BN;         // 0..3: first output row inside the tile
    A += blockIdx.y * BM * K;                    // row block of A
    B += blockIdx.x * BN;                        // column block of B
    C += blockIdx.y * BM * N + blockIdx.x * BN;  // output tile

    float acc[BM / 4];
    for (int i = 0; i < BM / 4; ++i) acc[i] = 0.0f;

    for (int bk = 0; bk < K; bk += BK) {
        for (int i = t; i < BM * BK; i += NT)
            As[i] = A[(i / BK) * K + i % BK];
        for (int i = t; i < BK * BN; i += NT)
            Bs[i] = B[(i / BN) * N + i % BN];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int i = 0; i < BM / 4; ++i)
            for (int k = 0; k < BK; ++k)
                acc[i] += As[(ty + 4 * i) * BK + k] * Bs[k * BN + tx];
        __syncthreads();
    }
    for (int i = 0; i < BM / 4; ++i)
        C[(ty + 4 * i) * N + tx] = acc[i];
}
