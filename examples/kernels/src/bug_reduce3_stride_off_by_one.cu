// PLANTED BUG (copy of reduce3_sequential, one change): the first stride is
// blockDim.x/2 - 1 instead of blockDim.x/2, so the stride sequence is 127, 63, 31, ...
// and some partial sums are never combined. Race-free, but not equivalent.
extern "C" __global__ void __launch_bounds__(256)
bug_reduce3_stride_off_by_one(const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float sdata[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    sdata[tid] = x[i];
    __syncthreads();
    for (unsigned s = blockDim.x / 2 - 1; s > 0; s >>= 1) {   // BUG: should start at blockDim.x / 2
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
