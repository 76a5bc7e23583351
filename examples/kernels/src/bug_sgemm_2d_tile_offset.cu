// PLANTED BUG (copy of sgemm_2d_blocktile, one change): the B pointer advances by
// BK * BN (the tile width) instead of BK * N (the matrix width) per K-step, so from the
// second K-step on the wrong rows of B are read (rows 4..11 instead of 8..15 when
// N = 128, BK = 8). Stays in bounds; expected verdict: not-equivalent.
// Original: 2D register blocking. 64 x 64 tile, BK = 8, 256 threads; each thread computes
// a TM x TN = 4 x 4 block of outputs from register copies of a column of As (regM) and
// a row of Bs (regN). K must be a multiple of 8. Launch: grid (N/64, M/64), block 256.
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4
#define NT ((BM / TM) * (BN / TN))

extern "C" __global__ void __launch_bounds__(NT)
bug_sgemm_2d_tile_offset(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                   int M, int N, int K)
{
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int t = threadIdx.x;
    const int threadCol = t % (BN / TN);   // 0..15
    const int threadRow = t / (BN / TN);   // 0..15
    const int innerColA = t % BK, innerRowA = t / BK;   // rows 0..31, stride 32
    const int innerColB = t % BN, innerRowB = t / BN;   // rows 0..3, stride 4
    const int strideA = NT / BK, strideB = NT / BN;
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;

    float acc[TM * TN];
    float regM[TM], regN[TN];
    for (int i = 0; i < TM * TN; ++i) acc[i] = 0.0f;

    for (int bk = 0; bk < K; bk += BK) {
        for (int off = 0; off < BM; off += strideA)
            As[(innerRowA + off) * BK + innerColA] = A[(innerRowA + off) * K + innerColA];
        for (int off = 0; off < BK; off += strideB)
            Bs[(innerRowB + off) * BN + innerColB] = B[(innerRowB + off) * N + innerColB];
        __syncthreads();
        A += BK;
        B += BK * BN;   // BUG: should be BK * N
        for (int dot = 0; dot < BK; ++dot) {
            for (int i = 0; i < TM; ++i) regM[i] = As[(threadRow * TM + i) * BK + dot];
            for (int j = 0; j < TN; ++j) regN[j] = Bs[dot * BN + threadCol * TN + j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j)
                    acc[i * TN + j] += regM[i] * regN[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j)
            C[(threadRow * TM + i) * N + threadCol * TN + j] = acc[i * TN + j];
}
