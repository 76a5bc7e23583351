// A CUTLASS 4.2 device GEMM (SIMT fp32, 32x32x8 threadblock tile, one warp) behind a plain entry.
// C = A @ B, all row-major; CTA (x, y) computes the 32x32 tile of C at rows 32x, columns 32y
// as matmul_ref (matmul_ref.cu) does for 16x16 tiles. Build: ../../build_real.sh.
#include "cutlass/gemm/device/gemm.h"

using Row = cutlass::layout::RowMajor;
using Gemm = cutlass::gemm::device::Gemm<
    float, Row, float, Row, float, Row, float,
    cutlass::arch::OpClassSimt, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<32, 32, 8>,   // threadblock tile
    cutlass::gemm::GemmShape<32, 32, 8>,   // warp tile: one warp per CTA
    cutlass::gemm::GemmShape<1, 1, 1>>;    // SIMT instruction: one fma
using Kernel = Gemm::GemmKernel;

// The CUTLASS kernel's operator() with its Params built in-kernel (alpha = 1, beta = 0).
extern "C" __global__ void __launch_bounds__(Kernel::kThreadCount)
cutlass_sgemm(const float *a, const float *b, float *c, int m, int n, int k) {
    __shared__ typename Kernel::SharedStorage smem;
    cutlass::gemm::GemmCoord problem(m, n, k);
    typename Kernel::ThreadblockSwizzle swizzle;
    cutlass::gemm::GemmCoord tiles = swizzle.get_tiled_shape(
        problem, {Kernel::Mma::Shape::kM, Kernel::Mma::Shape::kN, Kernel::Mma::Shape::kK}, 1);
    typename Kernel::Params params(
        problem, tiles, {const_cast<float *>(a), k}, {const_cast<float *>(b), n}, {c, n}, {c, n},
        {1.0f, 0.0f});
    Kernel op;
    op(params, smem);
}
