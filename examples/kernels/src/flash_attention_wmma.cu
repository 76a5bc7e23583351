// FlashAttention-style attention on tensor cores (WMMA m16n16k16, half inputs, float
// accumulate). One head per CTA, 4 warps; warp w owns query rows 16w .. 16w+15.
// Per K/V tile of BC = 16 rows (4 tiles for SEQ = 64):
//   S_w = Q_w K_tile^T            (one wmma.mma, K^T read as a col-major B fragment)
//   lanes 0..15 (one per query row): online softmax on the row of S_w (scale 0.25),
//     P = exp(s - m_new) stored as half, alpha = exp(m_old - m_new), l = l*alpha + sum P
//   PV_w = P_w V_tile             (second wmma.mma, fresh zero accumulator)
//   O_w[r][c] = O_w[r][c] * alpha[r] + PV_w[r][c]   (O kept in shared memory, float)
// The accumulator is rescaled in shared memory (not in fragments) because the WMMA
// fragment layout is opaque. __syncwarp() orders the per-warp shared buffers;
// __syncthreads() protects the K/V tiles shared by all warps.
// Q, K, V: [H][SEQ][D] __half; O: [H][SEQ][D] float32; SEQ = 64, D = 16.
// Launch: grid (H), block 128. Compile for sm_80 (or newer).
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

#define SEQ 64
#define D 16
#define BC 16
#define SCALE 0.25f
#define NWARPS 4
#define NT (NWARPS * 32)

extern "C" __global__ void __launch_bounds__(NT)
flash_attention_wmma(const __half* __restrict__ Q, const __half* __restrict__ K,
                     const __half* __restrict__ V, float* __restrict__ O)
{
    __shared__ __align__(32) __half Qs[SEQ * D];
    __shared__ __align__(32) __half Ks[BC * D];
    __shared__ __align__(32) __half Vs[BC * D];
    __shared__ __align__(32) float  Ss[NWARPS][16 * 16];   // scores, then P*V, per warp
    __shared__ __align__(32) __half Ps[NWARPS][16 * 16];   // probabilities, per warp
    __shared__ __align__(32) float  Os[NWARPS][16 * D];    // output accumulator, per warp
    __shared__ float alpha_s[NWARPS][16];
    __shared__ float l_s[NWARPS][16];

    const int head = blockIdx.x, t = threadIdx.x;
    const int warp = t / 32, lane = t % 32;
    const __half* Qh = Q + head * SEQ * D;
    const __half* Kh = K + head * SEQ * D;
    const __half* Vh = V + head * SEQ * D;

    for (int i = t; i < SEQ * D; i += NT) Qs[i] = Qh[i];
    for (int i = lane; i < 16 * D; i += 32) Os[warp][i] = 0.0f;
    __syncthreads();

    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> q_frag;
    wmma::load_matrix_sync(q_frag, Qs + warp * 16 * D, D);

    float m = -1e30f, l = 0.0f;            // meaningful in lanes 0..15 (row = lane)

    for (int kt = 0; kt < SEQ / BC; ++kt) {
        for (int i = t; i < BC * D; i += NT) {
            Ks[i] = Kh[kt * BC * D + i];
            Vs[i] = Vh[kt * BC * D + i];
        }
        __syncthreads();

        // S = Q_w * K_tile^T
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> k_frag;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> s_frag;
        wmma::load_matrix_sync(k_frag, Ks, D);
        wmma::fill_fragment(s_frag, 0.0f);
        wmma::mma_sync(s_frag, q_frag, k_frag, s_frag);
        wmma::store_matrix_sync(Ss[warp], s_frag, 16, wmma::mem_row_major);
        __syncwarp();

        if (lane < 16) {
            const int r = lane;
            float m_tile = -1e30f;
            for (int j = 0; j < BC; ++j) m_tile = fmaxf(m_tile, Ss[warp][r * 16 + j] * SCALE);
            const float m_new = fmaxf(m, m_tile);
            const float alpha = __expf(m - m_new);
            float sum = 0.0f;
            for (int j = 0; j < BC; ++j) {
                const float p = __expf(Ss[warp][r * 16 + j] * SCALE - m_new);
                Ps[warp][r * 16 + j] = __float2half(p);
                sum += p;
            }
            l = l * alpha + sum;
            m = m_new;
            alpha_s[warp][r] = alpha;
        }
        __syncwarp();

        // PV = P_w * V_tile
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> p_frag;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> v_frag;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> pv_frag;
        wmma::load_matrix_sync(p_frag, Ps[warp], 16);
        wmma::load_matrix_sync(v_frag, Vs, D);
        wmma::fill_fragment(pv_frag, 0.0f);
        wmma::mma_sync(pv_frag, p_frag, v_frag, pv_frag);
        wmma::store_matrix_sync(Ss[warp], pv_frag, 16, wmma::mem_row_major);
        __syncwarp();

        for (int i = lane; i < 16 * D; i += 32) {
            const int r = i / D;
            Os[warp][i] = Os[warp][i] * alpha_s[warp][r] + Ss[warp][i];
        }
        __syncwarp();
        __syncthreads();                   // all warps done with Ks / Vs
    }

    if (lane < 16) l_s[warp][lane] = l;
    __syncwarp();
    for (int i = lane; i < 16 * D; i += 32) {
        const int r = i / D, c = i % D;
        O[(head * SEQ + warp * 16 + r) * D + c] = Os[warp][i] / l_s[warp][r];
    }
}
