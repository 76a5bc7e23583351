// conv2d reference on f16 data, channels last: y[n][p][q][k] = sum_{r,s,c} x[n][p+r-1][q+s-1][c] * w[k][r][s][c]
// x [NB][H][W][C] __half (NHWC), w [KF][R][S][C] __half (KRSC), y [NB][H][W][KF] float32 (NHWK);
// H = W = 16, C = 16, KF = 48, R = S = 3, stride 1, zero padding 1 (P = H, Q = W).
// Same CTA mapping as conv2d_implicit_gemm_mma: CTA (i, j) computes output pixels
// 64i .. 64i+63 (pixel m = (n*H + p)*W + q) for filters 16j .. 16j+15; one thread per
// pixel, out-of-range taps skipped. Launch: grid (NB*H*W / 64, KF / 16), block 64.
#include <cuda_fp16.h>
#define H 16
#define W 16
#define C 16
#define KF 48
#define R 3
#define S 3
#define PAD 1
#define BM 64
#define BN 16

extern "C" __global__ void __launch_bounds__(BM)
conv2d_nhwc_half_ref(const __half* __restrict__ x, const __half* __restrict__ w, float* __restrict__ y)
{
    const int m = blockIdx.x * BM + threadIdx.x;
    const int n = m / (H * W), p = (m / W) % H, q = m % W;
    for (int k = blockIdx.y * BN; k < blockIdx.y * BN + BN; ++k) {
        float acc = 0.0f;
        for (int r = 0; r < R; ++r)
            for (int s = 0; s < S; ++s) {
                const int ih = p + r - PAD, iw = q + s - PAD;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                for (int c = 0; c < C; ++c)
                    acc += __half2float(x[((n * H + ih) * W + iw) * C + c]) * __half2float(w[((k * R + r) * S + s) * C + c]);
            }
        y[m * KF + k] = acc;
    }
}
