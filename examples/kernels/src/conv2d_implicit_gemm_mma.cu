// conv2d as an implicit GEMM on tensor cores (ldmatrix + mma.sync.m16n8k16 via inline PTX,
// f16 inputs, f32 accumulate), channels last: GEMM M = output pixels m = (n, p, q),
// GEMM N = filters k, GEMM K = (r, s, c) = 9 taps x C = 16 channels, one mma k-step per tap.
// x [NB][H][W][C] __half (NHWC), w [KF][R][S][C] __half (KRSC), y [NB][H][W][KF] float32;
// H = W = 16, C = 16, KF = 48, 3x3, stride 1, zero padding 1.
// CTA tile 64 pixels x 16 filters, 128 threads = 4 warps, warp w: pixels 16w .. 16w+15 x
// 16 filters (two n8 tiles). Per tap (r, s): the A tile (64 pixels x 16 channels, shifted by
// the tap, eight f16 zeros where the tap falls into the padding) and the B tile
// (16 filters x 16 channels of tap (r, s)) go to shared memory with 16-byte copies; A
// fragments from ldmatrix.x4, B fragments from ldmatrix.x4 (filter-major = col-major B).
// Launch: grid (NB*H*W / 64, KF / 16), block 128; sm_80+.
#include "mma_ptx.cuh"

#define H 16
#define W 16
#define C 16
#define KF 48
#define R 3
#define S 3
#define PAD 1
#define BM 64
#define BN 16
#define NT 128

extern "C" __global__ void __launch_bounds__(NT)
conv2d_implicit_gemm_mma(const __half* __restrict__ x, const __half* __restrict__ w, float* __restrict__ y)
{
    __shared__ __align__(16) __half As[BM * C];   // [pixel][channel]
    __shared__ __align__(16) __half Bs[BN * C];   // [filter][channel]
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int m0 = blockIdx.x * BM, k0 = blockIdx.y * BN;

    // this thread's A chunk: pixel m0 + t/2, channels 8*(t%2) .. +7
    const int am = m0 + t / 2, an = am / (H * W), ap = (am / W) % H, aq = am % W, ac = 8 * (t % 2);

    float acc[2][4];
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;

    for (int r = 0; r < R; ++r)
        for (int s = 0; s < S; ++s) {
            const int ih = ap + r - PAD, iw = aq + s - PAD;
            if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                *reinterpret_cast<uint4*>(&As[(t / 2) * C + ac]) =
                    *reinterpret_cast<const uint4*>(&x[((an * H + ih) * W + iw) * C + ac]);
            else
#pragma unroll
                for (int i = 0; i < 8; ++i) As[(t / 2) * C + ac + i] = __float2half(0.0f);
            if (t < 2 * BN)
                *reinterpret_cast<uint4*>(&Bs[(t / 2) * C + 8 * (t % 2)]) =
                    *reinterpret_cast<const uint4*>(&w[(((k0 + t / 2) * R + r) * S + s) * C + 8 * (t % 2)]);
            __syncthreads();

            h2reg af[4], bf[4];
            ldsm_x4(af, &As[(warp * 16 + (lane % 8) + 8 * ((lane / 8) % 2)) * C + 8 * (lane / 16)]);
            ldsm_x4(bf, &Bs[(8 * (lane / 16) + (lane % 8)) * C + 8 * ((lane / 8) % 2)]);
            mma16816(acc[0], af, bf[0], bf[1]);
            mma16816(acc[1], af, bf[2], bf[3]);
            __syncthreads();
        }

    const int g = lane / 4, c2 = 2 * (lane % 4);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        const int m = m0 + warp * 16 + g, k = k0 + j * 8 + c2;
        y[m * KF + k] = acc[j][0];
        y[m * KF + k + 1] = acc[j][1];
        y[(m + 8) * KF + k] = acc[j][2];
        y[(m + 8) * KF + k + 1] = acc[j][3];
    }
}
