// SGEMM 8: double buffering with producer / consumer warps. 64 x 64 tile, BK = 8,
// 256 threads. Threads 0..127 (warps 0-3) only LOAD: tile kt+1 into buffer (kt+1)%2
// while threads 128..255 (warps 4-7) COMPUTE on buffer kt%2 (8 x 4 outputs each).
// The two groups execute __syncthreads() in DIFFERENT branches of a thread-divergent
// `if`: each group executes exactly numTiles + 1 barriers, so barrier k of one group
// matches barrier k of the other (bar.sync counts arrivals, not program counters).
// Race-free: in the interval between barriers kt and kt+1 producers write buffer
// (kt+1)%2 and consumers read buffer kt%2.
// Launch: grid (N/64, M/64), block 256.
#define BM 64
#define BN 64
#define BK 8
#define TM 8
#define TN 4
#define NT 256
#define NPROD 128

__device__ __forceinline__ void load_tile(const float* A, const float* B, int K, int N, int kt,
                                          float* As, float* Bs, int t)
{
    const int rowA = t / 2, colA = (t % 2) * 4;     // 64 x 8 A tile: one float4 per thread
    const int rowB = t / 16, colB = (t % 16) * 4;   // 8 x 64 B tile: one float4 per thread
    const float4 a = *reinterpret_cast<const float4*>(&A[rowA * K + kt * BK + colA]);
    As[(colA + 0) * BM + rowA] = a.x;
    As[(colA + 1) * BM + rowA] = a.y;
    As[(colA + 2) * BM + rowA] = a.z;
    As[(colA + 3) * BM + rowA] = a.w;
    *reinterpret_cast<float4*>(&Bs[rowB * BN + colB]) =
        *reinterpret_cast<const float4*>(&B[(kt * BK + rowB) * N + colB]);
}

extern "C" __global__ void __launch_bounds__(NT)
sgemm_double_buffer(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                    int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK * BM];   // transposed: As[buf][k * BM + m]
    __shared__ __align__(16) float Bs[2][BK * BN];
    const int t = threadIdx.x;
    const int numTiles = K / BK;
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;

    if (t < NPROD) {
        // producer warps
        load_tile(A, B, K, N, 0, As[0], Bs[0], t);
        __syncthreads();
        for (int kt = 0; kt < numTiles; ++kt) {
            if (kt + 1 < numTiles)
                load_tile(A, B, K, N, kt + 1, As[(kt + 1) % 2], Bs[(kt + 1) % 2], t);
            __syncthreads();
        }
    } else {
        // consumer warps
        const int u = t - NPROD;
        const int threadRow = u / (BN / TN);   // 0..7  -> rows threadRow*8 .. +7
        const int threadCol = u % (BN / TN);   // 0..15 -> cols threadCol*4 .. +3
        float acc[TM * TN];
        for (int i = 0; i < TM * TN; ++i) acc[i] = 0.0f;
        __syncthreads();
        for (int kt = 0; kt < numTiles; ++kt) {
            const float* as = As[kt % 2];
            const float* bs = Bs[kt % 2];
            for (int dot = 0; dot < BK; ++dot) {
                float regM[TM], regN[TN];
                for (int i = 0; i < TM; ++i) regM[i] = as[dot * BM + threadRow * TM + i];
                for (int j = 0; j < TN; ++j) regN[j] = bs[dot * BN + threadCol * TN + j];
                for (int i = 0; i < TM; ++i)
                    for (int j = 0; j < TN; ++j)
                        acc[i * TN + j] += regM[i] * regN[j];
            }
            __syncthreads();
        }
        for (int i = 0; i < TM; ++i)
            *reinterpret_cast<float4*>(&C[(threadRow * TM + i) * N + threadCol * TN]) =
                make_float4(acc[i * TN + 0], acc[i * TN + 1], acc[i * TN + 2], acc[i * TN + 3]);
    }
}
