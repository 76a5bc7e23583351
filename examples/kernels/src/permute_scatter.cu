// Race-free, but a false alarm for a value-insensitive static checker (the pattern of
// the FaialAA "alarm" discussed in the Volta paper): the scatter index is a value read
// back from shared memory. Thread t stores perm[t] = (5 t) % 64 (a permutation, 5 is
// odd), then after a barrier scatters x to buf[perm[t]]. A checker that models the
// loaded index as an arbitrary value reports a write-write race on buf; tracking the
// concrete values shows the 64 writes hit 64 distinct slots.
// Same function as permute_scatter_ref. Launch: grid (n/64), block 64.
#define T 64

extern "C" __global__ void __launch_bounds__(T)
permute_scatter(const float* __restrict__ x, float* __restrict__ y)
{
    __shared__ int perm[T];
    __shared__ float buf[T];
    const int t = threadIdx.x;
    perm[t] = (5 * t) % T;
    __syncthreads();
    const int dst = perm[t];
    buf[dst] = x[blockIdx.x * T + t];
    __syncthreads();
    y[blockIdx.x * T + t] = buf[t];
}
