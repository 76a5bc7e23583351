// SGEMM 4: 1D register blocking. 64 x 64 tile, BK = 8, 512 threads; each thread computes
// TM = 8 consecutive rows of one column, caching the B element in a register.
// Each thread loads exactly one element of the A tile and one of the B tile per K-step.
// K must be a multiple of 8. Launch: grid (N/64, M/64), block 512.
#define BM 64
#define BN 64
#define BK 8
#define TM 8
#define NT (BM * BN / TM)

extern "C" __global__ void __launch_bounds__(NT)
sgemm_1d_blocktile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                   int M, int N, int K)
{
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int t = threadIdx.x;
    const int threadCol = t % BN;
    const int threadRow = t / BN;          // 0..7, owns rows threadRow*TM .. +TM-1
    const int innerColA = t % BK, innerRowA = t / BK;   // 64 x 8 tile of A
    const int innerColB = t % BN, innerRowB = t / BN;   // 8 x 64 tile of B
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;

    float acc[TM];
    for (int i = 0; i < TM; ++i) acc[i] = 0.0f;

    for (int bk = 0; bk < K; bk += BK) {
        As[innerRowA * BK + innerColA] = A[innerRowA * K + innerColA];
        Bs[innerRowB * BN + innerColB] = B[innerRowB * N + innerColB];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int dot = 0; dot < BK; ++dot) {
            const float b = Bs[dot * BN + threadCol];
            for (int i = 0; i < TM; ++i)
                acc[i] += As[(threadRow * TM + i) * BK + dot] * b;
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        C[(threadRow * TM + i) * N + threadCol] = acc[i];
}
