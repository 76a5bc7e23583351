// Reduction 4 (Harris): first add during the global load; half as many threads.
// Launch with 128 threads: each CTA still reduces 256 elements (2 * blockDim.x).
extern "C" __global__ void __launch_bounds__(128)
reduce4_first_add(const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float sdata[128];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (blockDim.x * 2) + tid;
    sdata[tid] = x[i] + x[i + blockDim.x];
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
