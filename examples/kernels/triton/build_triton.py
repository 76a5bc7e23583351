"""Compile the Triton row softmax for sm_80 without a GPU (triton.compile with a GPUTarget)
and write its PTX next to this file: python examples/kernels/triton/build_triton.py"""

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


def main() -> None:
    src = ASTSource(fn=softmax_rows, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n_cols": "i32",
                                                "BLOCK": "constexpr"}, constexprs={"BLOCK": 64})
    k = triton.compile(src, target=GPUTarget("cuda", 80, 32), options={"num_warps": 1})
    (HERE / "softmax_rows.ptx").write_text(k.asm["ptx"])
    (HERE / "VERSION").write_text(f"triton {triton.__version__}, GPUTarget('cuda', 80, 32), num_warps=1, "
                                  "BLOCK=64\n")
    print(f"wrote {HERE / 'softmax_rows.ptx'} (entry {k.metadata.name})")


if __name__ == "__main__":
    main()
