// SGEMM 7: warp tiling. 64 x 64 CTA tile, BK = 8, 128 threads = 4 warps arranged 2 x 2;
// each warp owns a 32 x 32 warp tile, computed in WMITER = 2 sub-tiles of 16 x 32;
// inside a sub-tile a lane owns a TM x TN = 4 x 4 block (lanes arranged 4 x 8).
// A is stored transposed in shared memory; loads and stores are float4.
// Launch: grid (N/64, M/64), block 128.
#define BM 64
#define BN 64
#define BK 8
#define WM 32
#define WN 32
#define WMITER 2
#define WNITER 1
#define WSUBM (WM / WMITER)   // 16
#define WSUBN (WN / WNITER)   // 32
#define TM 4
#define TN 4
#define NT 128

extern "C" __global__ void __launch_bounds__(NT)
sgemm_warptile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               int M, int N, int K)
{
    __shared__ __align__(16) float As[BK * BM];   // transposed: As[k * BM + m]
    __shared__ __align__(16) float Bs[BK * BN];
    const int t = threadIdx.x;
    const int warpIdx = t / 32, lane = t % 32;
    const int warpRow = warpIdx / (BN / WN);      // 0..1
    const int warpCol = warpIdx % (BN / WN);      // 0..1
    const int threadRowInWarp = lane / (WSUBN / TN);   // 0..3
    const int threadColInWarp = lane % (WSUBN / TN);   // 0..7
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;

    float acc[WMITER * TM * WNITER * TN];
    float regM[WMITER * TM], regN[WNITER * TN];
    for (int i = 0; i < WMITER * TM * WNITER * TN; ++i) acc[i] = 0.0f;

    const int rowA = t / 2, colA = (t % 2) * 4;     // one float4 of the 64 x 8 A tile
    const int rowB = t / 16, colB = (t % 16) * 4;   // one float4 of the 8 x 64 B tile

    for (int bk = 0; bk < K; bk += BK) {
        const float4 a = *reinterpret_cast<const float4*>(&A[rowA * K + colA]);
        As[(colA + 0) * BM + rowA] = a.x;
        As[(colA + 1) * BM + rowA] = a.y;
        As[(colA + 2) * BM + rowA] = a.z;
        As[(colA + 3) * BM + rowA] = a.w;
        *reinterpret_cast<float4*>(&Bs[rowB * BN + colB]) =
            *reinterpret_cast<const float4*>(&B[rowB * N + colB]);
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int dot = 0; dot < BK; ++dot) {
            for (int wm = 0; wm < WMITER; ++wm)
                for (int i = 0; i < TM; ++i)
                    regM[wm * TM + i] =
                        As[dot * BM + warpRow * WM + wm * WSUBM + threadRowInWarp * TM + i];
            for (int wn = 0; wn < WNITER; ++wn)
                for (int j = 0; j < TN; ++j)
                    regN[wn * TN + j] =
                        Bs[dot * BN + warpCol * WN + wn * WSUBN + threadColInWarp * TN + j];
            for (int wm = 0; wm < WMITER; ++wm)
                for (int wn = 0; wn < WNITER; ++wn)
                    for (int i = 0; i < TM; ++i)
                        for (int j = 0; j < TN; ++j)
                            acc[(wm * TM + i) * (WNITER * TN) + wn * TN + j] +=
                                regM[wm * TM + i] * regN[wn * TN + j];
        }
        __syncthreads();
    }
    for (int wm = 0; wm < WMITER; ++wm)
        for (int wn = 0; wn < WNITER; ++wn)
            for (int i = 0; i < TM; ++i) {
                const int r = warpRow * WM + wm * WSUBM + threadRowInWarp * TM + i;
                const int c = warpCol * WN + wn * WSUBN + threadColInWarp * TN;
                const float* v = &acc[(wm * TM + i) * (WNITER * TN) + wn * TN];
                *reinterpret_cast<float4*>(&C[r * N + c]) = make_float4(v[0], v[1], v[2], v[3]);
            }
}
