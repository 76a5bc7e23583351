"""Compile the Triton kernels of the real-style corpus for sm_80 without a GPU (triton.compile
with a GPUTarget) and write their PTX next to this file, with VERSION:
python examples/kernels/triton/build_triton.py"""

from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

HERE = Path(__file__).resolve().parent


@triton.jit
def softmax_rows(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    """One program per row of ``n_cols`` (<= BLOCK) floats: y = exp(x - max) / sum."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def layer_norm_fwd(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """One program per row of ``n_cols`` (<= BLOCK) floats: y = (x - mean) / sqrt(var + eps) * w + b."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, xc * rstd * w + b, mask=mask)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
           PREC: tl.constexpr):
    """C = A @ B (row-major, sizes multiples of the tiles): one BM x BN tile per program, tl.dot."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def matmul_bcast(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B as ``matmul`` without tl.dot: a broadcast product summed over the K axis."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, sm_scale, D: tl.constexpr, BM: tl.constexpr,
             BN: tl.constexpr, CAUSAL: tl.constexpr):
    """Flash-attention forward, one head: BM query rows per program, online softmax over BN keys
    (CAUSAL: row r sees keys 0..r, the others' scores set to -inf)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for n0 in range(0, n_ctx, BN):
        rn = n0 + tl.arange(0, BN)
        kt = tl.load(k_ptr + rn[None, :] * D + rd[:, None])
        v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
        qk = tl.dot(q, kt, input_precision="ieee") * sm_scale
        if CAUSAL:
            qk = tl.where(rm[:, None] >= rn[None, :], qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc / l_i[:, None])


F32, I32 = "*fp32", "i32"
MM = {"a_ptr": F32, "b_ptr": F32, "c_ptr": F32, "M": I32, "N": I32, "K": I32, "BM": "constexpr",
      "BN": "constexpr", "BK": "constexpr", "PREC": "constexpr"}
# file stem: (kernel, signature, constexprs, num_stages, num_warps); fp fusion on (fma.rn)
ATTN = {"q_ptr": F32, "k_ptr": F32, "v_ptr": F32, "o_ptr": F32, "n_ctx": I32, "sm_scale": "fp32", "D": "constexpr",
        "BM": "constexpr", "BN": "constexpr", "CAUSAL": "constexpr"}
LN = {"x_ptr": F32, "w_ptr": F32, "b_ptr": F32, "y_ptr": F32, "n_cols": I32, "eps": "fp32", "BLOCK": "constexpr"}
KERNELS = {
    "softmax_rows": (softmax_rows, {"x_ptr": F32, "y_ptr": F32, "n_cols": I32, "BLOCK": "constexpr"},
                     {"BLOCK": 64}, 3, 1),
    "layer_norm": (layer_norm_fwd, LN, {"BLOCK": 64}, 3, 1),
    "layer_norm_warps2": (layer_norm_fwd, LN, {"BLOCK": 64}, 3, 2),
    "matmul_ieee": (matmul, MM, {"BM": 16, "BN": 16, "BK": 16, "PREC": "ieee"}, 1, 1),
    "matmul_tf32": (matmul, MM, {"BM": 16, "BN": 16, "BK": 16, "PREC": "tf32"}, 1, 1),
    "matmul_pipelined": (matmul, MM, {"BM": 16, "BN": 16, "BK": 16, "PREC": "ieee"}, 3, 1),
    "matmul_f16": (matmul, {**MM, "a_ptr": "*fp16", "b_ptr": "*fp16"}, {"BM": 16, "BN": 16, "BK": 16, "PREC": "ieee"},
                   1, 1),
    "matmul_bcast": (matmul_bcast, {k: v for k, v in MM.items() if k != "PREC"}, {"BM": 16, "BN": 16, "BK": 8}, 1,
                     1),
    "attn_fwd": (attn_fwd, ATTN, {"D": 16, "BM": 16, "BN": 16, "CAUSAL": False}, 1, 1),
    "attn_fwd_warps2": (attn_fwd, ATTN, {"D": 16, "BM": 32, "BN": 16, "CAUSAL": False}, 1, 2),
    "attn_fwd_causal": (attn_fwd, ATTN, {"D": 16, "BM": 16, "BN": 16, "CAUSAL": True}, 1, 1),
}


def main() -> None:
    lines = [f"triton {triton.__version__}, GPUTarget('cuda', 80, 32), enable_fp_fusion=True"]
    for stem, (fn, sig, consts, stages, warps) in KERNELS.items():
        k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts), target=GPUTarget("cuda", 80, 32),
                           options={"num_warps": warps, "num_stages": stages, "enable_fp_fusion": True})
        (HERE / f"{stem}.ptx").write_text(k.asm["ptx"])
        lines.append(f"{stem}.ptx: {fn.__name__} {consts} num_stages={stages} num_warps={warps} "
                     f"shared_bytes={k.metadata.shared}")
        print(f"wrote {HERE / stem}.ptx (entry {k.metadata.name})")
    (HERE / "VERSION").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
