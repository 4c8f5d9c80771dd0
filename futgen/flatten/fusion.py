"""Fusion of SOACs: the rules of the thesis (ch. 7), on futgen's Screma.

A Screma is map, scans and reductions over the same rows, so most of the
thesis's rules are one rule here: two Scremas `A` (first) and `B` over the
same number of rows become one whose lambda runs `A`'s lambda and then
`B`'s, and whose operators are `A`'s and `B`'s.  Where `B` reads rows of
arrays that `A` maps, `B`'s parameters are bound to `A`'s per-row results
instead (vertical fusion), so those arrays need not exist:

    let ys = map f xs                         let (s, ys) =
    let s = reduce (+) 0 ys           =>        screma w (xs) reduce (+) 0
    in (s, ys)                                    map (\\x -> let y = f x in (y, y))

This gives, as the thesis lists them: map-map, map into reduce or scan
(redomap, scanomap), redomap-redomap, a map into a scatter or histogram
(whose lambda then computes the map's values), and **horizontal fusion**
(no arrays pass between `A` and `B`; they share an input array, which is
then read once: `reduce (+) 0 xs` and `reduce max 0 xs` become one Screma
with two reductions).  An array `A` maps that is also used after `B` stays
a result of the fused Screma (a "map-out"), computed once.

The rules never duplicate work:

* `B` may read `A`'s mapped arrays only as input rows; not `A`'s scan or
  reduction results (that would need all of `A` first), and nothing between
  `A` and `B` may use `A`'s results (they are computed at `B`'s place);
* a scan and a reduction never end up in one Screma (flattening makes a
  SegScan or a SegRed, not both);

keep flattening's nested parallelism (a map whose lambda ends in its only
SOAC, a map nest, is flattened with the inner SOAC parallel too; inside
other code that SOAC runs sequentially in each thread):

* two map nests fuse only into one map nest (`map (map g) (map (map f)
  xss)` does; a scan of a scan's rows does not);
* horizontal fusion and fusion keeping a map-out, which save a kernel but
  no array, never put a map nest's inner SOAC into sequential code;
* a vertical fusion that saves an array may, as the thesis's does:
  `map (* 2) (map i32.sum xss)` is one map whose threads sum their rows
  (which is faster depends on the sizes: for versions to weigh, not fusion);

and respect uniqueness:

* nothing between `A` and `B` may consume an array `A` reads, since `A`'s
  work moves down to `B`;
* `B` may not consume an array `A` reads, nor a row that `A` computes (a
  row of `A`'s input, if `A`'s lambda returns it as it is: fusing would
  consume `A`'s input, the thesis's over-consumption);
* in horizontal fusion neither lambda consumes anything.

Fusion works body by body (function bodies, branches, loop bodies, lambdas;
inner ones first), never across an `if` or loop boundary.  In each body the
rules apply in this order until none does: vertical fusion that removes an
array, horizontal fusion, vertical fusion that keeps a map-out (horizontal
first, because it turns two consumers of one array into one, which then
fuses vertically: the thesis's `ys = map g xs; zs = map h xs` example).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from futgen.core import ir
from futgen.flatten.names import (
    free_vars,
    param_types,
    replace_uses,
    substitute,
    use_counts,
)
from futgen.opt.effects import Aliases, consuming_parameters
from futgen.opt.parts import map_bodies
from futgen.opt.rules import stated_size

SOACS = (ir.Screma, ir.Scatter, ir.Hist)


def fuse(prog: ir.Program) -> ir.Program:
    """`prog` with SOACs fused in every body of every function."""
    calls = consuming_parameters(prog)
    return ir.Program(tuple(replace(f, body=fuse_all(f.body, Aliases(f.body, calls)))
                            for f in prog.functions))


def fuse_all(body: ir.Body, aliases: Aliases) -> ir.Body:
    """`body` with SOACs fused in its nested bodies, then in itself."""
    stms = tuple(ir.Stm(s.pat, map_bodies(s.exp, lambda b: fuse_all(b, aliases)))
                 for s in body.stms)
    return fuse_body(ir.Body(stms, body.result), aliases)


def fuse_body(body: ir.Body, aliases: Aliases | None = None) -> ir.Body:
    """`body` with its statements' SOACs fused until no rule applies (the
    lambdas of fused SOACs fused again; other nested bodies as they are).
    `aliases`: what may be consumed, if known for an enclosing function."""
    level = _Level(list(body.stms), body.result, aliases or Aliases(body))
    while level.step():
        pass
    return ir.Body(tuple(level.stms), body.result)


def screma_sections(e: ir.Screma, xs: tuple) -> tuple[tuple, tuple, tuple]:
    """`xs`, aligned with a Screma's results (or its lambda's), cut into the
    scans' part, the reductions' part and the mapped part."""
    s = sum(len(o.nes) for o in e.scans)
    r = s + sum(len(o.nes) for o in e.reds)
    return xs[:s], xs[s:r], xs[r:]


def _nest(body: ir.Body) -> bool:
    """Whether `body`'s only SOAC is a Screma at its end returning exactly
    the body's results: a map with this lambda is a perfect map nest, whose
    inner Screma flattening makes parallel too (its rules 2 and 3)."""
    if not body.stms or sum(isinstance(s.exp, SOACS) for s in body.stms) != 1:
        return False
    last = body.stms[-1]
    return (isinstance(last.exp, ir.Screma)
            and tuple(ir.Var(p.name) for p in last.pat) == body.result)


@dataclass(frozen=True)
class _Pair:
    """Two statements of one body to fuse: `A` at `i`, `B` at `j` (after it);
    `links` are `B`'s input arrays that `A` maps; the fused statement goes
    to position `at` (`i` or `j`)."""

    i: int
    j: int
    links: frozenset[ir.VName]
    at: int


class _Level:
    """The statements of one body while fusion rewrites them."""

    def __init__(self, stms: list[ir.Stm], result: tuple[ir.SubExp, ...], aliases: Aliases):
        self.stms = stms
        self.result = result
        self.aliases = aliases
        self.uses = [free_vars(s) for s in stms]  # what each statement uses, kept aligned

    def step(self) -> bool:
        """Fuse one pair, trying the rules in order; whether one applied."""
        rules: tuple[Callable[[], Iterator[_Pair]], ...] = (
            lambda: self.vertical(keep_outs=False), self.horizontal,
            lambda: self.vertical(keep_outs=True))
        for rule in rules:
            for pair in rule():
                fused = self.fused(pair)
                if fused is not None:
                    gone = pair.j if pair.at == pair.i else pair.i
                    self.stms[pair.at], self.uses[pair.at] = fused, free_vars(fused)
                    del self.stms[gone], self.uses[gone]
                    return True
        return False

    # ------------------------------------------------------------ finding pairs

    def vertical(self, keep_outs: bool) -> Iterator[_Pair]:
        """Each Screma `A` with the first statement `B` using its results, when
        `B` is a SOAC over the same rows that uses only `A`'s mapped arrays,
        as input rows; unless `keep_outs`, none of those is used after `B`."""
        for i, a in enumerate(self.stms):
            if not isinstance(a.exp, ir.Screma):
                continue
            outs = {p.name for p in a.pat}
            j = next((k for k in range(i + 1, len(self.stms)) if outs & self.uses[k]), None)
            if j is None or not self.movable(i, j):
                continue
            b = self.stms[j].exp
            if not isinstance(b, SOACS) or b.w != a.exp.w:
                continue
            links = frozenset(x for x in b.arrs if x in outs)
            counts = use_counts(self.stms[j])
            if (not links <= {p.name for p in screma_sections(a.exp, a.pat)[2]}
                    or any(counts[x] != b.arrs.count(x) for x in outs)):
                continue
            later = self.used_after(j, outs)
            if isinstance(b, ir.Screma):
                fits = bool(links & later) == keep_outs
            else:  # no map-outs: the rows must be used by `b` alone
                fits = not (keep_outs or later or a.exp.scans or a.exp.reds)
            if fits:
                yield _Pair(i, j, links, j)

    def horizontal(self) -> Iterator[_Pair]:
        """Pairs of independent Scremas over the same rows that share an input
        array; the fused one goes where the first is, if the second's
        operands are there, else where the second is."""
        for i, a in enumerate(self.stms):
            if not isinstance(a.exp, ir.Screma):
                continue
            outs = {p.name for p in a.pat}
            for j in range(i + 1, len(self.stms)):
                b = self.stms[j].exp
                if (not isinstance(b, ir.Screma) or b.w != a.exp.w
                        or not set(a.exp.arrs) & set(b.arrs) or outs & self.uses[j]):
                    continue
                if not self.uses[j] & {p.name for s in self.stms[i + 1:j] for p in s.pat}:
                    yield _Pair(i, j, frozenset(), i)
                elif self.movable(i, j):
                    yield _Pair(i, j, frozenset(), j)

    def movable(self, i: int, j: int) -> bool:
        """Whether statement `i` may move down to just before `j`: nothing in
        between uses its results or consumes what it reads."""
        outs = {p.name for p in self.stms[i].pat}
        reads = self.uses[i]
        return not any(outs & self.uses[k] or reads & self.aliases.consumes(self.stms[k].exp)
                       for k in range(i + 1, j))

    def used_after(self, j: int, names: set[ir.VName]) -> set[ir.VName]:
        """Which of `names` the statements after `j`, or the results, use."""
        used = names & free_vars(self.result)
        for k in range(j + 1, len(self.stms)):
            used |= names & self.uses[k]
        return used

    # ------------------------------------------------------------ fusing

    def fused(self, pair: _Pair) -> ir.Stm | None:
        """The statement computing both of `pair`, or None where the fused
        form would break uniqueness or lose parallelism."""
        a, b = self.stms[pair.i], self.stms[pair.j]
        assert isinstance(a.exp, ir.Screma) and isinstance(b.exp, SOACS)
        consumed = self.aliases.consumed
        b_lam = _lam(b.exp)
        linked = {q.name for x, q in zip(b.exp.arrs, b_lam.params) if x in pair.links}
        if self.aliases.consumes(b.exp) & free_vars(a.exp) or linked & consumed:
            return None
        if not pair.links and {q.name for q in (*a.exp.map_lam.params, *b_lam.params)} & consumed:
            return None
        if not isinstance(b.exp, ir.Screma):
            return _into_write(a, b, pair.links)
        drop = pair.links - self.used_after(pair.j, set(pair.links))
        stm = _merge(a, b, pair.links, drop)
        if stm is None:
            return None
        assert isinstance(stm.exp, ir.Screma)
        lam = _known_sizes(stm.exp.map_lam)
        stm = ir.Stm(stm.pat, replace(stm.exp, map_lam=replace(
            lam, body=fuse_body(lam.body, self.aliases))))
        removes_array = bool(pair.links) and drop == pair.links
        return stm if _keeps_nests(stm.exp, a.exp, b.exp, removes_array) else None


def _keeps_nests(fused: ir.Screma, a: ir.Screma, b: ir.Screma, removes_array: bool) -> bool:
    """Whether a fusion may give up flattening's nested parallelism (a map
    nest inside a reduction's lambda, or not last in a map's, runs
    sequentially in each thread).  A fusion that saves writing and reading
    an array may, as the thesis's does, unless it merges two map nests that
    no longer form one; the others (horizontal, keeping map-outs) save only
    a kernel launch, so may not if either was a map nest."""
    nests = [_nest(a.map_lam.body), _nest(b.map_lam.body)]
    if not (all(nests) if removes_array else any(nests)):
        return True
    return not (fused.scans or fused.reds) and _nest(fused.map_lam.body)


def _known_sizes(lam: ir.Lambda) -> ir.Lambda:
    """`lam` without its statements `n = size v d` whose size `v`'s type
    states, `n` replaced by that size: after merging, the inner Scremas of
    both lambdas then have the same width where they read the same rows."""
    types = param_types(lam)
    subst: dict[ir.VName, ir.SubExp] = {}
    stms = []
    for stm in lam.body.stms:
        n = stated_size(stm.exp, types)
        if n is None:
            stms.append(stm)
        else:
            subst[stm.pat[0].name] = replace_uses(n, subst)
    return replace_uses(replace(lam, body=ir.Body(tuple(stms), lam.body.result)), subst)


def _lam(e: ir.Screma | ir.Scatter | ir.Hist) -> ir.Lambda:
    return e.map_lam if isinstance(e, ir.Screma) else e.lam


def _link(a: ir.Stm, b_arrs: tuple[ir.VName, ...], b_lam: ir.Lambda,
          links: frozenset[ir.VName]) -> tuple[tuple, tuple, ir.Body]:
    """`B`'s input arrays and parameters that stay, and `B`'s lambda body
    reading `A`'s per-row results instead of the others (substituted; bound
    by a copy where the declared types differ)."""
    assert isinstance(a.exp, ir.Screma)
    a_lam = a.exp.map_lam
    index = {p.name: k for k, p in enumerate(a.pat)}
    arrs, params, copies, subst = [], [], [], {}
    for x, q in zip(b_arrs, b_lam.params):
        if x not in links:
            arrs.append(x)
            params.append(q)
        elif a_lam.ret[index[x]] == q.type:
            subst[q.name] = a_lam.body.result[index[x]]
        else:
            copies.append(ir.Stm((q,), ir.SubExpOp(a_lam.body.result[index[x]])))
    body = replace_uses(b_lam.body, subst)
    return tuple(arrs), tuple(params), ir.Body((*copies, *body.stms), body.result)


def _into_write(a: ir.Stm, b: ir.Stm, links: frozenset[ir.VName]) -> ir.Stm:
    """Scatter or Hist `b` computing the rows of map `a` in its own lambda."""
    assert isinstance(a.exp, ir.Screma) and isinstance(b.exp, ir.Scatter | ir.Hist)
    a_lam, b_lam = a.exp.map_lam, b.exp.lam
    arrs, params, b_body = _link(a, b.exp.arrs, b_lam, links)
    lam = ir.Lambda((*params, *a_lam.params),
                    ir.Body(a_lam.body.stms + b_body.stms, b_body.result), b_lam.ret)
    arrs, lam = _dedupe(arrs + a.exp.arrs, lam)
    return ir.Stm(b.pat, replace(b.exp, arrs=arrs, lam=lam))


def _merge(a: ir.Stm, b: ir.Stm, links: frozenset[ir.VName],
           drop: frozenset[ir.VName]) -> ir.Stm | None:
    """One Screma computing Scremas `a` and `b`: `a`'s operators and `b`'s,
    `b`'s mapped arrays and `a`'s but those in `drop`; None if that would
    mix scans and reductions."""
    ea, eb = a.exp, b.exp
    assert isinstance(ea, ir.Screma) and isinstance(eb, ir.Screma)
    scans, reds = ea.scans + eb.scans, ea.reds + eb.reds
    if scans and reds:
        return None
    arrs, params, b_body = _link(a, eb.arrs, eb.map_lam, links)
    kept = [k for k, p in enumerate(screma_sections(ea, a.pat)[2]) if p.name not in drop]

    def order(xa: tuple, xb: tuple) -> tuple:
        """`a`'s and `b`'s parts in the fused Screma's order (each part `a`'s
        first, as in the program: results keep their order, which keeps
        `map (.0) r` and `map (.1) r` fused into `r` a map nest)."""
        (sa, ra, ma), (sb, rb, mb) = screma_sections(ea, xa), screma_sections(eb, xb)
        return (*sa, *sb, *ra, *rb, *(ma[k] for k in kept), *mb)

    lam = ir.Lambda((*params, *ea.map_lam.params),
                    ir.Body(ea.map_lam.body.stms + b_body.stms,
                            order(ea.map_lam.body.result, b_body.result)),
                    order(ea.map_lam.ret, eb.map_lam.ret))
    arrs, lam = _dedupe(arrs + ea.arrs, lam)
    return ir.Stm(order(a.pat, b.pat), ir.Screma(ea.w, arrs, scans, reds, lam))


def _dedupe(arrs: tuple[ir.VName, ...], lam: ir.Lambda) -> tuple[tuple[ir.VName, ...], ir.Lambda]:
    """One parameter per input array: a second parameter for the same array
    (of the same type) is replaced by the first."""
    first: dict[ir.VName, ir.Param] = {}
    subst: dict[ir.VName, ir.VName] = {}
    kept = []
    for x, q in zip(arrs, lam.params):
        if x in first and first[x].type == q.type:
            subst[q.name] = first[x].name
        else:
            first.setdefault(x, q)
            kept.append((x, q))
    if not subst:
        return arrs, lam
    lam = replace(lam, params=tuple(q for _, q in kept))
    return tuple(x for x, _ in kept), substitute(lam, subst)
