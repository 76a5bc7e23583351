// Online softmax, one thread per row (the FlashAttention formulation): a single pass
// keeps a running max m and a running sum d that is rescaled by exp(m_old - m_new)
// whenever the max grows; a second pass writes exp(x - m) / d.
// Rows of D = 64, 4 rows per CTA. Launch: grid (rows/4), block 4.
#define D 64
#define ROWS 4

extern "C" __global__ void __launch_bounds__(ROWS)
softmax_online_serial(const float* __restrict__ x, float* __restrict__ y)
{
    const int row = blockIdx.x * ROWS + threadIdx.x;
    const float* xr = x + row * D;
    float* yr = y + row * D;
    float m = xr[0];
    float d = 1.0f;                       // = exp(x[0] - m)
    for (int j = 1; j < D; ++j) {
        const float xj = xr[j];
        const float m_new = fmaxf(m, xj);
        d = d * __expf(m - m_new) + __expf(xj - m_new);
        m = m_new;
    }
    for (int j = 0; j < D; ++j)
        yr[j] = __expf(xr[j] - m) / d;
}
