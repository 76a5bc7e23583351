// CPU stand-ins for the inline-PTX helpers of src/hgemm_mma.cu (emulation only).
// They implement the register-level fragment layouts of ldmatrix (.x4, .x2.trans) and
// mma.sync.aligned.m16n8k16.row.col as documented in the PTX ISA, exchanging addresses and
// fragments between the 32 lanes of a warp. __half is float here, so a "b32 register
// holding two halves" is a pair of floats.
#pragma once
struct h2reg { float lo, hi; };

namespace emu {
inline const float* addr_x[32][32];
inline h2reg frag_a[32][32][4], frag_b[32][32][2];
}

inline void copy8(__half* dst, const __half* src) { for (int i = 0; i < 8; ++i) dst[i] = src[i]; }

inline void ldmatrix_x4(h2reg (&r)[4], const __half* p)
{
    unsigned w = emu::linear_tid() / 32, l = emu::linear_tid() % 32;
    emu::addr_x[w][l] = p;
    emu::warp_sync();
    for (int i = 0; i < 4; ++i) {                      // matrix i, row l/4, cols 2(l%4), +1
        const float* row = emu::addr_x[w][i * 8 + l / 4];
        r[i] = {row[2 * (l % 4)], row[2 * (l % 4) + 1]};
    }
    emu::warp_sync();
}

inline void ldmatrix_x2_trans(h2reg (&r)[2], const __half* p)
{
    unsigned w = emu::linear_tid() / 32, l = emu::linear_tid() % 32;
    emu::addr_x[w][l] = p;
    emu::warp_sync();
    for (int i = 0; i < 2; ++i) {                      // transposed: rows 2(l%4), +1 of column l/4
        const float* r0 = emu::addr_x[w][i * 8 + 2 * (l % 4)];
        const float* r1 = emu::addr_x[w][i * 8 + 2 * (l % 4) + 1];
        r[i] = {r0[l / 4], r1[l / 4]};
    }
    emu::warp_sync();
}

inline void mma_m16n8k16(float (&d)[4], const h2reg (&a)[4], const h2reg (&b)[2])
{
    unsigned w = emu::linear_tid() / 32, l = emu::linear_tid() % 32;
    for (int i = 0; i < 4; ++i) emu::frag_a[w][l][i] = a[i];
    for (int i = 0; i < 2; ++i) emu::frag_b[w][l][i] = b[i];
    emu::warp_sync();
    float A[16][16], B[16][8];
    for (int L = 0; L < 32; ++L) {
        int g = L / 4, c = 2 * (L % 4);
        const h2reg* fa = emu::frag_a[w][L];
        const h2reg* fb = emu::frag_b[w][L];
        A[g][c] = fa[0].lo;         A[g][c + 1] = fa[0].hi;
        A[g + 8][c] = fa[1].lo;     A[g + 8][c + 1] = fa[1].hi;
        A[g][c + 8] = fa[2].lo;     A[g][c + 9] = fa[2].hi;
        A[g + 8][c + 8] = fa[3].lo; A[g + 8][c + 9] = fa[3].hi;
        B[c][g] = fb[0].lo;         B[c + 1][g] = fb[0].hi;
        B[c + 8][g] = fb[1].lo;     B[c + 9][g] = fb[1].hi;
    }
    emu::warp_sync();
    int g = l / 4, c = 2 * (l % 4);
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {c, c + 1, c, c + 1};
    for (int e = 0; e < 4; ++e)
        for (int k = 0; k < 16; ++k) d[e] += A[rows[e]][k] * B[k][cols[e]];
}
