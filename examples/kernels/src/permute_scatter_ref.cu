// Reference for permute_scatter: y[b*64 + j] = x[b*64 + (13 * j) % 64], read directly.
// (13 is the inverse of 5 modulo 64.) Launch: grid (n/64), block 64.
#define T 64

extern "C" __global__ void __launch_bounds__(T)
permute_scatter_ref(const float* __restrict__ x, float* __restrict__ y)
{
    const int j = threadIdx.x;
    y[blockIdx.x * T + j] = x[blockIdx.x * T + (13 * j) % T];
}
