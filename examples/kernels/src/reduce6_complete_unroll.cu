// Reduction 6 (Harris): completely unrolled for a compile-time block size, warp tail
// without __syncwarp() (volatile only). Expected verdict: racy.
// Launch with BLOCK = 128 threads, 256 elements per CTA.
#define BLOCK 128

__device__ void warp_reduce_volatile(volatile float* sdata, unsigned tid)
{
    if (BLOCK >= 64) sdata[tid] += sdata[tid + 32];
    if (BLOCK >= 32) sdata[tid] += sdata[tid + 16];
    if (BLOCK >= 16) sdata[tid] += sdata[tid + 8];
    if (BLOCK >= 8)  sdata[tid] += sdata[tid + 4];
    if (BLOCK >= 4)  sdata[tid] += sdata[tid + 2];
    if (BLOCK >= 2)  sdata[tid] += sdata[tid + 1];
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce6_complete_unroll(const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float sdata[BLOCK];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (BLOCK * 2) + tid;
    sdata[tid] = x[i] + x[i + BLOCK];
    __syncthreads();
    if (BLOCK >= 512) { if (tid < 256) sdata[tid] += sdata[tid + 256]; __syncthreads(); }
    if (BLOCK >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
    if (BLOCK >= 128) { if (tid < 64)  sdata[tid] += sdata[tid + 64];  __syncthreads(); }
    if (tid < 32)
        warp_reduce_volatile(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
