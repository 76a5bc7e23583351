// Reference for the Triton row softmax: one thread per row of n floats, __expf (ex2.approx).
extern "C" __global__ void softmax_rows_ref(const float *x, float *y, int n) {
    if (threadIdx.x != 0) return;
    const float *row = x + blockIdx.x * n;
    float *o = y + blockIdx.x * n;
    float m = row[0];
    for (int i = 1; i < n; ++i) m = fmaxf(m, row[i]);
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s += __expf(row[i] - m);
    for (int i = 0; i < n; ++i) o[i] = __expf(row[i] - m) / s;
}
