// FlashAttention-style attention without tensor cores: one head per CTA, one thread per
// query row (Q row, output accumulator, running max m and running sum l in registers).
// K and V are streamed through shared memory in tiles of BC = 16 rows (4 tiles for
// SEQ = 64); per tile: scores, tile max, rescale of l and o by exp(m_old - m_new), then
// accumulate exp(s - m_new) * V. The running max starts at a finite sentinel (-1e30)
// and l, o at 0, so the first rescale multiplies zeros (no infinities over the reals).
// Q, K, V, O are [H][SEQ][D] float32, D = 16, scale 0.25. Launch: grid (H), block 64.
#define SEQ 64
#define D 16
#define BC 16
#define SCALE 0.25f
#define NT SEQ

extern "C" __global__ void __launch_bounds__(NT)
flash_attention(const float* __restrict__ Q, const float* __restrict__ K,
                const float* __restrict__ V, float* __restrict__ O)
{
    __shared__ float Ks[BC * D];
    __shared__ float Vs[BC * D];
    const int head = blockIdx.x, t = threadIdx.x;
    const float* Kh = K + head * SEQ * D;
    const float* Vh = V + head * SEQ * D;

    float q[D], o[D];
#pragma unroll
    for (int c = 0; c < D; ++c) { q[c] = Q[(head * SEQ + t) * D + c]; o[c] = 0.0f; }
    float m = -1e30f, l = 0.0f;

    for (int kt = 0; kt < SEQ / BC; ++kt) {
        for (int i = t; i < BC * D; i += NT) {
            Ks[i] = Kh[kt * BC * D + i];
            Vs[i] = Vh[kt * BC * D + i];
        }
        __syncthreads();
        float s[BC];
        float m_tile = -1e30f;
#pragma unroll
        for (int j = 0; j < BC; ++j) {
            float acc = 0.0f;
#pragma unroll
            for (int c = 0; c < D; ++c) acc += q[c] * Ks[j * D + c];
            s[j] = acc * SCALE;
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
    for (int c = 0; c < D; ++c) O[(head * SEQ + t) * D + c] = o[c] / l;
}
