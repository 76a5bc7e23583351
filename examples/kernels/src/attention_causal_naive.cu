// Causal attention reference (naive): O = softmax(mask(Q K^T * scale)) V, key j visible to
// query row i only if j <= i. Q, K, V, O are [H][SEQ][D] row-major float32, SEQ = 64,
// D = 16, scale = 1/sqrt(D) = 0.25. One thread per query row; row = blockIdx.x * blockDim.x
// + threadIdx.x, head = blockIdx.y, so the same kernel serves any split of the rows into
// CTAs (grid (SEQ / blockDim.x, H)). Two passes over keys 0..row: max, then exp / sum / PV.
#define SEQ 64
#define D 16
#define SCALE 0.25f

extern "C" __global__ void
attention_causal_naive(const float* __restrict__ Q, const float* __restrict__ K,
                       const float* __restrict__ V, float* __restrict__ O)
{
    const int head = blockIdx.y;
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const float* Kh = K + head * SEQ * D;
    const float* Vh = V + head * SEQ * D;
    float q[D];
#pragma unroll
    for (int c = 0; c < D; ++c) q[c] = Q[(head * SEQ + row) * D + c];

    float m = 0.0f;
    for (int j = 0; j <= row; ++j) {
        float s = 0.0f;
#pragma unroll
        for (int c = 0; c < D; ++c) s += q[c] * Kh[j * D + c];
        s *= SCALE;
        m = (j == 0) ? s : fmaxf(m, s);
    }
    float l = 0.0f, o[D];
#pragma unroll
    for (int c = 0; c < D; ++c) o[c] = 0.0f;
    for (int j = 0; j <= row; ++j) {
        float s = 0.0f;
#pragma unroll
        for (int c = 0; c < D; ++c) s += q[c] * Kh[j * D + c];
        const float p = __expf(s * SCALE - m);
        l += p;
#pragma unroll
        for (int c = 0; c < D; ++c) o[c] += p * Vh[j * D + c];
    }
#pragma unroll
    for (int c = 0; c < D; ++c) O[(head * SEQ + row) * D + c] = o[c] / l;
}
