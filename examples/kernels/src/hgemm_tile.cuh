// TileLang / CUTLASS-style f16 GEMM on tensor cores (shared by hgemm_tile_*.cu): C = A * B,
// A [M][K], B [K][N] __half row-major, C [M][N] float32; f32 accumulate.
// CTA tile BM x BN x BK (BK = 32), 128 threads = 4 warps as 2 x 2, warp tile WM x WN of
// m16n8k16 mma tiles (inline PTX). Shared memory, two stages:
//   A stage: BM x 32 halves, rows of four 16-byte chunks, XOR-swizzled (chunk c of row r
//            stored at chunk c ^ (r % 4)); A fragments by ldmatrix.x4
//   B stage: 32 x BN halves, k-major, rows padded by 8 halves; B fragments by
//            ldmatrix.x4.trans (two n8 tiles per load)
// Double-buffered K loop without cp.async: the next K-tile is read from global memory into
// registers before the current one is multiplied and written to the other stage after it,
// with one __syncthreads per K-tile. M, N multiples of the tile, K a multiple of 32.
// Launch: grid (N / BN, M / BM), block 128; sm_80+.
#include "mma_ptx.cuh"

template <int BM, int BN>
__device__ __forceinline__ void hgemm_tile(const __half* __restrict__ A, const __half* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K)
{
    constexpr int BK = 32, NT = 128, WM = BM / 2, WN = BN / 2, MI = WM / 16, NI = WN / 8;
    constexpr int BNP = BN + 8;                          // padded B row (halves)
    constexpr int ACH = BM * BK / 8 / NT, BCH = BK * BN / 8 / NT;   // 16-byte chunks per thread
    __shared__ __align__(16) __half As[2][BM * BK];
    __shared__ __align__(16) __half Bs[2][BK * BNP];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm = warp / 2, wn = warp % 2;
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;

    uint4 ra[ACH], rb[BCH];
    auto load = [&](int k0) {
#pragma unroll
        for (int i = 0; i < ACH; ++i) {
            const int c = t + i * NT, row = c / 4, ch = c % 4;
            ra[i] = *reinterpret_cast<const uint4*>(&A[row * K + k0 + ch * 8]);
        }
#pragma unroll
        for (int i = 0; i < BCH; ++i) {
            const int c = t + i * NT, row = c / (BN / 8), ch = c % (BN / 8);
            rb[i] = *reinterpret_cast<const uint4*>(&B[(k0 + row) * N + ch * 8]);
        }
    };
    auto store = [&](int st) {
#pragma unroll
        for (int i = 0; i < ACH; ++i) {
            const int c = t + i * NT, row = c / 4, ch = c % 4;
            *reinterpret_cast<uint4*>(&As[st][row * BK + ((ch ^ (row % 4)) * 8)]) = ra[i];
        }
#pragma unroll
        for (int i = 0; i < BCH; ++i) {
            const int c = t + i * NT, row = c / (BN / 8), ch = c % (BN / 8);
            *reinterpret_cast<uint4*>(&Bs[st][row * BNP + ch * 8]) = rb[i];
        }
    };

    float acc[MI][NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

    load(0);
    store(0);
    __syncthreads();
    const int KT = K / BK;
    for (int kt = 0; kt < KT; ++kt) {
        const int st = kt % 2;
        if (kt + 1 < KT) load((kt + 1) * BK);
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) {
            h2reg af[MI][4], bf[NI / 2][4];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                const int row = wm * WM + mi * 16 + (lane % 8) + 8 * ((lane / 8) % 2);
                const int ch = ks * 2 + lane / 16;
                ldsm_x4(af[mi], &As[st][row * BK + ((ch ^ (row % 4)) * 8)]);
            }
#pragma unroll
            for (int nj = 0; nj < NI / 2; ++nj) {
                const int row = ks * 16 + (lane % 8) + 8 * ((lane / 8) % 2);
                ldsm_x4_trans(bf[nj], &Bs[st][row * BNP + wn * WN + nj * 16 + 8 * (lane / 16)]);
            }
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int ni = 0; ni < NI; ++ni)
                    mma16816(acc[mi][ni], af[mi], bf[ni / 2][2 * (ni % 2)], bf[ni / 2][2 * (ni % 2) + 1]);
        }
        if (kt + 1 < KT) store(st ^ 1);
#ifndef HGEMM_TILE_BUG_NO_SYNC   // defined only by bug_hgemm_tile_missing_sync.cu
        __syncthreads();
#endif
    }

    const int g = lane / 4, c2 = 2 * (lane % 4);
    C += (blockIdx.y * BM + wm * WM) * N + blockIdx.x * BN + wn * WN;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
            const int r = mi * 16 + g, col = ni * 8 + c2;
            C[r * N + col] = acc[mi][ni][0];
            C[r * N + col + 1] = acc[mi][ni][1];
            C[(r + 8) * N + col] = acc[mi][ni][2];
            C[(r + 8) * N + col + 1] = acc[mi][ni][3];
        }
}
