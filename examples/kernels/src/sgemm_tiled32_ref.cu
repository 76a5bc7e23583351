// SGEMM reference with 32 x 32 shared-memory tiles (the textbook tiled matmul): C = A * B,
// A [M][K], B [K][N], C [M][N] float32 row-major. Block 32 x 32 threads, one output each;
// per K-tile of 32 both tiles are staged in shared memory (zeros past the edges).
// Launch: grid (ceil(N / 32), ceil(M / 32)), block (32, 32).
#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm_tiled32_ref(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        const int ka = t * TILE + tx, kb = t * TILE + ty;
        As[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
