"""Per-step bookkeeping without repeated Python work: term texts, and obligations known to hold.

*Terms*: a clean expression's text and its tensor names, computed once per term object
(``text``, ``refs``, ``template``: the text with every name blanked, so that a renamed
term's text is the template filled with the new names).

*Proved*: the checker's ``Chain`` decides each obligation once per canonical key
(``certificates.chain.key``), but computes the cut (``obligation``) and the key as JSON
text for every step. ``Proved.key`` is the same canonical description as a tuple, built
from cached per-node and per-term parts: the same spec node, the same hypotheses, the
same impl cone (cut by the checker's own ``cone``, with the same hypotheses dropped where
the cone recomputes a frontier tensor), the same conclusions, every tensor renamed by
first appearance in the same order, with its shape, dtype and range. Equal tuples give
equal checker keys (each part is the checker's own text or integers), so an obligation
whose tuple was decided before (and held) is the same statement up to renaming, and its
outcomes are reused exactly as the chain's own cache would reuse them. Anything else goes
to the chain.
"""

from __future__ import annotations

from certificates import terms
from certificates.chain import Chain
from certificates.obligations import cone
from certificates.graph import Graph, Node
from certificates.refinement import Outcome, Relation


class Terms:
    """Texts of clean expressions, once per term object (the objects are kept alive here)."""

    def __init__(self, ids: dict[str, int] | None = None) -> None:
        self.ids = ids or {}   # impl tensor -> its place in the canonical order (``order``)
        self._info: dict[int, tuple] = {}
        self._attrs: dict[int, tuple] = {}
        self._refs: dict[str, terms.Ref] = {}

    def attrs(self, n: Node) -> str:
        """``repr`` of a node's sorted attributes, once per node (the node is kept alive here)."""
        got = self._attrs.get(id(n))
        if got is None:
            got = self._attrs[id(n)] = (n, repr(sorted(n.attrs.items())))
        return got[1]

    def info(self, t: terms.Term) -> tuple:
        """``(term, text, refs, template)``."""
        got = self._info.get(id(t))
        if got is None:
            refs = tuple(terms.refs(t))
            got = (t, str(t), refs, str(terms.rename(t, lambda n: "\0")))
            self._info[id(t)] = got
        return got

    def ref(self, name: str) -> terms.Ref:
        """``terms.Ref(name)``, one object per name (terms are immutable)."""
        got = self._refs.get(name)
        if got is None:
            got = self._refs[name] = terms.Ref(name)
        return got

    def order(self, t: terms.Term) -> tuple:
        """A name-free sort key: the text with names blanked, then the named tensors' places (the
        text last, for tensors without a place)."""
        _, text, refs, tmpl = self.info(t)
        return len(tmpl), tmpl, tuple(self.ids.get(r, -1) for r in refs), text

    def text(self, t: terms.Term) -> str:
        return self.info(t)[1]

    def refs(self, t: terms.Term) -> tuple:
        return self.info(t)[2]

    def template(self, t: terms.Term) -> str:
        return self.info(t)[3]

    def make(self, template: str, names: tuple, t: terms.Term) -> terms.Term:
        """Register ``t`` (known to be ``template`` over ``names``) without printing it again."""
        if id(t) not in self._info:
            parts = template.split("\0")
            text = "".join(p + n for p, n in zip(parts, names)) + parts[-1]
            self._info[id(t)] = (t, text, tuple(names), template)
        return t


class Proved:
    """Obligations already decided (and holding), by an exact canonical tuple."""

    def __init__(self, chain: Chain, texts: Terms) -> None:
        self.chain, self.texts = chain, texts
        self.spec, self.impl, self.ranges = chain.spec, chain.impl, chain.ranges
        self.known: dict[tuple, list[Outcome]] = {}
        self._nodes: dict[int, tuple] = {}
        self._shapes: dict[tuple[int, str], tuple] = {}
        self.hits = 0

    def _static(self, g: Graph, n: Node) -> tuple:
        got = self._nodes.get(id(n))
        if got is None:
            ranks = n.group is not None and tuple(g.tensors[t].rank for t in n.inputs if t)
            got = (n, n.target, ranks, self.texts.attrs(n))
            self._nodes[id(n)] = got
        return got[1:]

    def key(self, rel: Relation, node: Node, outputs: Relation) -> tuple | None:
        """The canonical tuple of ``node``'s obligation with conclusions ``outputs``, or None
        where the chain would refuse it (an input with no usable hypothesis). Spec and impl
        tensors are numbered apart, each by first appearance."""
        info, impl = self.texts.info, self.impl
        ins = [t for t in dict.fromkeys(node.inputs) if t is not None]
        rin = {t: rel[t] for t in ins}
        targets = [r for es in outputs.values() for e in es for r in info(e)[2]]
        while True:   # as certificates.chain.obligation
            frontier = {r for es in rin.values() for e in es for r in info(e)[2]}
            nodes = cone(impl, targets, frontier)
            inside = frontier.intersection([t for n in nodes for t in n.outputs])
            if not inside:
                break
            rin = {t: [e for e in es if not inside.intersection(info(e)[2])] for t, es in rin.items()}
        if any(not es for es in rin.values()):
            return None
        snames: dict[str, int] = {}
        inames: dict[str, int] = {}
        s_in = tuple(None if t is None else snames.setdefault(t, len(snames)) for t in node.inputs)
        s_out = tuple(snames.setdefault(t, len(snames)) for t in node.outputs)

        def eqs(r: Relation) -> tuple:
            out = []
            for t, es in r.items():
                for e in es:
                    _, _, rs, tmpl = info(e)
                    out.append((snames[t], tmpl, tuple([inames.setdefault(x, len(inames)) for x in rs])))
                out.append(snames[t])
            return tuple(out)
        body: list = [self._static(self.spec, node), s_in, s_out, eqs(rin)]
        statics, static = self._nodes, self._static
        for n in nodes:
            got = statics.get(id(n))
            body.append((got[1:] if got is not None else static(impl, n),
                         tuple([None if t is None else inames.setdefault(t, len(inames)) for t in n.inputs]),
                         tuple([inames.setdefault(t, len(inames)) for t in n.outputs])))
        body.append(eqs(outputs))
        shapes = [self._shape(self.spec, t) for t in snames]
        produced = None
        for t in inames:
            got = self._shape(impl, t)
            if got[2] is None and impl.tensors[t].is_int:   # a range from the impl's inputs, as the chain gives it
                produced = produced if produced is not None else {t for n in nodes for t in n.outputs}
                if t not in produced:
                    got = got[:2] + (self.ranges.get(t),)
            shapes.append(got)
        return tuple(body), tuple(shapes)

    def _shape(self, g: Graph, t: str) -> tuple:
        """(shape, dtype, declared range) of a tensor, once per tensor."""
        got = self._shapes.get((id(g), t))
        if got is None:
            x = g.tensors[t]
            got = self._shapes[id(g), t] = (x.shape, x.dtype, x.range)
        return got

    def reuse(self, k: tuple | None, outputs: Relation) -> list[Outcome] | None:
        """The outcomes of an obligation with key ``k`` decided before, under these names."""
        hit = self.known.get(k) if k is not None else None
        if hit is None:
            return None
        self.hits += 1
        self.chain.reused += 1
        pairs = [(s, self.texts.text(e)) for s, es in outputs.items() for e in es]
        return [Outcome(s, e, c.elements, dict(c.methods)) for (s, e), c in zip(pairs, hit)]

    def prove(self, rel: Relation, node: Node, outputs: Relation) -> list[Outcome]:
        k = self.key(rel, node, outputs)
        got = self.reuse(k, outputs)
        if got is not None:
            return got
        out = self.chain.prove(rel, node, outputs)
        if k is not None and out and all(o.holds for o in out):
            self.known[k] = out
        return out
