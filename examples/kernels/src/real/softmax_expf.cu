// Softmax of 4 rows of 32 with expf (no fast math): two-pass vs online (running max + rescale).
#include <math.h>
extern "C" __global__ void softmax_expf_ref(const float *x, float *y) {
    if (threadIdx.x >= 4) return;
    const float *row = x + (blockIdx.x * 4 + threadIdx.x) * 32;
    float *o = y + (blockIdx.x * 4 + threadIdx.x) * 32;
    float m = -INFINITY;
    for (int i = 0; i < 32; ++i) m = fmaxf(m, row[i]);
    float s = 0.0f;
    for (int i = 0; i < 32; ++i) s += expf(row[i] - m);
    for (int i = 0; i < 32; ++i) o[i] = expf(row[i] - m) / s;
}

extern "C" __global__ void softmax_expf_online(const float *x, float *y) {
    if (threadIdx.x >= 4) return;
    const float *row = x + (blockIdx.x * 4 + threadIdx.x) * 32;
    float *o = y + (blockIdx.x * 4 + threadIdx.x) * 32;
    float m = -INFINITY, s = 0.0f;
    for (int i = 0; i < 32; ++i) {
        float mn = fmaxf(m, row[i]);
        s = s * expf(m - mn) + expf(row[i] - mn);
        m = mn;
    }
    for (int i = 0; i < 32; ++i) o[i] = expf(row[i] - m) / s;
}
