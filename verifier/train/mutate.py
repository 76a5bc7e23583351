"""Bug injection: the faults parallelization frameworks ship, applied to a plan.

Each mutation changes the plan at construction level (``plan.Bugs``), so the captured
implementation is the program a framework with that bug would run. ``apply(train_case, name)`` returns the
mutated ``TrainCase``; ``python -m verifier.train.mutate CASE.py NAME`` captures it
and runs the per-operator engine (exit 1: rejected, as expected).
"""

from __future__ import annotations

import argparse
import copy
import sys
from dataclasses import replace

from certificates.errors import Malformed

from .plan import Bugs, TrainCase

MUTATIONS: dict[str, str] = {
    "drop_grad_allreduce": "the DP gradient all_reduce is missing",
    "allreduce_as_allgather": "the DP gradient all_reduce is an all_gather",
    "wrong_grad_group": "the DP gradient all_reduce is issued on the PP group (TP group when pp == 1)",
    "swap_pp_peer": "pipeline activations are sent to (and received from) the wrong peer rank",
    "loss_scale_missing_dp": "the loss is scaled by the local element count (missing 1/dp)",
    "loss_scale_missing_mb": "the loss is not scaled by 1/M (micro-batches)",
    "wrong_backward_input": "a stage sends back the gradient of its first parameter instead of its input",
    "early_grad_reduce": "the gradient reducer fires after micro-batch 0, before the last micro-batch",
    "shuffled_micro_batches": "the last stage pairs micro-batch m with the labels of another micro-batch",
    "rope_not_sliced": "a RoPE/positional table not sliced with the sequence (every SP rank uses the first S/tp rows)",
}


def _bugs(tc: TrainCase, name: str) -> Bugs:
    p, b = tc.config, copy.deepcopy(tc.bugs)
    if name == "drop_grad_allreduce":
        b.grad_collective = "none"
    elif name == "allreduce_as_allgather":
        b.grad_collective = "all_gather"
    elif name == "wrong_grad_group":
        b.grad_group = "pp" if p.pp > 1 else "tp"
    elif name == "swap_pp_peer":
        b.swap_pp_peers = True
    elif name == "loss_scale_missing_dp":
        b.loss_scale_factor = p.dp
    elif name == "loss_scale_missing_mb":
        b.loss_scale_factor = p.micro_batches
    elif name == "wrong_backward_input":
        b.backward_input = "parameter"
    elif name == "early_grad_reduce":
        b.reduce_after = 0
    elif name == "shuffled_micro_batches":
        b.label_order = list(range(p.micro_batches))[::-1]
    elif name == "rope_not_sliced":
        b.rope_not_sliced = True
    else:
        raise ValueError(f"unknown mutation {name!r} (one of {', '.join(MUTATIONS)})")
    return b


def applicable(tc: TrainCase, name: str) -> str | None:
    """Why a mutation cannot change this plan (None: it can)."""
    p = tc.config
    needs = {"drop_grad_allreduce": (p.dp > 1 and not p.zero1, "dp > 1 without ZeRO-1"),
             "allreduce_as_allgather": (p.dp > 1 and not p.zero1, "dp > 1 without ZeRO-1"),
             "wrong_grad_group": (p.dp > 1 and p.pp * p.tp > 1, "dp > 1 and pp or tp > 1"),
             "swap_pp_peer": (p.pp > 1 and p.dp > 1, "pp > 1 and dp > 1 (a TP peer holds the same activation)"),
             "loss_scale_missing_dp": (p.dp > 1, "dp > 1"),
             "loss_scale_missing_mb": (p.micro_batches > 1, "micro_batches > 1"),
             "wrong_backward_input": (p.pp > 1, "pp > 1"),
             "early_grad_reduce": (p.micro_batches > 1 and p.dp > 1, "micro_batches > 1 and dp > 1"),
             "shuffled_micro_batches": (p.micro_batches > 1, "micro_batches > 1"),
             "rope_not_sliced": (p.sp and p.tp > 1 and p.rope == "sharded",
                                 "sp, tp > 1 and the sharded RoPE (rope='sharded')")}
    if name not in needs:
        raise ValueError(f"unknown mutation {name!r} (one of {', '.join(MUTATIONS)})")
    ok, why = needs[name]
    return None if ok else f"mutation {name} needs {why}"


def apply(tc: TrainCase, name: str) -> TrainCase:
    """The plan with mutation ``name`` injected (``ValueError`` if it cannot change this plan)."""
    why = applicable(tc, name)
    if why:
        raise ValueError(why)
    return replace(tc, name=f"{tc.name}+{name}", bugs=_bugs(tc, name))


def main(argv: list[str] | None = None) -> int:
    from verifier.cli import main as pvcert

    from .plan import load_train_case, plan_case, write_case

    ap = argparse.ArgumentParser(prog="python -m verifier.train.mutate", description=__doc__.splitlines()[0])
    ap.add_argument("case", nargs="?", help="a module defining make_case() -> TrainCase")
    ap.add_argument("mutation", nargs="?", choices=sorted(MUTATIONS))
    ap.add_argument("-o", "--output", default="mutated_case.json", help="where to write the JSON case")
    ap.add_argument("--list", action="store_true", help="list the mutations")
    a = ap.parse_args(argv)
    if a.list or not a.case or not a.mutation:
        for k, v in MUTATIONS.items():
            print(f"{k:24} {v}")
        return 0
    try:
        tc = apply(load_train_case(a.case), a.mutation)
        cap = plan_case(tc)
    except (ValueError, Malformed) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    write_case(cap.case, a.output)
    return pvcert(["verify", a.output])


if __name__ == "__main__":
    sys.exit(main())
