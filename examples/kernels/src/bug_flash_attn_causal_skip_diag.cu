// PLANTED BUG (copy of flash_attn_causal_skip.cu): the key-tile loop stops one tile early, so the
// diagonal tile of rows 16..31 of each block is skipped (rows 0..15 keep theirs through tile 2qb).
// Causal FlashAttention-style kernel: one CTA per block of BR = 32 query rows of one head,
// one thread per row (q, o, running max m, running sum l in registers). K/V tiles of
// BC = 16 rows go through shared memory; key tiles entirely above the diagonal are never
// loaded (the tile loop stops at the last tile that holds a key <= the block's last row).
// Tiles that straddle the diagonal mask their scores to -inf (exp(-inf - m) = 0); the
// running max starts at -inf, l and o at 0. Q, K, V, O: [H][SEQ][D] float32, SEQ = 64,
// D = 16, scale 0.25. Launch: grid (SEQ / BR, H), block BR.
#define SEQ 64
#define D 16
#define BR 32
#define BC 16
#define SCALE 0.25f

extern "C" __global__ void __launch_bounds__(BR)
bug_flash_attn_causal_skip_diag(const float* __restrict__ Q, const float* __restrict__ K,
                       const float* __restrict__ V, float* __restrict__ O)
{
    __shared__ float Ks[BC * D];
    __shared__ float Vs[BC * D];
    const int head = blockIdx.y, t = threadIdx.x;
    const int q0 = blockIdx.x * BR, row = q0 + t;
    const float* Kh = K + head * SEQ * D;
    const float* Vh = V + head * SEQ * D;

    float q[D], o[D];
#pragma unroll
    for (int c = 0; c < D; ++c) { q[c] = Q[(head * SEQ + row) * D + c] * SCALE; o[c] = 0.0f; }
    float m = -INFINITY, l = 0.0f;

    const int ntiles = (q0 + BR - 1) / BC;          // BUG: the last (diagonal) tile is skipped
    for (int kt = 0; kt < ntiles; ++kt) {
        const int k0 = kt * BC;
        for (int i = t; i < BC * D; i += BR) {
            Ks[i] = Kh[k0 * D + i];
            Vs[i] = Vh[k0 * D + i];
        }
        __syncthreads();
        const bool diag = k0 + BC - 1 > q0;          // some key of the tile is after some row
        float s[BC];
        float m_tile = -INFINITY;
#pragma unroll
        for (int j = 0; j < BC; ++j) {
            float acc = 0.0f;
#pragma unroll
            for (int c = 0; c < D; ++c) acc += q[c] * Ks[j * D + c];
            s[j] = (diag && k0 + j > row) ? -INFINITY : acc;
            m_tile = fmaxf(m_tile, s[j]);
        }
        const float m_new = fmaxf(m, m_tile);
        const float alpha = __expf(m - m_new);
        l *= alpha;
#pragma unroll
        for (int c = 0; c < D; ++c) o[c] *= alpha;
#pragma unroll
        for (int j = 0; j < BC; ++j) {
            const float p = __expf(s[j] - m_new);
            l += p;
#pragma unroll
            for (int c = 0; c < D; ++c) o[c] += p * Vs[j * D + c];
        }
        m = m_new;
        __syncthreads();
    }
#pragma unroll
    for (int c = 0; c < D; ++c) O[(head * SEQ + row) * D + c] = o[c] / l;
}
