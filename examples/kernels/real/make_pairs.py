"""Write pairs.json of the real-style corpus (python3 examples/kernels/real/make_pairs.py)."""
import json
def side(f, e, grid, block, **kw):
    d = {"src": f"../src/real/{f}.cu", "ptx": f"../ptx/real/{f}.ptx", "entry": e, "grid": grid, "block": block}
    d.update(kw); return d
T = lambda n, role, shape, dt="f32": {"name": n, "role": role, "dtype": dt, "shape": shape}
S = lambda n, v: {"name": n, "role": "scalar", "dtype": "s32", "value": v}
def triton(stem, e, grid, names, smem=0, warps=1):  # smem: the compiler's metadata.shared (triton/VERSION)
    d = {"src": "../triton/build_triton.py", "ptx": f"../triton/{stem}.ptx", "entry": e, "grid": grid, "block": [32*warps,1,1], "params": names}
    return {**d, "shared_bytes": smem} if smem else d
pairs = [
 dict(name="int_sum", description="block sum of int data: serial vs shared-memory tree (exact modulo 2^32)",
      reference=side("int_sum", "int_sum_ref", [2,1,1], [1,1,1]), optimized=side("int_sum", "int_sum_tree", [2,1,1], [128,1,1]),
      params=[T("x","input",[512],"s32"), T("out","output",[2],"s32")]),
 dict(name="warp_sum", description="warp-shuffle sum with WARP_SZ and %laneid",
      reference=side("warp_sum", "warp_sum_ref", [2,1,1], [1,1,1]), optimized=side("warp_sum", "warp_sum_shfl", [2,1,1], [64,1,1]),
      params=[T("x","input",[128]), T("out","output",[2])]),
 dict(name="row_max", description="row max with -INFINITY initial max: serial vs shfl.xor",
      reference=side("row_max", "row_max_ref", [2,1,1], [4,1,1]), optimized=side("row_max", "row_max_warp", [2,1,1], [128,1,1]),
      params=[T("x","input",[256]), T("out","output",[8])]),
 dict(name="softmax_expf", description="softmax with expf (no fast math): two-pass vs online",
      reference=side("softmax_expf", "softmax_expf_ref", [2,1,1], [4,1,1]), optimized=side("softmax_expf", "softmax_expf_online", [2,1,1], [4,1,1]),
      params=[T("x","input",[256]), T("y","output",[256])]),
 dict(name="func_call", description="__noinline__ device function (.func, call, ret) vs inline",
      reference=side("func_call", "func_call_ref", [2,1,1], [32,1,1]), optimized=side("func_call", "func_call_noinline", [2,1,1], [32,1,1]),
      params=[T("x","input",[64]), T("y","input",[64]), T("out","output",[64])]),
 dict(name="const_table", description="__constant__ table and initialized __device__ array vs literals",
      reference=side("const_table", "const_table_ref", [2,1,1], [32,1,1]), optimized=side("const_table", "const_table_lookup", [2,1,1], [32,1,1]),
      params=[T("x","input",[64]), T("out","output",[64])]),
 dict(name="local_array", description="per-thread array indexed at run time (.local) vs direct indexing",
      reference=side("local_array", "local_array_ref", [2,1,1], [8,1,1]), optimized=side("local_array", "local_array_buf", [2,1,1], [8,1,1]),
      params=[T("x","input",[128]), T("out","output",[16])]),
 dict(name="scale", description="symbolic float scalar alpha; unused parameter; different parameter lists bound by name",
      reference=side("scale", "scale_ref", [2,1,1], [32,1,1], params=["x","alpha","unused","out"]),
      optimized=side("scale", "scale_twice", [2,1,1], [32,1,1], params=["x","alpha","out"]),
      params=[T("x","input",[64]), {"name":"alpha","role":"scalar","dtype":"f32"}, {"name":"unused","role":"scalar","dtype":"s32","value":7}, T("out","output",[64])]),
 dict(name="dyn_smem", description="dynamic shared memory sized at launch (shared_bytes)",
      reference=side("dyn_smem", "dyn_smem_ref", [2,1,1], [64,1,1], shared_bytes=256), optimized=side("dyn_smem", "dyn_smem_reverse", [2,1,1], [64,1,1], shared_bytes=256),
      params=[T("x","input",[128]), T("out","output",[128])]),
 dict(name="strided_sum", description="run-time length n: selp accumulator-init idiom",
      reference=side("strided_sum", "strided_sum_ref", [1,1,1], [32,1,1]), optimized=side("strided_sum", "strided_sum_unrolled", [1,1,1], [32,1,1]),
      params=[T("x","input",[200]), T("out","output",[32]), {"name":"n","role":"scalar","dtype":"s32","value":200}]),
 dict(name="triton_softmax_rows", description="Triton 3.9 row softmax (tl.max/tl.sum over shuffles, tl.exp) vs a CUDA thread per row",
      reference=side("softmax_rows_ref", "softmax_rows_ref", [2,1,1], [1,1,1], params=["x","y","n"]),
      optimized={"src": "../triton/build_triton.py", "ptx": "../triton/softmax_rows.ptx", "entry": "softmax_rows",
                 "grid": [2,1,1], "block": [32,1,1], "params": ["x","y","n","scratch","profile"]},
      params=[T("x","input",[128]), T("y","output",[128]), {"name":"n","role":"scalar","dtype":"s32","value":64},
              {"name":"scratch","role":"scalar","dtype":"s32","value":0}, {"name":"profile","role":"scalar","dtype":"s32","value":0}]),
 dict(name="triton_layer_norm", description="Triton 3.9 layer norm forward (two tl.sum, sqrt, symbolic eps) vs a CUDA thread per row",
      reference=side("layer_norm_ref", "layer_norm_ref", [2,1,1], [1,1,1], params=["x","w","b","y","n","eps"]),
      optimized=triton("layer_norm", "layer_norm_fwd", [2,1,1], ["x","w","b","y","n","eps","scratch","profile"]),
      params=[T("x","input",[96]), T("w","input",[48]), T("b","input",[48]), T("y","output",[96]), S("n",48),
              {"name":"eps","role":"scalar","dtype":"f32"}, S("scratch",0), S("profile",0)]),
 dict(name="triton_layer_norm_warps2", description="the Triton layer norm with num_warps=2: every lane of a warp stores the warp's partial sum to one shared slot (cross-warp reduction)",
      reference=side("layer_norm_ref", "layer_norm_ref", [2,1,1], [1,1,1], params=["x","w","b","y","n","eps"]),
      optimized=triton("layer_norm_warps2", "layer_norm_fwd", [2,1,1], ["x","w","b","y","n","eps","scratch","profile"], 8, 2),
      params=[T("x","input",[96]), T("w","input",[48]), T("b","input",[48]), T("y","output",[96]), S("n",48),
              {"name":"eps","role":"scalar","dtype":"f32"}, S("scratch",0), S("profile",0)]),
 *[dict(name=f"triton_matmul_{v}", description=f"Triton 3.9 tl.dot matmul, 16x16x16 tiles, {what} vs a CUDA thread per element",
      reference=side("matmul_ref", "matmul_ref", [2,2,1], [16,16,1], params=["a","b","c","m","n","k"]),
      optimized=triton(f"matmul_{v}", "matmul", [2,2,1], ["a","b","c","m","n","k","scratch","profile"], smem),
      params=[T("a","input",[1024]), T("b","input",[1024]), T("c","output",[1024]), S("m",32), S("n",32), S("k",32),
              S("scratch",0), S("profile",0)])
   for v, smem, what in [("ieee", 2048, "fp32 inputs with input_precision='ieee' (FMA dot through shared memory)"),
                         ("tf32", 1024, "fp32 inputs with the default TF32 precision (mma.sync m16n8k8 .tf32)"),
                         ("pipelined", 4096, "'ieee', num_stages=3 (cp.async software pipeline)")]],
 dict(name="triton_matmul_f16", description="Triton 3.9 tl.dot with fp16 inputs (ldmatrix .trans + mma.sync m16n8k16 f16, f32 accumulator) vs a CUDA thread per element",
      reference=side("matmul_ref", "matmul_f16_ref", [2,2,1], [16,16,1], params=["a","b","c","m","n","k"]),
      optimized=triton("matmul_f16", "matmul", [2,2,1], ["a","b","c","m","n","k","scratch","profile"], 1024),
      params=[T("a","input",[1024],"f16"), T("b","input",[1024],"f16"), T("c","output",[1024]), S("m",32), S("n",32), S("k",32),
              S("scratch",0), S("profile",0)]),
 dict(name="triton_matmul_bcast", description="Triton 3.9 matmul without tl.dot (broadcast product, tl.sum over K, BK 8) vs the tl.dot 'ieee' one: two Triton variants",
      reference=triton("matmul_ieee", "matmul", [2,2,1], ["a","b","c","m","n","k","scratch","profile"], 2048),
      optimized=triton("matmul_bcast", "matmul_bcast", [2,2,1], ["a","b","c","m","n","k","scratch","profile"], 1024),
      params=[T("a","input",[1024]), T("b","input",[1024]), T("c","output",[1024]), S("m",32), S("n",32), S("k",32),
              S("scratch",0), S("profile",0)]),
 dict(name="cutlass_sgemm", description="CUTLASS 4.2 device GEMM (SIMT fp32, 32x32x8 tile, one warp; predicated to a 16x16 C) called from a plain entry vs a CUDA thread per element",
      reference=side("matmul_ref", "matmul_ref", [1,1,1], [16,16,1]),
      optimized=side("cutlass_sgemm", "cutlass_sgemm", [1,1,1], [32,1,1]),
      params=[T("a","input",[512]), T("b","input",[512]), T("c","output",[256]), S("m",16), S("n",16), S("k",32)]),
 dict(name="triton_attn_fwd", description="Triton 3.9 flash-attention forward (online softmax from -inf, two tl.dot 'ieee', symbolic scale) vs a CUDA two-pass thread per row",
      reference=side("attn_ref", "attn_ref", [2,1,1], [16,1,1], params=["q","k","v","o","n_ctx","scale"]),
      optimized=triton("attn_fwd", "attn_fwd", [2,1,1], ["q","k","v","o","n_ctx","scale","scratch","profile"], 3072),
      params=[T("q","input",[512]), T("k","input",[512]), T("v","input",[512]), T("o","output",[512]), S("n_ctx",32),
              {"name":"scale","role":"scalar","dtype":"f32"}, S("scratch",0), S("profile",0)]),
 dict(name="triton_attn_fwd_warps2", description="the Triton flash-attention forward with num_warps=2 and 32 query rows per program (tl.dot layouts across two warps) vs the CUDA two-pass thread per row",
      reference=side("attn_ref", "attn_ref", [2,1,1], [32,1,1], params=["q","k","v","o","n_ctx","scale"]),
      optimized=triton("attn_fwd_warps2", "attn_fwd", [2,1,1], ["q","k","v","o","n_ctx","scale","scratch","profile"], 5120, 2),
      params=[T("q","input",[1024]), T("k","input",[512]), T("v","input",[512]), T("o","output",[1024]), S("n_ctx",32),
              {"name":"scale","role":"scalar","dtype":"f32"}, S("scratch",0), S("profile",0)]),
 dict(name="triton_attn_fwd_causal", description="the Triton flash-attention forward with a causal mask (scores above the diagonal -inf, so exp(-inf - m) = 0), every CTA, vs a CUDA causal two-pass thread per row",
      reference=side("attn_ref", "attn_causal_ref", [2,1,1], [16,1,1], params=["q","k","v","o","n_ctx","scale"]),
      optimized=triton("attn_fwd_causal", "attn_fwd", [2,1,1], ["q","k","v","o","n_ctx","scale","scratch","profile"], 3072),
      params=[T("q","input",[512]), T("k","input",[512]), T("v","input",[512]), T("o","output",[512]), S("n_ctx",32),
              {"name":"scale","role":"scalar","dtype":"f32"}, S("scratch",0), S("profile",0)], check_cta="all"),
]
REFUSED = {"softmax_expf": "cvt.sat.f32.f32", "triton_matmul_tf32": "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
           "triton_matmul_pipelined": "cp.async.ca.shared.global",
           "triton_layer_norm_warps2": "of one warp store the same value to shared global_smem+0"}
for p in pairs:
    p.setdefault("check_cta", [0,0,0])
    p["expected"] = {"verdict": "equivalent"}
    if p["name"] in REFUSED:
        p["expected"] = {"verdict": "unsupported", "refused": REFUSED[p["name"]]}
import os
os.chdir(os.path.dirname(os.path.abspath(__file__)))
json.dump({"version": 1, "about": "Real-style kernels as nvcc 13 emits them (-O3 -lineinfo, no fast math), issue 13 'Reach'. Paths relative to this folder. A side's optional `params` lists, in its .param order, the names of the shared `params` it binds; `shared_bytes` is the dynamic shared memory of a launch.", "pairs": pairs}, open("pairs.json","w"), indent=1)
