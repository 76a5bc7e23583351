// Minimal CPU emulation of the CUDA subset used by examples/kernels/src (testing aid only).
// One OS thread per CUDA thread, CTAs run one after another; __syncthreads is a CTA-wide
// std::barrier (it counts arrivals, like bar.sync), __syncwarp a per-warp std::barrier,
// shuffles go through a per-warp exchange buffer, WMMA fragments hold whole matrices.
// __shared__ arrays become function-local statics (shared by the CTA's threads).
// Compiled with g++ -std=c++20 -include cuda_emu.h; not a CUDA implementation.
#pragma once
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct alignas(16) float4 { float x, y, z, w; };
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

namespace emu {
inline thread_local dim3 tid, bid;
inline dim3 bdim, gdim;
inline std::unique_ptr<std::barrier<>> cta_bar;
inline std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
inline float xchg[32][32];
inline unsigned linear_tid() { return tid.x + bdim.x * (tid.y + bdim.y * tid.z); }
inline void warp_sync() { warp_bar[linear_tid() / 32]->arrive_and_wait(); }
inline float shfl(float v, int src) {
    unsigned w = linear_tid() / 32, l = linear_tid() % 32;
    xchg[w][l] = v;
    warp_sync();
    float r = (src >= 0 && src < 32) ? xchg[w][src] : v;
    warp_sync();
    return r;
}
template <class F>
void launch(F f, dim3 grid, dim3 block) {
    gdim = grid;
    bdim = block;
    unsigned nt = block.x * block.y * block.z;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                cta_bar = std::make_unique<std::barrier<>>(nt);
                warp_bar.clear();
                for (unsigned w = 0; w < (nt + 31) / 32; ++w)
                    warp_bar.push_back(std::make_unique<std::barrier<>>(std::min(32u, nt - 32 * w)));
                std::vector<std::thread> ts;
                for (unsigned z = 0; z < block.z; ++z)
                    for (unsigned y = 0; y < block.y; ++y)
                        for (unsigned x = 0; x < block.x; ++x)
                            ts.emplace_back([=] {
                                tid = {x, y, z};
                                bid = {bx, by, bz};
                                f();
                            });
                for (auto& t : ts) t.join();
            }
}
}  // namespace emu

#define threadIdx emu::tid
#define blockIdx emu::bid
#define blockDim emu::bdim
#define gridDim emu::gdim
#define __global__
#define __device__ static
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
inline void __syncthreads() { emu::cta_bar->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::warp_sync(); }
inline float __shfl_down_sync(unsigned, float v, int off) { return emu::shfl(v, int(emu::linear_tid() % 32) + off); }
inline float __shfl_xor_sync(unsigned, float v, int m) { return emu::shfl(v, int(emu::linear_tid() % 32) ^ m); }
inline float __expf(float x) { return std::exp(x); }
using std::fmaxf;
