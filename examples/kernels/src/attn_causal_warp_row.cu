// Causal attention, one warp per query row with shuffle reductions. Lane l scores keys
// j = l and l + 32 (only those with j <= row), the row max and the row sum are butterfly
// reductions over the warp (shfl.sync.bfly), the probabilities go to a per-warp row of
// shared memory, and lanes 0..15 each produce one output column sum_j p_j V[j][c] / l.
// Q, K, V, O: [H][SEQ][D] float32, SEQ = 64, D = 16, scale 0.25.
// Launch: grid (SEQ / ROWS, H), block 32 * ROWS (ROWS = 4 rows per CTA).
#define SEQ 64
#define D 16
#define ROWS 4
#define SCALE 0.25f

extern "C" __global__ void __launch_bounds__(32 * ROWS)
attn_causal_warp_row(const float* __restrict__ Q, const float* __restrict__ K,
                     const float* __restrict__ V, float* __restrict__ O)
{
    __shared__ float P[ROWS][SEQ];
    const int head = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = blockIdx.x * ROWS + warp;
    const float* Qr = Q + (head * SEQ + row) * D;
    const float* Kh = K + head * SEQ * D;
    const float* Vh = V + head * SEQ * D;

    float s[SEQ / 32];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < SEQ / 32; ++k) {
        const int j = lane + 32 * k;
        s[k] = -INFINITY;
        if (j <= row) {
            float acc = 0.0f;
#pragma unroll
            for (int c = 0; c < D; ++c) acc += Qr[c] * Kh[j * D + c];
            s[k] = acc * SCALE;
        }
        m = fmaxf(m, s[k]);
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));

    float l = 0.0f;
#pragma unroll
    for (int k = 0; k < SEQ / 32; ++k) {
        const int j = lane + 32 * k;
        const float p = (j <= row) ? __expf(s[k] - m) : 0.0f;
        P[warp][j] = p;
        l += p;
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) l += __shfl_xor_sync(0xffffffffu, l, off);
    __syncwarp();

    if (lane < D) {
        float o = 0.0f;
        for (int j = 0; j <= row; ++j) o += P[warp][j] * Vh[j * D + lane];
        O[(head * SEQ + row) * D + lane] = o / l;
    }
}
