// Warp-shuffle sum using warpSize (PTX WARP_SZ) and %laneid, against a serial sum.
extern "C" __global__ void warp_sum_ref(const float *x, float *out) {
    if (threadIdx.x != 0) return;
    float s = 0.0f;
    for (int i = 0; i < 64; ++i) s += x[blockIdx.x * 64 + i];
    out[blockIdx.x] = s;
}

__device__ __forceinline__ unsigned lane_id() {
    unsigned l;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}

extern "C" __global__ void warp_sum_shfl(const float *x, float *out) {
    __shared__ float part[2];
    unsigned t = threadIdx.x;
    float v = x[blockIdx.x * 64 + t];
    for (int off = warpSize / 2; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane_id() == 0) part[t / warpSize] = v;
    __syncthreads();
    if (t == 0) out[blockIdx.x] = part[0] + part[1];
}
