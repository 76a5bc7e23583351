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
from certificates.obligations import cone
from certificates.graph import Graph, Node

from .candidates import Index, same
from .copies import Stems
from .fast import Terms


READERS = True   # signatures also name the readers (twins rename through them; a recipe where they do not)


def signature(v: Node, ins: list[str], rel: dict, region, spec: Graph, texts: Terms | None = None) -> tuple[tuple, dict]:
    """The step with every impl tensor renamed by first appearance: the operator, its
    inputs' shapes and equations, and the impl nodes doing what the step does on what
    those equations name (``readers``). Steps with equal signatures (layer after layer) are
    alike up to the renaming, so an earlier one's equations, renamed, are the first guess
    (``twin``). Equations enter as their printed form with the names blanked (``Terms``)
    and the canonical numbers of the names; attributes as their ``repr``."""
    texts = texts or Terms()
    info, attrs = texts.info, texts.attrs
    canon: dict[str, int] = {}
    parts: list = [v.target, attrs(v), tuple(spec.tensors[u].shape for u in ins)]
    named: dict[str, set] = {}
    for u in ins:
        eqs, mine = [], set()
        for e in rel[u][:16]:
            _, _, rs, tmpl = info(e)
            mine.update(rs)
            eqs.append((tmpl, tuple([canon.setdefault(x, len(canon)) for x in rs])))
        parts.append(tuple(eqs))
        named[u] = mine
    if not READERS:
        return tuple(parts), canon
    reading = getattr(region, "reading", None)
    if reading is None or len(ins) != 1:
        read = readers(v, rel, region, texts)
        near_of = lambda x: read(x, None)   # noqa: E731
    else:
        target = v.target
        near_of = lambda x: reading(x, target)   # noqa: E731
    for x in list(canon):
        row = []
        for n in near_of(x):
            row.append((attrs(n), tuple([None if i is None else canon.setdefault(i, len(canon)) for i in n.inputs]),
                        tuple([canon.setdefault(o, len(canon)) for o in n.outputs])))
        parts.append(tuple(row))
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


RECIPE_NODES = 64   # the most impl nodes a recipe replays


class Twin:
    """A step's equations as a pattern for later steps with the same signature.

    Each impl tensor of the equations is either one the signature names (by its canonical
    number), one the ``recipe`` computes from those, or a tensor computable from nothing
    (``region.constants``), which keeps its name. The recipe is the impl nodes between the
    named tensors and the others (``certificates.chain.cone``), each as (target, attributes,
    inputs by canonical name or constant, outputs' new names); an impl input the step does
    not name is a free slot. Without a recipe (a cut larger than ``RECIPE_NODES``), the
    equations naming other tensors are left out."""

    def __init__(self, canon: dict, found: dict, region, texts: Terms) -> None:
        fixed = region.constants
        want = [x for es in found.values() for e in es for x in texts.refs(e) if x not in canon and x not in fixed]
        names, self.steps = dict(canon), []
        nodes = cone(region.impl, want, set(canon) | fixed) if want else []
        if len(nodes) <= RECIPE_NODES:
            for n in nodes:
                ins = [None if t is None else ("c", names[t]) if t in names else ("k", t) if t in fixed
                       else ("l", None) for t in n.inputs]
                outs = []
                for t in n.outputs:
                    names[t] = f"x{len(names)}"
                    outs.append(names[t])
                known = [(i, c[0] == "c", c[1]) for i, c in enumerate(ins) if c is not None and c[0] != "l"]
                self.steps.append((n.target, n.attrs, len(ins), tuple(c is None for c in ins), known, outs))
        self.eqs = []   # per output: (term, template, [(canonical?, canonical name or tensor)])
        for es in found.values():
            row = []
            for e in es:
                _, _, rs, tmpl = texts.info(e)
                slots = [(True, names[x]) if x in names else (False, x) if x in fixed else None for x in rs]
                if None not in slots:
                    plain = all(named and isinstance(c, int) for named, c in slots)
                    row.append((_builder(e), tmpl, slots, plain))
            self.eqs.append(row)

    def guess(self, canon: dict, region, texts: Terms) -> list[list[terms.Term]]:
        """Per output, the equations renamed to a step with canonical names ``canon``: those
        naming only what the signature names if each output has one (the plain twin), else
        all that the recipe replays here."""
        back = {c: t for t, c in canon.items()}
        out = self._rename(back, texts, True)
        if all(out) or not (self.steps or any(not p for row in self.eqs for *_, p in row)):
            return out
        if self.steps:
            replay(self.steps, back, region)
        return self._rename(back, texts, False)

    def _rename(self, back: dict, texts: Terms, plain_only: bool) -> list[list[terms.Term]]:
        out = []
        for row in self.eqs:
            mine = []
            for build, tmpl, slots, plain in row:
                if plain_only and not plain:
                    continue
                names = tuple([back.get(c) if named else c for named, c in slots])
                if None in names:
                    continue
                mine.append(texts.make(tmpl, names, build([texts.ref(x) for x in names])))
            out.append(mine)
        return out


def _builder(t: terms.Term):
    """A function of the leaves (``Ref`` objects, in order of appearance) that builds ``t``
    with those leaves: ``terms.rename`` without walking the term each time."""
    consts: list = []
    count = 0

    def code(x) -> str:
        nonlocal count
        if isinstance(x, terms.Ref):
            count += 1
            return f"n[{count - 1}]"
        consts.append(x.kw)
        kw = len(consts) - 1
        return f"C({x.fn!r}, ({''.join(code(a) + ', ' for a in x.args)}), K[{kw}])"
    return eval(f"lambda n: {code(t)}", {"C": terms.Call, "K": consts})   # noqa: S307 (our own text)


def replay(steps: list, env: dict, region) -> bool:
    """Extend ``env`` (canonical name -> this step's tensor) along a recipe (``Twin``): each
    node is matched to a reader of a tensor already named doing the same (target,
    attributes, inputs at named slots), each impl node to one recipe node at most (two
    gathers of one weight, forward and backward, are two nodes). A node that finds no
    match leaves its outputs unnamed and the rest of the recipe goes on: one rank's missing
    node (no send after the last pipeline stage) must not cost the other ranks' equations.
    False where some node found no match (the guess is then partial)."""
    reading, whole, used = region.reading, True, set()
    for target, attrs, n_in, nones, slots, outs in steps:
        known = []
        for i, named, c in slots:
            t = env.get(c) if named else c
            if t is None:
                break
            known.append((i, t))
        if len(known) != len(slots) or not known:
            whole = False
            continue
        near = reading(known[0][1], target)
        for _, t in known[1:]:
            other = reading(t, target)
            if len(other) < len(near):
                near = other
        for n in near:
            ins = n.inputs
            if len(ins) != n_in or n.attrs != attrs or n.name in used:
                continue
            for i, t in known:
                if ins[i] != t:
                    break
            else:
                if True not in nones or all((x is None) == none for x, none in zip(ins, nones)):
                    env.update(zip(outs, n.outputs))
                    used.add(n.name)
                    break
        else:
            whole = False
    return whole


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


def renames(v: Node, out: str, rel: dict, region, stems: Stems):
    """Each input equation (the 16 shortest: ``_prove`` keeps them sorted) with every impl
    tensor replaced by the output of a consumer doing what ``v`` does, for each stem such
    outputs share on every rank (``readers``; stems are structural, ``copies.py``); with the
    impl tensors it names, in order."""
    k, read = v.outputs.index(out), readers(v, rel, region)
    for u in dict.fromkeys(t for t in v.inputs if t is not None):
        for e in rel.get(u, [])[:16]:
            leaves = terms.refs(e)
            outs = [{stems.of(o): o for n in read(x, u) if (o := _output(n, k, x)) is not None
                     and stems.of(o) is not None} for x in leaves]
            for stem in sorted(set.intersection(*(set(o) for o in outs))) if outs else ():
                names = {x: o[stem] for x, o in zip(leaves, outs)}
                yield terms.rename(e, names.__getitem__), [names[x] for x in leaves]


def _output(n: Node, k: int, x: str) -> str | None:
    """``n``'s ``k``-th output, of a collective the one of the member that gave ``x``."""
    if n.group is not None and not n.op.p2p:
        return n.outputs[n.inputs.index(x)] if x in n.inputs else None
    return n.outputs[k] if len(n.outputs) > k else None


def carried(v: Node, out: str, rel: dict, region, index: Index, want) -> list[terms.Term]:
    """The first guesses: the renamed equations as they are, where the value equals
    ``want`` (elementwise steps of a layer stack; their proofs are mostly found by key)."""
    fit = {str(g): g for g, leaves in renames(v, out, rel, region, index.stems)
           if all(index.values[n].ndim == want.ndim for n in leaves)}
    return valued(list(fit.values()), index, want)


def propagated(v: Node, out: str, rel: dict, region, index: Index, want) -> list[terms.Term]:
    """The next guesses: the renamed equations with their combining nodes varied
    (``variants``), permuted or reshaped, kept where the value equals ``want``."""
    guesses = {}
    index.aim(want)
    for g, leaves in renames(v, out, rel, region, index.stems):
        if terms.factor(g)[0] == 1 and len(set(leaves)) == len(leaves) and not index.total_fits(leaves):
            continue   # every variant sums or moves the same elements: same grand total (no slices)
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
    shard into a partial sum (a contraction). A concat moved to another dim takes the slices
    it joins along with it (the pieces of a merged weight: q, k and v rows of every rank)."""
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

        def build(x, moved=None):
            if not isinstance(x, terms.Call):
                return x
            fn, kw = pick.get(id(x), (x.fn, x.kw))
            if moved is not None and x.fn == "slice" and dict(x.kw)["dim"] == moved[0]:
                kw = tuple((k, moved[1] if k == "dim" else v) for k, v in x.kw)
            was, now = dict(x.kw).get("dim"), dict(kw).get("dim")
            move = (was, now) if x.fn == fn == "concat" and was != now else None
            return terms.Call(fn, tuple(build(a, move) for a in x.args), kw)
        yield build(t)
