// PLANTED BUG (copy of flash_attention2_mma.cu): the row max is reduced over half of the quad
// (shfl.sync.bfly 1 only), so the two thread pairs of a row shift their exponentials by
// different maxima; the partial sums and P V then mix the two shifts (not a softmax).
// FlashAttention-2 forward on tensor cores with raw PTX (ldmatrix + mma.sync.m16n8k16,
// f16 inputs, f32 accumulate). One head per CTA, 4 warps; warp w owns query rows
// 16w .. 16w+15 and keeps everything for them in registers: the Q fragment (loaded once),
// the score tile S = Q K^T (16 x BC, accumulator layout), the running max m and the
// thread-partial running sum l of its two rows (g = lane/4 and g + 8), and the output
// accumulator O (16 x D). Per K/V tile of BC = 32 keys (2 tiles for SEQ = 64):
//   S = Q K_tile^T                 4 mma (n8 tiles of keys); K fragments by ldmatrix.x4
//   m_new = max(m, rowmax(S))      row max over the quad (shfl.sync.bfly 1, 2)
//   P = exp(S*scale - m_new)       in registers; alpha = exp(m - m_new)
//   l = l*alpha + (own part of rowsum P),  O = O*alpha
//   O += P V_tile                  the S accumulator registers are re-packed as f16 A
//                                  fragments (the m16n8 C layout is the m16k16 A layout
//                                  of two n8 tiles); V fragments by ldmatrix.x4.trans
// At the end l is summed over the quad and O / l is written. The running max starts at
// -inf (exp(-inf - m) = 0). Q, K, V: [H][SEQ][D] __half; O: [H][SEQ][D] float32;
// SEQ = 64, D = 16, scale 0.25. Launch: grid (H), block 128; sm_80+.
#include "mma_ptx.cuh"

__device__ __forceinline__ h2reg pack(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<h2reg*>(&h);
}

__device__ __forceinline__ void copy8(__half* dst, const __half* src)
{
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
}

#define SEQ 64
#define D 16
#define BC 32
#define SCALE 0.25f
#define NWARPS 4
#define NT (NWARPS * 32)

extern "C" __global__ void __launch_bounds__(NT)
bug_flash_attention2_quad_max(const __half* __restrict__ Q, const __half* __restrict__ K,
                     const __half* __restrict__ V, float* __restrict__ O)
{
    __shared__ __align__(16) __half Qs[SEQ * D];
    __shared__ __align__(16) __half Ks[BC * D];
    __shared__ __align__(16) __half Vs[BC * D];
    const int head = blockIdx.x, t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int g = lane / 4, tig = lane % 4;
    const __half* Qh = Q + head * SEQ * D;
    const __half* Kh = K + head * SEQ * D;
    const __half* Vh = V + head * SEQ * D;

    copy8(&Qs[t * 8], &Qh[t * 8]);                 // 128 x 8 halves = SEQ x D
    __syncthreads();
    h2reg qf[4];                                    // rows (lane%8) + 8*((lane/8)%2), cols 8*(lane/16)
    ldsm_x4(qf, &Qs[(warp * 16 + (lane % 8) + 8 * ((lane / 8) % 2)) * D + 8 * (lane / 16)]);

    float o[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

    for (int k0 = 0; k0 < SEQ; k0 += BC) {
        if (t < BC * D / 8) copy8(&Ks[t * 8], &Kh[k0 * D + t * 8]);
        else                copy8(&Vs[(t - BC * D / 8) * 8], &Vh[k0 * D + (t - BC * D / 8) * 8]);
        __syncthreads();

        // S = Q K^T: n8 tiles of keys; x4 = (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, ...)
        float s[BC / 8][4];
#pragma unroll
        for (int h = 0; h < BC / 16; ++h) {
            h2reg kf[4];
            ldsm_x4(kf, &Ks[(16 * h + 8 * (lane / 16) + (lane % 8)) * D + 8 * ((lane / 8) % 2)]);
#pragma unroll
            for (int e = 0; e < 4; ++e) { s[2 * h][e] = 0.0f; s[2 * h + 1][e] = 0.0f; }
            mma16816(s[2 * h], qf, kf[0], kf[1]);
            mma16816(s[2 * h + 1], qf, kf[2], kf[3]);
        }

        // online softmax, rows g (elements 0, 1) and g + 8 (elements 2, 3)
        float alpha[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float mx = m[r];
#pragma unroll
            for (int n = 0; n < BC / 8; ++n) {
                s[n][2 * r] *= SCALE;
                s[n][2 * r + 1] *= SCALE;
                mx = fmaxf(mx, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
            }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));   // BUG: the xor-2 step is missing
            alpha[r] = __expf(m[r] - mx);
            float sum = 0.0f;
#pragma unroll
            for (int n = 0; n < BC / 8; ++n) {
                s[n][2 * r] = __expf(s[n][2 * r] - mx);
                s[n][2 * r + 1] = __expf(s[n][2 * r + 1] - mx);
                sum += s[n][2 * r] + s[n][2 * r + 1];
            }
            l[r] = l[r] * alpha[r] + sum;
            m[r] = mx;
        }
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
            o[n][0] *= alpha[0]; o[n][1] *= alpha[0];
            o[n][2] *= alpha[1]; o[n][3] *= alpha[1];
        }

        // O += P V: k16 steps over the keys of the tile
#pragma unroll
        for (int ks = 0; ks < BC / 16; ++ks) {
            h2reg pf[4] = {pack(s[2 * ks][0], s[2 * ks][1]), pack(s[2 * ks][2], s[2 * ks][3]),
                           pack(s[2 * ks + 1][0], s[2 * ks + 1][1]), pack(s[2 * ks + 1][2], s[2 * ks + 1][3])};
            h2reg vf[4];   // (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 8-15)
            ldsm_x4_trans(vf, &Vs[(16 * ks + (lane % 8) + 8 * ((lane / 8) % 2)) * D + 8 * (lane / 16)]);
            mma16816(o[0], pf, vf[0], vf[1]);
            mma16816(o[1], pf, vf[2], vf[3]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int r = 0; r < 2; ++r) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
    float* Oh = O + head * SEQ * D;
    const int row = warp * 16 + g;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
        const int col = n * 8 + 2 * tig;
        Oh[row * D + col] = o[n][0] / l[0];
        Oh[row * D + col + 1] = o[n][1] / l[0];
        Oh[(row + 8) * D + col] = o[n][2] / l[1];
        Oh[(row + 8) * D + col + 1] = o[n][3] / l[1];
    }
}
