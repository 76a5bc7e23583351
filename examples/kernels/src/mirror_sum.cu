// Race-free, but a false alarm for a checker that does not use the launch's block size:
// 64 threads stage 128 values; thread t writes s[t] and s[t + 64] (a constant offset,
// not blockDim.x). Two writes of different threads t1 != t2 collide only if
// t1 = t2 + 64, i.e. for a thread id that does not exist when blockDim.x == 64.
// A checker that treats the thread id as unbounded (or only knows t < 1024) reports a
// write-write race on s[]; with the concrete launch (64 threads) there is none.
// Same function as mirror_sum_ref. Launch: grid (n/128), block 64.
#define N 128
#define HALF 64

extern "C" __global__ void __launch_bounds__(HALF)
mirror_sum(const float* __restrict__ x, float* __restrict__ y)
{
    __shared__ float s[N];
    const int t = threadIdx.x;
    const float* xb = x + blockIdx.x * N;
    s[t] = xb[t];
    s[t + HALF] = xb[t + HALF];
    __syncthreads();
    y[blockIdx.x * N + t] = s[t] + s[N - 1 - t];
    y[blockIdx.x * N + t + HALF] = s[t + HALF] + s[N - 1 - t - HALF];
}
