// Reference for the Triton flash-attention forward: one thread per query row, two-pass softmax
// (max, then sum of exp) over all n_ctx keys, then the weighted sum of V. D = 16, __expf.
extern "C" __global__ void attn_ref(const float *q, const float *k, const float *v, float *o, int n_ctx,
                                    float scale) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    const float *qr = q + r * 16;
    float m = -INFINITY;
    for (int j = 0; j < n_ctx; ++j) {
        float s = 0.0f;
        for (int d = 0; d < 16; ++d) s += qr[d] * k[j * 16 + d];
        m = fmaxf(m, s * scale);
    }
    float l = 0.0f, acc[16] = {0.0f};
    for (int j = 0; j < n_ctx; ++j) {
        float s = 0.0f;
        for (int d = 0; d < 16; ++d) s += qr[d] * k[j * 16 + d];
        float p = __expf(s * scale - m);
        l += p;
        for (int d = 0; d < 16; ++d) acc[d] += p * v[j * 16 + d];
    }
    for (int d = 0; d < 16; ++d) o[r * 16 + d] = acc[d] / l;
}

// The causal reference: row r attends to keys 0..r only.
extern "C" __global__ void attn_causal_ref(const float *q, const float *k, const float *v, float *o, int n_ctx,
                                           float scale) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    const float *qr = q + r * 16;
    int n = r + 1 < n_ctx ? r + 1 : n_ctx;
    float m = -INFINITY;
    for (int j = 0; j < n; ++j) {
        float s = 0.0f;
        for (int d = 0; d < 16; ++d) s += qr[d] * k[j * 16 + d];
        m = fmaxf(m, s * scale);
    }
    float l = 0.0f, acc[16] = {0.0f};
    for (int j = 0; j < n; ++j) {
        float s = 0.0f;
        for (int d = 0; d < 16; ++d) s += qr[d] * k[j * 16 + d];
        float p = __expf(s * scale - m);
        l += p;
        for (int d = 0; d < 16; ++d) acc[d] += p * v[j * 16 + d];
    }
    for (int d = 0; d < 16; ++d) o[r * 16 + d] = acc[d] / l;
}
