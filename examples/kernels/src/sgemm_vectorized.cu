// SGEMM 6: vectorized memory access. 64 x 64 tile, BK = 8, 256 threads, 4 x 4 outputs
// per thread. Global loads are float4; the A tile is stored TRANSPOSED in shared memory
// (As[k][m]) so that both register fragments are read with 128-bit shared loads; C is
// written with float4 stores. Threads 0..127 load the A tile, threads 128..255 the B
// tile (warp-uniform split). K and N must be multiples of 4 (K of 8).
// Launch: grid (N/64, M/64), block 256.
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4
#define NT 256

extern "C" __global__ void __launch_bounds__(NT)
sgemm_vectorized(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                 int M, int N, int K)
{
    __shared__ __align__(16) float As[BK * BM];   // transposed: As[k * BM + m]
    __shared__ __align__(16) float Bs[BK * BN];
    const int t = threadIdx.x;
    const int threadCol = t % (BN / TN);   // 0..15
    const int threadRow = t / (BN / TN);   // 0..15
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;

    float acc[TM * TN];
    for (int i = 0; i < TM * TN; ++i) acc[i] = 0.0f;

    for (int bk = 0; bk < K; bk += BK) {
        if (t < 128) {
            const int row = t / 2, col = (t % 2) * 4;          // A tile: 64 rows x 2 float4
            const float4 a = *reinterpret_cast<const float4*>(&A[row * K + col]);
            As[(col + 0) * BM + row] = a.x;
            As[(col + 1) * BM + row] = a.y;
            As[(col + 2) * BM + row] = a.z;
            As[(col + 3) * BM + row] = a.w;
        } else {
            const int u = t - 128;
            const int row = u / 16, col = (u % 16) * 4;        // B tile: 8 rows x 16 float4
            *reinterpret_cast<float4*>(&Bs[row * BN + col]) =
                *reinterpret_cast<const float4*>(&B[row * N + col]);
        }
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int dot = 0; dot < BK; ++dot) {
            const float4 m = *reinterpret_cast<const float4*>(&As[dot * BM + threadRow * TM]);
            const float4 n = *reinterpret_cast<const float4*>(&Bs[dot * BN + threadCol * TN]);
            const float regM[TM] = {m.x, m.y, m.z, m.w};
            const float regN[TN] = {n.x, n.y, n.z, n.w};
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j)
                    acc[i * TN + j] += regM[i] * regN[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i) {
        float4 out = make_float4(acc[i * TN + 0], acc[i * TN + 1], acc[i * TN + 2], acc[i * TN + 3]);
        *reinterpret_cast<float4*>(&C[(threadRow * TM + i) * N + threadCol * TN]) = out;
    }
}
