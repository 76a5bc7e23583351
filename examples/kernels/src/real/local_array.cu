// A small per-thread array indexed at run time (kept in .local) vs direct indexing.
extern "C" __global__ void local_array_ref(const float *x, float *out) {
    unsigned t = threadIdx.x, base = blockIdx.x * 64 + t * 8;
    out[blockIdx.x * 8 + t] = x[base + (7 - t)];
}

extern "C" __global__ void local_array_buf(const float *x, float *out) {
    unsigned t = threadIdx.x, base = blockIdx.x * 64 + t * 8;
    float buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = x[base + i];
    out[blockIdx.x * 8 + t] = buf[7 - t];
}
