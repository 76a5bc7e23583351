// Reduction 3 (Harris): sequential addressing (stride halves, tid < s active).
// Launch with 256 threads, 256 elements per CTA.
extern "C" __global__ void __launch_bounds__(256)
reduce3_sequential(const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float sdata[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    sdata[tid] = x[i];
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
