#include <cuda_fp16.h>

// Reference for the Triton matmuls: C = A @ B, row-major, one thread per element of a 16x16 tile.
extern "C" __global__ void matmul_ref(const float *a, const float *b, float *c, int m, int n, int k) {
    int row = blockIdx.x * 16 + threadIdx.y, col = blockIdx.y * 16 + threadIdx.x;
    float acc = 0.0f;
    for (int i = 0; i < k; ++i) acc += a[row * k + i] * b[i * n + col];
    c[row * n + col] = acc;
}

// Reference for the fp16 Triton matmul: half inputs, float products and sum.
extern "C" __global__ void matmul_f16_ref(const __half *a, const __half *b, float *c, int m, int n, int k) {
    int row = blockIdx.x * 16 + threadIdx.y, col = blockIdx.y * 16 + threadIdx.x;
    float acc = 0.0f;
    for (int i = 0; i < k; ++i) acc += __half2float(a[row * k + i]) * __half2float(b[i * n + col]);
    c[row * n + col] = acc;
}
