"""Guesses for a step's output relation, cheapest first (docs/refinement.md, step 3).

*twin*: an earlier step alike up to renaming (``signature``) lends its equations;
*carried*: each input equation carried through the consumers doing what the step does;
*varied*: those with their combining nodes made sums or concats along any dim. Every
guess is checked by value here and proved by the checker before it enters the relation.
``region`` is the engine's ``infer.Region`` (its ``consumers`` of each impl tensor).
"""

from __future__ import annotations

import itertools

import numpy as np

from certificates import terms
from certificates.chain import cone
from certificates.graph import Graph, Node

from .candidates import Index, base, same
from .fast import Terms


def signature(v: Node, ins: list[str], rel: dict, region, spec: Graph, texts: Terms | None = None) -> tuple[tuple, dict]:
    """The step with every impl tensor renamed by first appearance: the operator, its
    inputs' shapes and equations, and the impl nodes doing what the step does on what
    those equations name (``readers``). Steps with equal signatures (layer after layer) are
    alike up to the renaming, so an earlier one's equations, renamed, are the first guess
    (``twin``). Equations enter as their printed form with the names blanked (``Terms``)
    and the canonical numbers of the names; attributes as their ``repr``."""
    texts = texts or Terms()
    canon: dict[str, int] = {}

    def ren(t: str | None) -> int | None:
        if t is None:
            return None
        got = canon.get(t)
        if got is None:
            got = canon[t] = len(canon)
        return got
    parts: list = [v.target, texts.attrs(v), tuple(spec.tensors[u].shape for u in ins)]
    for u in ins:
        eqs = []
        for e in rel[u][:16]:
            _, _, rs, tmpl = texts.info(e)
            eqs.append((tmpl, tuple(ren(x) for x in rs)))
        parts.append(tuple(eqs))
    read = readers(v, rel, region, texts)
    for x in list(canon):
        parts.append(tuple((texts.attrs(n), tuple(ren(i) for i in n.inputs), tuple(ren(o) for o in n.outputs))
                           for n in read(x, None)))
    return tuple(parts), canon


def readers(v: Node, rel: dict, region, texts: Terms | None = None):
    """``read(x, u)``: the impl nodes doing what ``v`` does that read ``x`` (named by input
    ``u``'s equations; None: any input's) and, if ``v`` has several inputs, also read what
    another input's equations name (a rotary table feeds every layer's multiplication;
    only one of them is this step's)."""
    refs = texts.refs if texts is not None else terms.refs
    ins = list(dict.fromkeys(t for t in v.inputs if t is not None))
    named = {u: {x for e in rel.get(u, [])[:16] for x in refs(e)} for u in ins}
    target = v.target
    near_of = getattr(region, "reading", None) or \
        (lambda x, tgt: [n for n in region.consumers.get(x, ()) if n.target == tgt])

    def read(x: str, u: str | None) -> list[Node]:
        near = near_of(x, target)
        if len(ins) == 1 and (u is not None or x in named[ins[0]]):
            return list(near)   # one input: nothing else to read
        owners = [w for w in ins if x in named[w]] if u is None else [u]
        other = set().union(*(named[w] for w in ins if w not in owners))
        if other and len(near) > 8 and hasattr(region, "reading"):   # a tensor many read (a rotary table)
            far = [near_of(y, target) for y in other]
            if sum(map(len, far)) < len(near):
                hit = {id(n): n for ns in far for n in ns if x in n.inputs}
                return sorted(hit.values(), key=lambda n: region.impl.position[n.name])
        return [n for n in near if not other or any(i in other for i in n.inputs)]
    return read


def twin(hit: tuple | None, canon: dict, k: int, region=None, texts: Terms | None = None) -> list[terms.Term]:
    """The equations an earlier alike step found for its ``k``-th output, renamed to this
    step (each impl tensor through the two steps' canonical names), where all names map.
    Names beyond the signature's are found by replaying the earlier step's ``recipe``
    from this step's tensors (``region``: the engine's ``infer.Region``)."""
    if hit is None:
        return []
    theirs, found, steps = hit[0], hit[1], (hit[2] if len(hit) > 2 else None)
    back = {c: t for t, c in canon.items()}
    if steps and region is not None:
        replay(steps, back, region)
    fixed = region.constants if region is not None else ()
    out = []
    for e in list(found.values())[k]:
        try:
            new = terms.rename(e, lambda n: n if n in fixed and n not in theirs else back[theirs[n]])
        except KeyError:
            continue
        if texts is not None:
            _, _, rs, tmpl = texts.info(e)
            texts.make(tmpl, tuple(n if n in fixed and n not in theirs else back[theirs[n]] for n in rs), new)
        out.append(new)
    return out


RECIPE_NODES = 64   # the most impl nodes a recipe replays


def recipe(canon: dict, found: dict, region) -> tuple[dict, list] | None:
    """How the impl tensors of ``found`` (a step's equations) that its signature does not name
    are computed from those it does: the impl nodes between them (``certificates.chain.cone``),
    each as (target, attrs, number of inputs, inputs by canonical name, outputs' new names).
    A tensor computable from nothing (``region.constants``) keeps its name; an impl input
    not named by the step is a free slot. None if the cut is larger than ``RECIPE_NODES``.
    Returns the canonical names extended to the new tensors, and the steps."""
    fixed = region.constants
    want = [x for es in found.values() for e in es for x in terms.refs(e) if x not in canon and x not in fixed]
    if not want:
        return canon, []
    nodes = cone(region.impl, want, set(canon) | fixed)
    if len(nodes) > RECIPE_NODES:
        return None
    names, steps = dict(canon), []
    for n in nodes:
        ins = tuple(None if t is None else ("c", names[t]) if t in names else ("k", t) if t in fixed else ("l", None)
                    for t in n.inputs)
        outs = []
        for t in n.outputs:
            names[t] = outs.append(f"x{len(names)}") or outs[-1]
        steps.append((n.target, n.attrs, ins, tuple(outs)))
    return names, steps


def replay(steps: list, env: dict, region) -> bool:
    """Extend ``env`` (canonical name -> this step's tensor) along a ``recipe``: each step is
    matched to a consumer of a tensor already named doing the same (target, attributes,
    inputs at named slots). False where a step finds no match (the guess is then partial)."""
    for target, attrs, ins, outs in steps:
        known = [(i, env.get(c[1]) if c[0] == "c" else c[1]) for i, c in enumerate(ins) if c is not None
                 and c[0] != "l"]
        if not known or any(t is None for _, t in known):
            return False
        hit = None
        for n in region.consumers.get(known[0][1], ()):
            if n.target == target and len(n.inputs) == len(ins) and n.attrs == attrs and \
                    all(n.inputs[i] == t for i, t in known) and \
                    all((n.inputs[i] is None) == (c is None) for i, c in enumerate(ins)):
                hit = n
                break
        if hit is None:
            return False
        env.update(zip(outs, hit.outputs))
    return True


def valued(guesses: list[terms.Term], index: Index, want) -> list[terms.Term]:
    """The guesses whose value equals ``want`` (a wrong guess can be costly to refute)."""
    out = []
    for g in guesses:
        try:
            if same(np.asarray(terms.evaluate(g, index.values.__getitem__)), want):
                out.append(g)
        except (terms.TermError, ValueError):
            continue
    return out


def renames(v: Node, out: str, rel: dict, region):
    """Each input equation (the 16 shortest: ``_prove`` keeps them sorted) with every impl
    tensor replaced by the output of a consumer doing what ``v`` does, for each name such
    consumers share on every rank (``readers``); with the impl tensors it names, in order."""
    k, read = v.outputs.index(out), readers(v, rel, region)
    for u in dict.fromkeys(t for t in v.inputs if t is not None):
        for e in rel.get(u, [])[:16]:
            leaves = terms.refs(e)
            outs = [{base(n.name)[0]: n.outputs[k] for n in read(x, u) if len(n.outputs) > k} for x in leaves]
            for stem in sorted(set.intersection(*(set(o) for o in outs))) if outs else ():
                names = {x: o[stem] for x, o in zip(leaves, outs)}
                yield terms.rename(e, names.__getitem__), [names[x] for x in leaves]


def carried(v: Node, out: str, rel: dict, region, index: Index, want) -> list[terms.Term]:
    """The first guesses: the renamed equations as they are, where the value equals
    ``want`` (elementwise steps of a layer stack; their proofs are mostly found by key)."""
    fit = {str(g): g for g, leaves in renames(v, out, rel, region)
           if all(index.values[n].ndim == want.ndim for n in leaves)}
    return valued(list(fit.values()), index, want)


def propagated(v: Node, out: str, rel: dict, region, index: Index, want) -> list[terms.Term]:
    """The next guesses: the renamed equations with their combining nodes varied
    (``variants``), permuted or reshaped, kept where the value equals ``want``."""
    guesses = {}
    index.aim(want)
    for g, leaves in renames(v, out, rel, region):
        if not index.total_fits(leaves):
            continue   # every variant sums or moves the same elements: same grand total
        for guess in variants(g, want.ndim):
            try:
                val = np.asarray(terms.evaluate(guess, index.values.__getitem__))
            except (terms.TermError, ValueError, KeyError):
                continue
            hit = index.match([(guess, val)], want)
            if hit:
                guesses.setdefault(str(hit[0]), hit[0])
                break
    return list(guesses.values())


def variants(t: terms.Term, ndim: int, limit: int = 64):
    """``t`` first, then ``t`` with each combining node (concat or sum) made a sum or a
    concat along any dim: the op may move the sharded dim (t, permute, view) or turn a
    shard into a partial sum (a contraction)."""
    yield t
    nodes = []

    def walk(x):
        if isinstance(x, terms.Call) and x.fn in ("concat", "sum"):
            nodes.append(x)
        if isinstance(x, terms.Call):
            for a in x.args:
                walk(a)
    walk(t)
    kinds = [("sum", ())] + [("concat", (("dim", d),)) for d in range(ndim)]
    if not nodes or len(kinds) ** len(nodes) > limit:
        return
    for choice in itertools.product(kinds, repeat=len(nodes)):
        pick = dict(zip(map(id, nodes), choice))

        def build(x):
            if not isinstance(x, terms.Call):
                return x
            fn, kw = pick.get(id(x), (x.fn, x.kw))
            return terms.Call(fn, tuple(build(a) for a in x.args), kw)
        yield build(t)
