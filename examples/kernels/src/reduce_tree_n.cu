// Tree reduction for any power-of-two block size: sequential addressing over dynamic shared memory
// (blockDim.x floats); each CTA reduces blockDim.x elements. The threads-per-CTA curve of issue 17
// runs it at 32 ... 1024 threads against reduce_ref_n with n = blockDim.x.
extern "C" __global__ void
reduce_tree_n(const float* __restrict__ x, float* __restrict__ out, int n)
{
    extern __shared__ float sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = x[blockIdx.x * n + tid];
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
