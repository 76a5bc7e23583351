// Reduction 5, corrected: the warp tail separates every read step from the
// following write step with __syncwarp() (read; syncwarp; write; syncwarp).
// Launch with 128 threads, 256 elements per CTA. Expected: equivalent, race-free.
__device__ void warp_reduce_syncwarp(float* sdata, unsigned tid)
{
    float v = sdata[tid];
    for (int off = 32; off > 0; off >>= 1) {
        v += sdata[tid + off];
        __syncwarp();
        sdata[tid] = v;
        __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(128)
reduce5_unroll_last_warp_syncwarp(const float* __restrict__ x, float* __restrict__ out)
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
        warp_reduce_syncwarp(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
