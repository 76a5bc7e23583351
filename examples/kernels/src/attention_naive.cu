// Attention reference (naive): O = softmax(Q K^T * scale) V for one head per CTA.
// Q, K, V, O are [H][SEQ][D] row-major float32, SEQ = 64, D = 16, scale = 1/sqrt(D) = 0.25.
// One thread per query row; the scores are recomputed in each of the two passes
// (max pass, then exp / sum / weighted-V pass) instead of being stored.
// Launch: grid (H), block 64.
#define SEQ 64
#define D 16
#define SCALE 0.25f

__device__ __forceinline__ float score(const float* q, const float* kr)
{
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < D; ++c) s += q[c] * kr[c];
    return s * SCALE;
}

extern "C" __global__ void __launch_bounds__(SEQ)
attention_naive(const float* __restrict__ Q, const float* __restrict__ K,
                const float* __restrict__ V, float* __restrict__ O)
{
    const int head = blockIdx.x, row = threadIdx.x;
    const float* Kh = K + head * SEQ * D;
    const float* Vh = V + head * SEQ * D;
    float q[D];
#pragma unroll
    for (int c = 0; c < D; ++c) q[c] = Q[(head * SEQ + row) * D + c];

    float m = score(q, Kh);
    for (int j = 1; j < SEQ; ++j) m = fmaxf(m, score(q, Kh + j * D));

    float l = 0.0f, o[D];
#pragma unroll
    for (int c = 0; c < D; ++c) o[c] = 0.0f;
    for (int j = 0; j < SEQ; ++j) {
        const float p = __expf(score(q, Kh + j * D) - m);
        l += p;
#pragma unroll
        for (int c = 0; c < D; ++c) o[c] += p * Vh[j * D + c];
    }
#pragma unroll
    for (int c = 0; c < D; ++c) O[(head * SEQ + row) * D + c] = o[c] / l;
}
