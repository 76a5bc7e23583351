// Dynamic shared memory (extern __shared__, size given at launch): reverse a tile of 64.
extern "C" __global__ void dyn_smem_ref(const float *x, float *out) {
    unsigned t = threadIdx.x, b = blockIdx.x * 64;
    out[b + t] = x[b + 63 - t];
}

extern "C" __global__ void dyn_smem_reverse(const float *x, float *out) {
    extern __shared__ float tile[];
    unsigned t = threadIdx.x, b = blockIdx.x * 64;
    tile[t] = x[b + t];
    __syncthreads();
    out[b + t] = tile[63 - t];
}
