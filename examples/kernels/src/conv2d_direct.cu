// conv2d reference (direct): y[n][k][p][q] = sum_{c,r,s} x[n][c][p+r-1][q+s-1] * w[k][c][r][s]
// NCHW input x [NB][C][H][W], weights w [KF][C][R][S], output y [NB][KF][P][Q];
// C = 4, H = W = 8, KF = 16, R = S = 3, stride 1, zero padding 1, so P = Q = 8.
// CTA n computes image n (all 64 pixels x 16 filters); one thread per output pixel,
// padding handled by skipping out-of-range taps. Launch: grid (NB), block 64.
#define C 4
#define H 8
#define W 8
#define KF 16
#define R 3
#define S 3
#define PAD 1
#define P H
#define Q W

extern "C" __global__ void __launch_bounds__(P * Q)
conv2d_direct(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y)
{
    const int n = blockIdx.x;
    const int p = threadIdx.x / Q, q = threadIdx.x % Q;
    for (int k = 0; k < KF; ++k) {
        float acc = 0.0f;
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r)
                for (int s = 0; s < S; ++s) {
                    const int ih = p + r - PAD, iw = q + s - PAD;
                    if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                        acc += x[((n * C + c) * H + ih) * W + iw] * w[((k * C + c) * R + r) * S + s];
                }
        y[((n * KF + k) * P + p) * Q + q] = acc;
    }
}
