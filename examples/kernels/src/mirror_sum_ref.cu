// Reference for mirror_sum: y[b*128 + j] = x[b*128 + j] + x[b*128 + 127 - j], computed
// directly from global memory, one thread per output. Launch: grid (n/128), block 128.
#define N 128

extern "C" __global__ void __launch_bounds__(N)
mirror_sum_ref(const float* __restrict__ x, float* __restrict__ y)
{
    const int j = threadIdx.x;
    const float* xb = x + blockIdx.x * N;
    y[blockIdx.x * N + j] = xb[j] + xb[N - 1 - j];
}
