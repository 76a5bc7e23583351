// Inline-PTX helpers for the tensor-core kernels (hgemm_tile.cuh, flash_attention2_mma.cu,
// conv2d_implicit_gemm_mma.cu and its planted bug): a shared-space address, ldmatrix.x4 (plain and
// .trans), and one m16n8k16 mma.sync (f16 x f16 -> f32), d += a * b.
#pragma once
#include <cuda_fp16.h>

typedef unsigned h2reg;     // two f16 values packed in one .b32 register

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldsm_x4(h2reg (&r)[4], const __half* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)) : "memory");
}

__device__ __forceinline__ void ldsm_x4_trans(h2reg (&r)[4], const __half* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)) : "memory");
}

__device__ __forceinline__ void mma16816(float (&d)[4], const h2reg (&a)[4], h2reg b0, h2reg b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
