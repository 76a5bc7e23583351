// HGEMM on tensor cores with raw PTX: ldmatrix + mma.sync.aligned.m16n8k16 (f16 inputs,
// f32 accumulate), written as inline PTX so that the register-level fragment layouts of
// the PTX ISA are exercised (unlike WMMA, whose fragment layout is opaque).
// 64 x 64 CTA tile, BK = 16, 128 threads = 4 warps arranged 2 x 2, warp tile 32 x 32 =
// 2 (m16) x 4 (n8) mma tiles. Per K-step the A tile (64 x 16) and B tile (16 x 64) are
// copied to shared memory with 16-byte vector accesses; A fragments come from
// ldmatrix.x4, B fragments from ldmatrix.x2.trans (B is stored k-major in shared memory).
// Accumulator layout (m16n8): lane l holds rows l/4 and l/4 + 8, columns 2*(l%4) and +1.
// M, N multiples of 64, K a multiple of 16. Launch: grid (N/64, M/64), block 128; sm_80+.
#include <cuda_fp16.h>

#ifdef PVCERT_CPU_EMU
#include "emu_mma_sync.h"   // CPU stand-ins for the helpers below (emu/run_emu.py only)
#else
typedef unsigned h2reg;     // two f16 values packed in one .b32 register

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// copy 8 consecutive halves (16 bytes)
__device__ __forceinline__ void copy8(__half* dst, const __half* src)
{
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
}

// four 8x8 b16 matrices; lane l supplies the address of row l%8 of matrix l/8
__device__ __forceinline__ void ldmatrix_x4(h2reg (&r)[4], const __half* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p))
                 : "memory");
}

// two 8x8 b16 matrices, transposed on load; lanes 0..15 supply the row addresses
__device__ __forceinline__ void ldmatrix_x2_trans(h2reg (&r)[2], const __half* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(smem_u32(p))
                 : "memory");
}

// d += a * b for one m16n8k16 tile
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const h2reg (&a)[4], const h2reg (&b)[2])
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

#define BM 64
#define BN 64
#define BK 16
#define NT 128

extern "C" __global__ void __launch_bounds__(NT)
hgemm_mma(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C,
          int M, int N, int K)
{
    __shared__ __align__(16) __half As[BM * BK];   // row-major 64 x 16
    __shared__ __align__(16) __half Bs[BK * BN];   // row-major 16 x 64 (k-major)
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int warpRow = warp / 2, warpCol = warp % 2;
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;

    float acc[2][4][4];
    for (int mi = 0; mi < 2; ++mi)
        for (int ni = 0; ni < 4; ++ni)
            for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

    for (int bk = 0; bk < K; bk += BK) {
        copy8(&As[(t / 2) * BK + (t % 2) * 8], &A[(t / 2) * K + (t % 2) * 8]);
        copy8(&Bs[(t / 8) * BN + (t % 8) * 8], &B[(t / 8) * N + (t % 8) * 8]);
        __syncthreads();
        A += BK;
        B += BK * N;

        h2reg af[2][4], bf[4][2];
        for (int mi = 0; mi < 2; ++mi) {
            // matrices: rows 0-7 / 8-15 of the m16 tile x k 0-7 / 8-15
            const int row = warpRow * 32 + mi * 16 + (lane % 8) + 8 * ((lane / 8) % 2);
            ldmatrix_x4(af[mi], &As[row * BK + 8 * (lane / 16)]);
        }
        for (int ni = 0; ni < 4; ++ni)
            ldmatrix_x2_trans(bf[ni], &Bs[(lane % 16) * BN + warpCol * 32 + ni * 8]);
        for (int mi = 0; mi < 2; ++mi)
            for (int ni = 0; ni < 4; ++ni)
                mma_m16n8k16(acc[mi][ni], af[mi], bf[ni]);
        __syncthreads();
    }

    const int g = lane / 4, c = 2 * (lane % 4);
    for (int mi = 0; mi < 2; ++mi)
        for (int ni = 0; ni < 4; ++ni) {
            const int r = warpRow * 32 + mi * 16 + g;
            const int col = warpCol * 32 + ni * 8 + c;
            C[r * N + col] = acc[mi][ni][0];
            C[r * N + col + 1] = acc[mi][ni][1];
            C[(r + 8) * N + col] = acc[mi][ni][2];
            C[(r + 8) * N + col + 1] = acc[mi][ni][3];
        }
}
