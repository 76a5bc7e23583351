// A tiled SGEMM as an assistant would write it when asked for "a faster matmul with register
// tiling": 32 x 32 output tile per block, 8 x 8 threads, each thread a 4 x 4 register tile
// (rows ty*4 .. ty*4+3, columns tx*4 .. tx*4+3), K in steps of BK = 16 staged in shared
// memory (A tile padded by one column), bounds-checked loads and stores.
// C = A * B, A [M][K], B [K][N], C [M][N] float32 row-major.
// Launch: grid (ceil(N / 32), ceil(M / 32)), block (8, 8).
#define BM 32
#define BN 32
#define BK 16
#define TM 4
#define TN 4

extern "C" __global__ void __launch_bounds__(64)
sgemm_agent_regtile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                    int M, int N, int K)
{
    __shared__ float As[BM][BK + 1];
    __shared__ float Bs[BK][BN];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * blockDim.x + tx;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += 64) {
            const int r = i / BK, c = i % BK;
            As[r][c] = (row0 + r < M && k0 + c < K) ? A[(row0 + r) * K + k0 + c] : 0.0f;
        }
        for (int i = tid; i < BK * BN; i += 64) {
            const int r = i / BN, c = i % BN;
            Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(k0 + r) * N + col0 + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[ty * TM + i][kk];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int r = row0 + ty * TM + i, c = col0 + tx * TN + j;
            if (r < M && c < N) C[r * N + c] = acc[i][j];
        }
}
