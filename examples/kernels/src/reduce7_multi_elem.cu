// Reduction 7 (Harris): multiple elements per thread (a per-CTA loop, first add
// during load), completely unrolled tree, warp tail without __syncwarp().
// Expected verdict: racy. Launch with BLOCK = 64 threads, 256 elements per CTA
// (each thread sums 4 elements before the tree).
// Unlike the tutorial's grid-stride loop, the loop stays inside the CTA's slice, so
// every CTA computes the same function as the reference.
#define BLOCK 64
#define N_PER_CTA 256

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
reduce7_multi_elem(const float* __restrict__ x, float* __restrict__ out)
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
    if (tid < 32)
        warp_reduce_volatile(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
