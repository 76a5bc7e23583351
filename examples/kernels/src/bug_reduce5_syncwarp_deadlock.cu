// PLANTED BUG (copy of reduce5_unroll_last_warp_syncwarp plus a closing
// __syncthreads()): the warp-tail step is guarded by `if (tid < off)`, which moves the
// full-mask __syncwarp() calls inside a branch that only some lanes of warp 0 take.
// At off = 16, lanes 0..15 wait in __syncwarp(0xffffffff) for lanes 16..31, which have
// skipped ahead to the CTA-wide __syncthreads() and wait there for lanes 0..15.
// Expected verdict: deadlock.
// Launch with 128 threads, 256 elements per CTA.
extern "C" __global__ void __launch_bounds__(128)
bug_reduce5_syncwarp_deadlock(const float* __restrict__ x, float* __restrict__ out)
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
    if (tid < 32) {
        float v = sdata[tid];
        for (unsigned off = 32; off > 0; off >>= 1) {
            if (tid < off) {                 // BUG: __syncwarp() below is now divergent
                v += sdata[tid + off];
                __syncwarp();
                sdata[tid] = v;
                __syncwarp();
            }
        }
    }
    __syncthreads();
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
