// Reduction 1 (Harris): interleaved addressing, divergent branch (tid % (2s) == 0).
// Launch with 256 threads: each CTA reduces its 256-element slice to out[blockIdx.x].
extern "C" __global__ void __launch_bounds__(256)
reduce1_interleaved_divergent(const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float sdata[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    sdata[tid] = x[i];
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
