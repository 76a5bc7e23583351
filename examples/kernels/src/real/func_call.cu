// A __noinline__ device function (.func / call / ret) against the same arithmetic inline.
__device__ __noinline__ float axpb(float a, float x, float b) { return a * x + b; }

extern "C" __global__ void func_call_ref(const float *x, const float *y, float *out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = 2.0f * x[i] + y[i];
}

extern "C" __global__ void func_call_noinline(const float *x, const float *y, float *out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = axpb(2.0f, x[i], y[i]);
}
