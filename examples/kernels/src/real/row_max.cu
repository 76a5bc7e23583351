// Row maximum with -INFINITY as the initial maximum: serial vs warp shuffle (32 per row).
#include <math.h>
extern "C" __global__ void row_max_ref(const float *x, float *out) {
    if (threadIdx.x >= 4) return;
    const float *row = x + (blockIdx.x * 4 + threadIdx.x) * 32;
    float m = -INFINITY;
    for (int i = 0; i < 32; ++i) m = fmaxf(m, row[i]);
    out[blockIdx.x * 4 + threadIdx.x] = m;
}

extern "C" __global__ void row_max_warp(const float *x, float *out) {
    unsigned w = threadIdx.x / 32, l = threadIdx.x % 32;
    float m = -INFINITY;
    m = fmaxf(m, x[(blockIdx.x * 4 + w) * 32 + l]);
    for (int off = 16; off > 0; off >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (l == 0) out[blockIdx.x * 4 + w] = m;
}
