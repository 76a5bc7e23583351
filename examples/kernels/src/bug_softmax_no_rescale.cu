// PLANTED BUG (copy of softmax_online_warp, one change): in the per-lane online update
// the running sum is not rescaled when the max grows (d + exp(v - m_new) instead of
// d * exp(m - m_new) + exp(v - m_new)). Expected verdict: not-equivalent.
// Original: online softmax, one warp per row: each lane runs the online (max, sum) update over its
// D/32 = 2 elements, the 32 partial (m, d) pairs are merged with a butterfly of
// __shfl_xor_sync (m = max(m1, m2), d = d1*exp(m1-m) + d2*exp(m2-m)), and each lane
// writes its 2 outputs. Rows of D = 64, 4 rows per CTA (4 warps).
// Launch: grid (rows/4), block 128.
#define D 64
#define ROWS 4
#define PER_LANE (D / 32)
#define FULL_MASK 0xffffffffu

extern "C" __global__ void __launch_bounds__(ROWS * 32)
bug_softmax_no_rescale(const float* __restrict__ x, float* __restrict__ y)
{
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * ROWS + threadIdx.x / 32;
    const float* xr = x + row * D;
    float* yr = y + row * D;

    float v[PER_LANE];
    for (int i = 0; i < PER_LANE; ++i) v[i] = xr[lane + 32 * i];

    float m = v[0];
    float d = 1.0f;                       // = exp(v[0] - m)
    for (int i = 1; i < PER_LANE; ++i) {
        const float m_new = fmaxf(m, v[i]);
        d = d + __expf(v[i] - m_new);    // BUG: dropped rescale d * exp(m - m_new)
        m = m_new;
    }
    for (int off = 16; off > 0; off >>= 1) {
        const float m_o = __shfl_xor_sync(FULL_MASK, m, off);
        const float d_o = __shfl_xor_sync(FULL_MASK, d, off);
        const float m_new = fmaxf(m, m_o);
        d = d * __expf(m - m_new) + d_o * __expf(m_o - m_new);
        m = m_new;
    }
    for (int i = 0; i < PER_LANE; ++i)
        yr[lane + 32 * i] = __expf(v[i] - m) / d;
}
