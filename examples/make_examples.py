"""Regenerate the bundled IR examples: ``python examples/make_examples.py``.

tp_mlp/: a Megatron-style tensor-parallel MLP on 2 ranks (column-parallel linear,
GELU, row-parallel linear, all_reduce) against its single-device model, and the
same with the all_reduce dropped (a real bug class). See verifier/workloads.py.
"""

from __future__ import annotations

import json
import os

from verifier.ir import save_graph
from verifier.workloads import tp_mlp

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tp_mlp")


def main() -> None:
    os.makedirs(HERE, exist_ok=True)
    for suffix, case in (("", tp_mlp()), ("_missing_allreduce", tp_mlp(all_reduce=False))):
        if not suffix:
            save_graph(case.spec, os.path.join(HERE, "spec.json"))
        save_graph(case.impl, os.path.join(HERE, f"impl{suffix}.json"))
        with open(os.path.join(HERE, f"case{suffix}.json"), "w") as f:
            json.dump({"format": "pvcert-case", "version": 1, "name": case.name, "spec": "spec.json",
                       "impl": f"impl{suffix}.json", "input_relation": case.input_relation,
                       "expect": case.expect}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
