// Reduction 5 (Harris): unroll the last warp, relying on warp-synchronous execution.
// The tail uses only a volatile pointer and NO __syncwarp(): under independent thread
// scheduling (sm_70+) this is a data race (e.g. lane 0 reads sdata[16] while lane 16
// writes it). Expected verdict: racy.
// Launch with 128 threads, 256 elements per CTA.
__device__ void warp_reduce_volatile(volatile float* sdata, unsigned tid)
{
    sdata[tid] += sdata[tid + 32];
    sdata[tid] += sdata[tid + 16];
    sdata[tid] += sdata[tid + 8];
    sdata[tid] += sdata[tid + 4];
    sdata[tid] += sdata[tid + 2];
    sdata[tid] += sdata[tid + 1];
}

extern "C" __global__ void __launch_bounds__(128)
reduce5_unroll_last_warp(const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float sdata[128];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (blockDim.x * 2) + tid;
    sdata[tid] = x[i] + x[i + blockDim.x];
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32)
        warp_reduce_volatile(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
