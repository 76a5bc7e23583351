// Reference for stencil_pingpong: ITERS = 4 steps of v[i] <- (v[i] + v[(i+1) % 64]) / 2
// on a ring of 64 values per CTA, with ONE shared buffer and two barriers per step
// (after the write, and after the read). Launch: grid (n/64), block 64.
#define T 64
#define ITERS 4

extern "C" __global__ void __launch_bounds__(T)
stencil_pingpong_ref(const float* __restrict__ x, float* __restrict__ y)
{
    __shared__ float buf[T];
    const int t = threadIdx.x;
    float v = x[blockIdx.x * T + t];
#pragma unroll 1   // keep the loop a loop in the PTX (runtime buffer index it % 2)
    for (int it = 0; it < ITERS; ++it) {
        buf[t] = v;
        __syncthreads();
        v = 0.5f * (buf[t] + buf[(t + 1) % T]);
        __syncthreads();
    }
    y[blockIdx.x * T + t] = v;
}
