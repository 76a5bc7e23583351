// Race-free, but a classic false alarm for loop-abstracting static race checkers:
// same function as stencil_pingpong_ref with ONE barrier per step and two alternating
// (ping-pong) shared buffers. Step it writes buf[it % 2] and, after the barrier, reads a
// NEIGHBOUR's slot of buf[it % 2]; the next write to the same buffer happens at step
// it + 2, after the barrier of step it + 1. An analysis that abstracts the loop counter
// (so it cannot tell buf[it % 2] from buf[(it + 1) % 2]) sees the read of
// buf[..][(t+1) % 64] at the end of one step and the write of buf[..][t] at the start of
// the next in the same barrier interval, and reports a race. Unrolling each thread's
// schedule (as a symbolic executor does) shows the two accesses use different buffers.
// Launch: grid (n/64), block 64.
#define T 64
#define ITERS 4

extern "C" __global__ void __launch_bounds__(T)
stencil_pingpong(const float* __restrict__ x, float* __restrict__ y)
{
    __shared__ float buf[2][T];
    const int t = threadIdx.x;
    float v = x[blockIdx.x * T + t];
#pragma unroll 1   // keep the loop a loop in the PTX (runtime buffer index it % 2)
    for (int it = 0; it < ITERS; ++it) {
        buf[it % 2][t] = v;
        __syncthreads();
        v = 0.5f * (buf[it % 2][t] + buf[it % 2][(t + 1) % T]);
    }
    y[blockIdx.x * T + t] = v;
}
