// emulation stand-in for nvcuda::wmma (16x16x16 only): a fragment holds the whole matrix in
// every lane; loads read it all, stores are done by lane 0 only.
#pragma once
#include <type_traits>
#include "cuda_fp16.h"
namespace nvcuda { namespace wmma {
struct matrix_a {}; struct matrix_b {}; struct accumulator {};
struct row_major {}; struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment { float v[256]; };
template <class Use, class T, class L>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const T* p, unsigned ldm) {
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c)
            f.v[r * 16 + c] = std::is_same<L, row_major>::value ? p[r * ldm + c] : p[c * ldm + r];
}
template <class T>
inline void fill_fragment(fragment<accumulator, 16, 16, 16, T>& f, float x) {
    for (auto& e : f.v) e = x;
}
template <class LA, class LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float>& d,
                     const fragment<matrix_a, 16, 16, 16, __half, LA>& a,
                     const fragment<matrix_b, 16, 16, 16, __half, LB>& b,
                     const fragment<accumulator, 16, 16, 16, float>& c) {
    float t[256];
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
            float s = c.v[i * 16 + j];
            for (int k = 0; k < 16; ++k) s += a.v[i * 16 + k] * b.v[k * 16 + j];
            t[i * 16 + j] = s;
        }
    for (int i = 0; i < 256; ++i) d.v[i] = t[i];
}
inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f,
                              unsigned ldm, layout_t layout) {
    if (emu::linear_tid() % 32 != 0) return;
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c)
            (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.v[r * 16 + c];
}
}}  // namespace nvcuda::wmma
