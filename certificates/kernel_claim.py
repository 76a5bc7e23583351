"""Claim ``kernel-equivalence``: each CTA replayed along its evidence, in lockstep where ``lockstep`` can and
else thread by thread (``kernel.Replay``), and the two kernels' outputs compared by their normal forms."""

import math

from .errors import Malformed, Rejected, fail_if
from .kernel import (Printer, Rat, Replay, Word, bind, check_dims, check_params, coverage, ctas, dot_equal, no_gc,
                     least, scope, shared_bytes, shift, undefined, word_equal)
from .limits import Limits
from .lockstep import IX, lockstep
from .poly import side_conditions
from .ptx import Kernel, parse


def replay_cta(k: Kernel, grid, block, params, cta, ev, side: str, sw: str, printer: Printer, limits: Limits,
               dyn: int | None, lock: set):
    """Replay one CTA along its evidence (schedule, witness, printed outputs): its outputs, the replay (``gmem``:
    output bytes written, ``shadow``: bytes accessed) and the certified digests (checked by ``replay_kernel``).
    In lockstep until it declines a CTA of the kernel (``lock``: the sides it declined)."""
    sw = f"{sw}: CTA {list(cta)}"
    fail_if(not isinstance(ev, dict) or not all(isinstance(ev.get(k), t) for k, t in (("schedule", list), (
        "witness", list), ("outputs", dict))), Malformed, sw, "evidence needs schedule, witness and outputs")
    got = None if side in lock else lockstep(r := Replay(k, grid, block, params, cta, limits, side, dyn), ev["schedule"])
    if got is None:   # declined: a fresh replay, thread by thread
        lock.add(side)
        got = (r := Replay(k, grid, block, params, cta, limits, side, dyn)).run(ev["schedule"])
    claimed = set()
    for i, w in enumerate(ev["witness"]):
        fail_if(not (isinstance(w, list) and len(w) == 5 and all(type(x) is str for x in w[:2]) and all(
            type(x) is int for x in w[2:])), Malformed, sw, f"witness[{i}]: needs [space, kind, pc, pc, pc]")
        claimed.add(tuple(w))
    if claimed != r.witness:
        diff = sorted(map(str, (r.witness - claimed) or (claimed - r.witness)))
        raise Rejected(f"{sw}: the memory-event witness differs from the replay's at {diff[0]}")
    fail_if(set(got) != set(ev["outputs"]), Rejected, f"{sw}: the certified outputs are not the elements it writes")
    digests = {key: ev["outputs"][key] for key in got if isinstance(ev["outputs"][key], dict)}
    for key in sorted(set(got) - set(digests)):
        limits.tick()
        if ev["outputs"][key] != printer.text(got[key]):
            raise Rejected(f"{sw}: {key}: the certified normal form is not the replay's")
    return got, r, digests


@no_gc()
def describe_kernels(claim: dict, sha: dict[str, str], low: set) -> list[str]:
    """The kernels with their sha256, grid and block, and the CTAs checked; their 16-bit dtypes join ``low``."""
    low |= {p.get("dtype") for p in claim.get("params") or []} & {"f16", "bf16"}
    return [f"{side} kernel '{claim[side]['entry']}' ptx sha256 {sha[claim[side]['ptx']][:12]} grid "
            f"{claim[side]['grid']} block {claim[side]['block']}" for side in ("reference", "optimized")] + (
        [f"checked CTA(s): {claim['cta']}"] if "cta" in claim else [])


def replay_kernel(claim: dict, evidence: dict, arts: dict, where: str, limits: Limits) -> str:
    """Claim ``kernel-equivalence``: CTA ``cta`` of both launches (``"all"``: every CTA of the grid, and no output byte
    one CTA writes is accessed by another, so the CTAs are independent) is race- and deadlock-free and every output
    element it writes is equal over the reals. Evidence per side and CTA (``"all"``: ``{"ctas": [...]}`` in ``ctas``
    order): the schedule, the witness (set of ordered conflict classes) and the printed output normal forms
    (``Printer``: reference outputs, then optimized, by CTA and element; one shared atom table), each as text or as
    ``{"sha256": digest}``."""
    params = check_params(claim.get("params"), where)
    every = claim.get("cta") == "all"
    cta = tuple(claim.get("cta")) if isinstance(claim.get("cta"), list) else None
    if not every and (cta is None or len(cta) != 3 or not all(type(x) is int and x >= 0 for x in cta)):
        raise Malformed(where, 'cta: needs three non-negative integers or "all"')
    outs, notes, printer, grids, digests, lock, conds = {}, [], Printer(), [], {}, set(), {}
    IX.clear()   # input elements' indices: shared by this claim's two kernels and their CTAs, not kept past it
    for side in ("reference", "optimized"):
        sw = f"{where}: {side}"
        s, ev = claim.get(side), evidence.get(side)
        fail_if(not isinstance(s, dict) or not isinstance(ev, dict), Malformed, sw, "missing launch or evidence")
        if s.get("ptx") not in arts or arts[s["ptx"]][0] != "ptx" or not isinstance(arts[s["ptx"]][1], str):
            raise Malformed(sw, f"ptx: {s.get('ptx')!r} is not a PTX artifact")
        _, text, awhere = arts[s["ptx"]]
        fail_if(not isinstance(s.get("entry"), str), Malformed, sw, "entry: needs the kernel's name")
        k = parse(text, awhere).kernel(s["entry"])
        grid, block = check_dims(s.get("grid"), f"{sw}: grid"), check_dims(s.get("block"), f"{sw}: block")
        mine, dyn = bind(params, s, sw), shared_bytes(s, sw)
        grids.append(grid)
        todo, evs = (ctas(grid), ev.get("ctas")) if every else ([cta], [ev])
        if any(c >= g for c, g in zip(todo[0], grid)):
            raise Malformed(sw, f"cta {list(cta)} outside the grid {list(grid)}")
        if not isinstance(evs, list) or len(evs) != len(todo):
            raise Malformed(sw, f"evidence needs one entry per CTA ({len(todo)})")
        outs[side], wrote, seen, events, classes, digests[side] = {}, {}, {}, 0, 0, {}
        with side_conditions() as conds[side]:   # of its partial operations, for ``undefined``
            for c, e in zip(todo, evs):
                got, r, d = replay_cta(k, grid, block, mine, c, e, side, sw, printer, limits, dyn, lock)
                digests[side].update(d)
                written = set(r.gmem)
                touched = set(r.shadow["global"]) | {w + i for w in r.words["global"] for i in range(4)}
                events, classes = events + len(e["schedule"]), classes + len(r.witness)
                clash = next((a for a in written if seen.get(a, c) != c), None) or \
                    next((a for a in touched if wrote.get(a, c) != c), None)
                if clash is not None:
                    raise Rejected(f"{side}: CTAs {list(c)} and {list(seen.get(clash) or wrote[clash])} both access "
                                   f"output byte {clash:#x}, one writing it")
                wrote.update(dict.fromkeys(written, c))
                seen.update(dict.fromkeys(touched, c))
                outs[side].update(got)
        if r.tables:
            notes.append(f"{k.name}: module variables {', '.join(r.tables)} at their PTX initial values "
                         "(no host writes)")
        notes.append(f"{k.name}: {len(todo)} CTA(s) of {r.n} threads, {events} schedule events, "
                     f"{classes} conflict classes ordered")
    if grids[0] != grids[1]:
        raise Rejected(f"the launches' grids differ ({list(grids[0])}, {list(grids[1])}): CTA {list(cta)} of which?")
    fail_if(evidence.get("atoms") != printer.table, Rejected, "the certified atom table is not the replay's")
    ref, opt = outs["reference"], outs["optimized"]
    fail_if(set(ref) != set(opt), Rejected, f"{min(set(ref) ^ set(opt), default=None)} is written by one kernel only")
    methods: dict[str, int] = {}
    for key in sorted(ref):
        limits.tick()
        a, b, same = ref[key], opt[key], False
        if isinstance(a, Word) or isinstance(b, Word):
            holds, method = word_equal(a, b), "ring modulo 2^32"
        else:
            a, b = Rat.of(a), Rat.of(b)   # equal as built, else after the ``exp`` shift
            same = dot_equal(a, b) or a.d.t == b.d.t and a.n.t == b.n.t
            holds, method = same or a.equals(shift(b, least(a) or ())), "normal-form"   # b onto shift(a)
        if holds is not True:
            raise Rejected(f"{key}: {'not decided' if holds is None else 'differs'} by {method} (kernel claims hold by "
                           "equal normal forms only, or integers equal modulo 2^32)")
        d = None   # one digest for both sides where their normal forms are the same as built
        for side, x in (("reference", a), ("optimized", b)):
            if key in digests[side]:
                d = d if same and d else printer.digest(x)
                if digests[side][key] != {"sha256": d}:
                    raise Rejected(f"{where}: {side}: {key}: the certified normal form is not the replay's")
        methods[method] = methods.get(method, 0) + 1
    how = ", ".join(f"{n} by {m}" for m, n in sorted(methods.items()))
    bad, assumed = undefined(conds["reference"], conds["optimized"])
    if bad:
        raise Rejected(f"the optimized kernel's condition {str(bad[1])[:80]} {bad[0][:-1]} 0 is not shown wherever the "
                       "reference is defined (positive by its form, or a condition of the reference's own)")
    covers = coverage(ref)
    fail_if(claim.get("covers") != covers, Rejected, f"the claim covers {claim.get('covers')}; written: {covers}")
    total = sum(math.prod(p["shape"]) for p in params if p["role"] == "output")
    runs = [f"{k}[{a}]" if a == b else f"{k}[{a}..{b}]" for k, v in covers.items() for a, b in v]
    shown = ", ".join(runs[:4]) + (f", ... ({len(runs)} runs)" if len(runs) > 4 else "")
    return "; ".join(notes) + f"; {scope('all' if every else cta, grids[0])}: {len(ref)} of {total} output " \
        f"elements equal over the reals ({shown}; {how})" + (f", wherever the reference is defined ({assumed} of its "
                                                             "partial operations assumed defined)" if assumed else "")
