// Reduction 7, corrected: multiple elements per thread, warp tail with __syncwarp().
// Launch with BLOCK = 64 threads, 256 elements per CTA.
#define BLOCK 64
#define N_PER_CTA 256

__device__ void warp_step(float* sdata, unsigned tid, float& v, unsigned off)
{
    v += sdata[tid + off];
    __syncwarp();
    sdata[tid] = v;
    __syncwarp();
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce7_multi_elem_syncwarp(const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float sdata[BLOCK];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * N_PER_CTA + tid;
    float sum = 0.0f;
    for (unsigned j = 0; j < N_PER_CTA; j += 2 * BLOCK)
        sum += x[i + j] + x[i + j + BLOCK];
    sdata[tid] = sum;
    __syncthreads();
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
