// Attention reference with half-precision inputs (for the tensor-core kernel):
// identical to attention_naive but Q, K, V are [H][SEQ][D] __half, converted to float
// on load; O is float32. SEQ = 64, D = 16, scale 0.25. Launch: grid (H), block 64.
#include <cuda_fp16.h>
#define SEQ 64
#define D 16
#define SCALE 0.25f

__device__ __forceinline__ float score(const float* q, const __half* kr)
{
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < D; ++c) s += q[c] * __half2float(kr[c]);
    return s * SCALE;
}

extern "C" __global__ void __launch_bounds__(SEQ)
attention_naive_half(const __half* __restrict__ Q, const __half* __restrict__ K,
                     const __half* __restrict__ V, float* __restrict__ O)
{
    const int head = blockIdx.x, row = threadIdx.x;
    const __half* Kh = K + head * SEQ * D;
    const __half* Vh = V + head * SEQ * D;
    float q[D];
#pragma unroll
    for (int c = 0; c < D; ++c) q[c] = __half2float(Q[(head * SEQ + row) * D + c]);

    float m = score(q, Kh);
    for (int j = 1; j < SEQ; ++j) m = fmaxf(m, score(q, Kh + j * D));

    float l = 0.0f, o[D];
#pragma unroll
    for (int c = 0; c < D; ++c) o[c] = 0.0f;
    for (int j = 0; j < SEQ; ++j) {
        const float p = __expf(score(q, Kh + j * D) - m);
        l += p;
#pragma unroll
        for (int c = 0; c < D; ++c) o[c] += p * __half2float(Vh[j * D + c]);
    }
#pragma unroll
    for (int c = 0; c < D; ++c) O[(head * SEQ + row) * D + c] = o[c] / l;
}
