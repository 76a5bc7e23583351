// Reduction 8 (beyond the tutorial): first add during load, then warp-shuffle
// reductions (__shfl_down_sync) inside each warp, one shared slot per warp, and a
// final shuffle reduction in warp 0. Launch with 128 threads, 256 elements per CTA.
#define BLOCK 128
#define FULL_MASK 0xffffffffu

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce8_shfl(const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float warp_sums[BLOCK / 32];
    unsigned tid = threadIdx.x;
    unsigned lane = tid % 32, warp = tid / 32;
    unsigned i = blockIdx.x * (BLOCK * 2) + tid;
    float v = x[i] + x[i + BLOCK];
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(FULL_MASK, v, off);
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = (lane < BLOCK / 32) ? warp_sums[lane] : 0.0f;
        for (int off = BLOCK / 64; off > 0; off >>= 1)
            v += __shfl_down_sync(FULL_MASK, v, off);
        if (lane == 0)
            out[blockIdx.x] = v;
    }
}
