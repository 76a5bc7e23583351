// Causal attention in the Triton style: every query row walks over all K/V tiles
// (BC = 16 keys, shared memory), scores of keys after the row are replaced by -inf inside
// the tile (no tile is skipped), online softmax from m = -inf, l = 0, o = 0: a fully masked
// tile has m_tile = -inf, leaves m unchanged and adds exp(-inf - m) = 0. One CTA per head,
// one thread per query row. Q, K, V, O: [H][SEQ][D] float32, SEQ = 64, D = 16, scale 0.25.
// Launch: grid (1, H), block SEQ.
#define SEQ 64
#define D 16
#define BC 16
#define SCALE 0.25f

extern "C" __global__ void __launch_bounds__(SEQ)
flash_attn_causal_inf(const float* __restrict__ Q, const float* __restrict__ K,
                      const float* __restrict__ V, float* __restrict__ O)
{
    __shared__ float Ks[BC][D];
    __shared__ float Vs[BC][D];
    const int head = blockIdx.y, row = threadIdx.x;
    const float* Kh = K + head * SEQ * D;
    const float* Vh = V + head * SEQ * D;

    float q[D], o[D];
#pragma unroll
    for (int c = 0; c < D; ++c) { q[c] = Q[(head * SEQ + row) * D + c]; o[c] = 0.0f; }
    float m = -INFINITY, l = 0.0f;

    for (int k0 = 0; k0 < SEQ; k0 += BC) {
        for (int i = row; i < BC * D; i += SEQ) {
            Ks[i / D][i % D] = Kh[k0 * D + i];
            Vs[i / D][i % D] = Vh[k0 * D + i];
        }
        __syncthreads();
        float s[BC];
#pragma unroll
        for (int j = 0; j < BC; ++j) {
            float acc = 0.0f;
#pragma unroll
            for (int c = 0; c < D; ++c) acc += q[c] * Ks[j][c];
            s[j] = (k0 + j <= row) ? acc * SCALE : -INFINITY;
        }
        float m_new = m;
#pragma unroll
        for (int j = 0; j < BC; ++j) m_new = fmaxf(m_new, s[j]);
        const float alpha = __expf(m - m_new);
        float psum = 0.0f, pv[D];
#pragma unroll
        for (int c = 0; c < D; ++c) pv[c] = 0.0f;
#pragma unroll
        for (int j = 0; j < BC; ++j) {
            const float p = __expf(s[j] - m_new);
            psum += p;
#pragma unroll
            for (int c = 0; c < D; ++c) pv[c] += p * Vs[j][c];
        }
        l = l * alpha + psum;
#pragma unroll
        for (int c = 0; c < D; ++c) o[c] = o[c] * alpha + pv[c];
        m = m_new;
        __syncthreads();
    }
#pragma unroll
    for (int c = 0; c < D; ++c) O[(head * SEQ + row) * D + c] = o[c] / l;
}
