// Causal attention with shared-memory K/V tiles and a special case for the diagonal tile.
// One CTA per head, one thread per query row, BC = 16 keys per tile; the whole CTA loads
// every tile (the barriers are CTA-wide), and thread `row` (query tile qt = row / BC)
//   - for tiles before qt: all BC keys, no mask test;
//   - for the diagonal tile qt: only keys 0 .. row % BC of the tile;
//   - for later tiles: nothing.
// Online softmax with a finite sentinel (m = -1e30, l = o = 0); the rescale happens once
// per processed tile. Q, K, V, O: [H][SEQ][D] float32, SEQ = 64, D = 16, scale 0.25.
// Launch: grid (1, H), block SEQ.
#define SEQ 64
#define D 16
#define BC 16
#define SCALE 0.25f

__device__ __forceinline__ void attend(const float (&q)[D], const float* Kt, const float* Vt, int n,
                                       float& m, float& l, float (&o)[D])
{
    float s[BC];
    float m_new = m;
    for (int j = 0; j < n; ++j) {
        float acc = 0.0f;
#pragma unroll
        for (int c = 0; c < D; ++c) acc += q[c] * Kt[j * D + c];
        s[j] = acc * SCALE;
        m_new = fmaxf(m_new, s[j]);
    }
    const float alpha = __expf(m - m_new);
    l *= alpha;
#pragma unroll
    for (int c = 0; c < D; ++c) o[c] *= alpha;
    for (int j = 0; j < n; ++j) {
        const float p = __expf(s[j] - m_new);
        l += p;
#pragma unroll
        for (int c = 0; c < D; ++c) o[c] += p * Vt[j * D + c];
    }
    m = m_new;
}

extern "C" __global__ void __launch_bounds__(SEQ)
flash_attn_causal_diag(const float* __restrict__ Q, const float* __restrict__ K,
                       const float* __restrict__ V, float* __restrict__ O)
{
    __shared__ float Ks[BC * D];
    __shared__ float Vs[BC * D];
    const int head = blockIdx.y, row = threadIdx.x, qt = row / BC;
    const float* Kh = K + head * SEQ * D;
    const float* Vh = V + head * SEQ * D;

    float q[D], o[D];
#pragma unroll
    for (int c = 0; c < D; ++c) { q[c] = Q[(head * SEQ + row) * D + c]; o[c] = 0.0f; }
    float m = -1e30f, l = 0.0f;

    for (int kt = 0; kt < SEQ / BC; ++kt) {
        for (int i = row; i < BC * D; i += SEQ) {
            Ks[i] = Kh[kt * BC * D + i];
            Vs[i] = Vh[kt * BC * D + i];
        }
        __syncthreads();
        if (kt < qt)
            attend(q, Ks, Vs, BC, m, l, o);
        else if (kt == qt)
            attend(q, Ks, Vs, row % BC + 1, m, l, o);
        __syncthreads();
    }
#pragma unroll
    for (int c = 0; c < D; ++c) O[(head * SEQ + row) * D + c] = o[c] / l;
}
