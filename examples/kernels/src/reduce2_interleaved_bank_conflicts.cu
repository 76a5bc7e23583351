// Reduction 2 (Harris): interleaved addressing with a strided index (no divergence,
// but shared-memory bank conflicts). Launch with 256 threads, 256 elements per CTA.
extern "C" __global__ void __launch_bounds__(256)
reduce2_interleaved_bank_conflicts(const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float sdata[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    sdata[tid] = x[i];
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        unsigned index = 2 * s * tid;
        if (index < blockDim.x)
            sdata[index] += sdata[index + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
