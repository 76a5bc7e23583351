// Grid-stride accumulation with a run-time length n (nvcc's selp accumulator-init idiom).
extern "C" __global__ void strided_sum_ref(const float *x, float *out, int n) {
    unsigned t = threadIdx.x;
    float acc = 0.0f;
    for (int i = t; i < n; i += 32) acc += x[i];
    out[t] = acc;
}

extern "C" __global__ void strided_sum_unrolled(const float *x, float *out, int n) {
    unsigned t = threadIdx.x;
    float a = 0.0f, b = 0.0f;
    int i = t;
    for (; i + 32 < n; i += 64) { a += x[i]; b += x[i + 32]; }
    if (i < n) a += x[i];
    out[t] = a + b;
}
