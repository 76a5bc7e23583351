// A float scalar parameter alpha (symbolic: the claim holds for every alpha) and an
// unused parameter; the variant has a different parameter list (no unused parameter).
extern "C" __global__ void scale_ref(const float *x, float alpha, int unused, float *out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = alpha * x[i];
}

extern "C" __global__ void scale_twice(const float *x, float alpha, float *out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float h = 0.5f * alpha;
    out[i] = h * x[i] + h * x[i];
}
