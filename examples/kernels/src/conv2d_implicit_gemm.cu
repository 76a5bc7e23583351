// conv2d as an implicit GEMM: Y[m][k] = sum_kk X_col[m][kk] * W[k][kk] with
// m = (n, p, q) over output pixels (GEMM M = NB*64), k over filters (GEMM N = KF = 16),
// kk = (c, r, s) over taps (GEMM K = C*R*S = 36). The im2col tile is gathered on the fly
// into shared memory (zeros for padding taps), never materialized in global memory.
// CTA tile 64 pixels x 16 filters, BK = 12 (3 K-steps), 128 threads, each thread 8
// pixels x 1 filter. Same shapes and CTA mapping as conv2d_direct: CTA (n, 0) computes
// image n. Launch: grid (NB, 1), block 128.
#define C 4
#define H 8
#define W 8
#define KF 16
#define R 3
#define S 3
#define PAD 1
#define P H
#define Q W
#define GK (C * R * S)   // 36
#define BM 64
#define BN 16
#define BK 12
#define TM 8
#define NT 128

extern "C" __global__ void __launch_bounds__(NT)
conv2d_implicit_gemm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y)
{
    __shared__ float As[BK * BM];   // im2col tile, As[kk][m]
    __shared__ float Bs[BK * BN];   // weight tile, Bs[kk][k]
    const int t = threadIdx.x;
    const int m0 = blockIdx.x * BM, k0 = blockIdx.y * BN;
    const int tn = t % BN;          // filter inside the tile
    const int tm = t / BN;          // 0..7 -> pixels tm*8 .. tm*8+7

    float acc[TM];
    for (int i = 0; i < TM; ++i) acc[i] = 0.0f;

    for (int kb = 0; kb < GK; kb += BK) {
        for (int i = t; i < BK * BM; i += NT) {
            const int kk = kb + i / BM, m = m0 + i % BM;
            const int c = kk / (R * S), r = (kk / S) % R, s = kk % S;
            const int n = m / (P * Q), p = (m / Q) % P, q = m % Q;
            const int ih = p + r - PAD, iw = q + s - PAD;
            As[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W)
                        ? x[((n * C + c) * H + ih) * W + iw] : 0.0f;
        }
        for (int i = t; i < BK * BN; i += NT) {
            const int kk = kb + i / BN, k = k0 + i % BN;
            Bs[i] = w[k * GK + kk];
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            const float b = Bs[kk * BN + tn];
            for (int i = 0; i < TM; ++i)
                acc[i] += As[kk * BM + tm * TM + i] * b;
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i) {
        const int m = m0 + tm * TM + i, k = k0 + tn;
        const int n = m / (P * Q), p = (m / Q) % P, q = m % Q;
        y[((n * KF + k) * P + p) * Q + q] = acc[i];
    }
}
