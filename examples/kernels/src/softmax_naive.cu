// Softmax reference (naive, 3 passes): y[r][j] = exp(x[r][j] - max_r) / sum_k exp(x[r][k] - max_r).
// Rows of D = 64 floats; each CTA handles ROWS = 4 consecutive rows, one thread per row:
// pass 1 computes the row max, pass 2 the sum of exponentials, pass 3 writes the output.
// exp is __expf (PTX: mul by log2(e) then ex2.approx). Launch: grid (rows/4), block 4.
#define D 64
#define ROWS 4

extern "C" __global__ void __launch_bounds__(ROWS)
softmax_naive(const float* __restrict__ x, float* __restrict__ y)
{
    const int row = blockIdx.x * ROWS + threadIdx.x;
    const float* xr = x + row * D;
    float* yr = y + row * D;
    float m = xr[0];
    for (int j = 1; j < D; ++j)
        m = fmaxf(m, xr[j]);
    float sum = 0.0f;
    for (int j = 0; j < D; ++j)
        sum += __expf(xr[j] - m);
    for (int j = 0; j < D; ++j)
        yr[j] = __expf(xr[j] - m) / sum;
}
