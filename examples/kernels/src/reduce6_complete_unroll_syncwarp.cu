// Reduction 6, corrected: completely unrolled, warp tail with __syncwarp() between
// each read step and write step. Launch with BLOCK = 128 threads, 256 elements per CTA.
#define BLOCK 128

__device__ void warp_step(float* sdata, unsigned tid, float& v, unsigned off)
{
    v += sdata[tid + off];
    __syncwarp();
    sdata[tid] = v;
    __syncwarp();
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce6_complete_unroll_syncwarp(const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float sdata[BLOCK];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (BLOCK * 2) + tid;
    sdata[tid] = x[i] + x[i + BLOCK];
    __syncthreads();
    if (BLOCK >= 512) { if (tid < 256) sdata[tid] += sdata[tid + 256]; __syncthreads(); }
    if (BLOCK >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
    if (BLOCK >= 128) { if (tid < 64)  sdata[tid] += sdata[tid + 64];  __syncthreads(); }
    if (tid < 32) {
        float v = sdata[tid];
        if (BLOCK >= 64) warp_step(sdata, tid, v, 32);
        if (BLOCK >= 32) warp_step(sdata, tid, v, 16);
        if (BLOCK >= 16) warp_step(sdata, tid, v, 8);
        if (BLOCK >= 8)  warp_step(sdata, tid, v, 4);
        if (BLOCK >= 4)  warp_step(sdata, tid, v, 2);
        if (BLOCK >= 2)  warp_step(sdata, tid, v, 1);
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
