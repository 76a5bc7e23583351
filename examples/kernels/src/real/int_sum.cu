// Block sum of int data: serial reference vs shared-memory tree (256 ints per CTA).
extern "C" __global__ void int_sum_ref(const int *x, int *out) {
    if (threadIdx.x != 0) return;
    int s = 0;
    for (int i = 0; i < 256; ++i) s += x[blockIdx.x * 256 + i];
    out[blockIdx.x] = s;
}

extern "C" __global__ void int_sum_tree(const int *x, int *out) {
    __shared__ int buf[128];
    unsigned t = threadIdx.x;
    buf[t] = x[blockIdx.x * 256 + t] + x[blockIdx.x * 256 + t + 128];
    __syncthreads();
    for (unsigned s = 64; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = buf[0];
}
