"""Rewrites that give flattening a second chance at a Screma it could not map.

* `split`: a redomap (or scanomap) whose operator cannot run in a kernel is
  split back into its map, which may still become a SegMap, and the
  operator over the map's results:
  `screma w xs (ops) (map f)` = `let ys = map f xs in screma w ys (ops) (map id)`.
* `transpose_reduce`: a reduction whose operator is a map of a scalar
  operator over rows (`reduce (map2 (+)) (replicate m 0) xss`, the
  vectorised reduction of OptionPricing and many Monte Carlo codes) is a
  reduction of each column: `map (reduce (+) 0) (transpose xss)` (Futhark's
  interchange of a reduce with a map operator, thesis ch. 6).  The rows of
  the transposed array are contiguous, so the segmented reduction reads
  coalesced memory.  The neutral row must be a `replicate` of a scalar,
  which is then the scalar operator's neutral element.
* `map_loop`: incremental flattening's rule G7 (with G6 for the statements
  around the loop): a map whose body is a loop becomes a loop of a map.
* `distribute`: rule G6, a map over several parallel statements becomes
  one map per statement.
* `map_if`: rule G8, a map whose body ends in an `if` on a condition the
  map's points share becomes an `if` of two maps.
* `split_parallel_redomap`: rule G9's second version, a redomap whose map
  function has parallel work (at the top, or ending a map's body) split
  into its map and its reduction, which are flattened on their own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from futgen.core import ir
from futgen.core.internalise import _constant
from futgen.flatten.fusion import fuse_body
from futgen.flatten.names import NameSource, binders, free_vars, substitute
from futgen.opt.effects import Aliases, can_fail


def split(stm: ir.Stm, names: NameSource) -> list[ir.Stm] | None:
    """The map part and the operator part of a Screma with operators and a
    map that does more than pass its rows on; None otherwise."""
    e = stm.exp
    assert isinstance(e, ir.Screma)
    lam = e.map_lam
    if not (e.scans or e.reds) or _is_identity(lam):
        return None
    n_ops = sum(len(o.nes) for o in (*e.scans, *e.reds))
    op_inputs = tuple(ir.Param(names.fresh("mapped"), ir.ArrayT(_elem(t), (e.w, *_shape(t))))
                      for t in lam.ret[:n_ops])
    map_outs = stm.pat[n_ops:]
    map_stm = ir.Stm((*op_inputs, *map_outs), ir.Screma(e.w, e.arrs, (), (), lam))
    rows = tuple(ir.Param(names.fresh("row"), t) for t in lam.ret[:n_ops])
    identity = ir.Lambda(rows, ir.Body((), tuple(ir.Var(p.name) for p in rows)), lam.ret[:n_ops])
    op_stm = ir.Stm(stm.pat[:n_ops], ir.Screma(e.w, tuple(p.name for p in op_inputs),
                                               e.scans, e.reds, identity))
    return [map_stm, op_stm]


def split_parallel_redomap(stm: ir.Stm, names: NameSource) -> ir.Body | None:
    """Rule G9's second version of `stm`: a redomap whose map function has
    parallel work, or a map whose body ends in one (perhaps through further
    maps), with that redomap split into its map and its reduction (`split`),
    so that the map's inner parallelism can be flattened in turn: host code
    of the two parts, or of the map distributed over them (G6, unfused);
    None if `stm` is no such Screma or the map cannot be distributed.  The
    names the parts bind are fresh: the other versions keep `stm`'s."""
    e = stm.exp
    assert isinstance(e, ir.Screma)
    pat = tuple(ir.Param(names.fresh(p.name.base), p.type) for p in stm.pat)
    stm = ir.Stm(pat, replace(e, map_lam=names.renamed(e.map_lam),
                              reds=tuple(replace(r, lam=names.renamed(r.lam)) for r in e.reds)))
    split_stm = _split_last_redomap(stm, names)
    if split_stm is None:
        return None
    if isinstance(split_stm, list):
        return _bound(split_stm, stm.pat)
    return distribute(split_stm, names, fused=False)


def _split_last_redomap(stm: ir.Stm, names: NameSource) -> list[ir.Stm] | ir.Stm | None:
    """A redomap with parallel work in its map function as its two parts;
    a map whose body ends in one as the map with those parts in its body."""
    e = stm.exp
    assert isinstance(e, ir.Screma)
    if e.scans:
        return None
    if e.reds:
        if not any(_parallel(s.exp) for s in e.map_lam.body.stms):
            return None
        return split(stm, names)
    body = fuse_body(e.map_lam.body)
    if not body.stms or not isinstance(body.stms[-1].exp, ir.Screma):
        return None
    inner = _split_last_redomap(body.stms[-1], names)
    if inner is None:
        return None
    parts = inner if isinstance(inner, list) else [inner]
    lam = replace(e.map_lam, body=ir.Body((*body.stms[:-1], *parts), body.result))
    return replace(stm, exp=replace(e, map_lam=lam))


def transpose_reduce(stm: ir.Stm, defs: Mapping[ir.VName, ir.Exp],
                     names: NameSource) -> list[ir.Stm] | None:
    """`reduce (map op) (replicate m ne) xss` as a map of row reductions over
    `transpose xss`; None when `stm` is not such a reduction."""
    e = stm.exp
    assert isinstance(e, ir.Screma)
    if e.scans or len(e.reds) != 1 or len(e.arrs) != 1 or not _is_identity(e.map_lam):
        return None
    red = e.reds[0]
    inner = _row_operator(red.lam)
    (ne,) = red.nes
    rep = defs.get(ne.name) if isinstance(ne, ir.Var) else None
    if inner is None or not isinstance(rep, ir.Replicate) or len(rep.shape) != 1:
        return None
    (out,) = stm.pat
    t = out.type
    assert isinstance(t, ir.ArrayT)
    m = rep.shape[0]
    cols = ir.Param(names.fresh("cols"), ir.ArrayT(t.elem, (m, e.w)))
    col = ir.Param(names.fresh("col"), ir.ArrayT(t.elem, (e.w,)))
    acc = ir.Param(names.fresh("colsum"), ir.Prim(t.elem))
    x = ir.Param(names.fresh("x"), ir.Prim(t.elem))
    reduce_col = ir.Screma(e.w, (col.name,), (), (ir.Reduce(inner, (rep.value,), red.comm),),
                           ir.Lambda((x,), ir.Body((), (ir.Var(x.name),)), (x.type,)))
    per_col = ir.Lambda((col,), ir.Body((ir.Stm((acc,), reduce_col),), (ir.Var(acc.name),)),
                        (acc.type,))
    return [ir.Stm((cols,), ir.Rearrange(e.arrs[0], (1, 0))),
            ir.Stm(stm.pat, ir.Screma(m, (cols.name,), (), (), per_col))]


def _row_operator(lam: ir.Lambda) -> ir.Lambda | None:
    """`op` when `lam` is `\\xs ys -> map op xs ys` on one-dimensional rows."""
    if len(lam.params) != 2 or not lam.body.stms:
        return None
    last = lam.body.stms[-1]
    e = last.exp
    if (isinstance(e, ir.Screma) and not e.scans and not e.reds
            and e.arrs == (lam.params[0].name, lam.params[1].name)
            and lam.body.result == tuple(ir.Var(p.name) for p in last.pat)
            and all(isinstance(p.type, ir.Prim) for p in e.map_lam.params)
            and all(isinstance(s.exp, ir.Assert | ir.CmpOp | ir.BinOp | ir.ArraySize)
                    for s in lam.body.stms[:-1])):
        return e.map_lam
    return None


def _is_identity(lam: ir.Lambda) -> bool:
    return not lam.body.stms and lam.body.result == tuple(ir.Var(p.name) for p in lam.params)


def _elem(t: ir.Type) -> str:
    return t.name if isinstance(t, ir.Prim) else t.elem  # type: ignore[union-attr]


def _shape(t: ir.Type) -> tuple[ir.SubExp | None, ...]:
    return t.shape if isinstance(t, ir.ArrayT) else ()


def map_loop(stm: ir.Stm, names: NameSource) -> ir.Body | None:
    """Rule G7 of incremental flattening, with G6's distribution of what
    comes before and after the loop (array expansion):

        map (\\x -> let y = f x
                    let r = loop (p = g y) for i < n do b
                    in h r y) xs
        = let ys = map (\\x -> f x) xs
          let rs = loop (ps = map g ys) for i < n do map (\\p x y -> b) ps xs ys
          in map (\\r y -> h r y) rs ys

    so the map's parallelism moves into the loop, where the loop body's
    inner SOACs can be flattened with it.  The loop is the last one in the
    map's body; its bound must not depend on the map's point.  Returns host
    code whose result is `stm`'s, or None."""
    e = stm.exp
    assert isinstance(e, ir.Screma)
    if e.scans or e.reds:
        return None
    lam: ir.Lambda = names.renamed(e.map_lam)
    if not any(isinstance(s.exp, ir.Loop) for s in lam.body.stms):
        return None
    out: list[ir.Stm] = []
    lam = _hoisted(lam, out)
    pre, last, post = _around_last_loop(lam.body)
    loop = last.exp
    assert isinstance(loop, ir.Loop)
    inside = {p.name for p in lam.params} | set(binders(tuple(pre)))
    if not isinstance(loop.form, ir.ForLoop):
        return None
    # Sizes the body computes from sizes outside it (the bound, the shapes
    # of the loop's arrays), computed again on the host.
    sizes = _outer_sizes(list(pre), _rows(lam, e.arrs), _types(lam), inside, out, names)
    if sizes:
        lam = _sized(lam, sizes)
        pre, last, post = _around_last_loop(lam.body)
        loop = last.exp
        assert isinstance(loop, ir.Loop)
        inside -= set(sizes)
    if free_vars(loop.form.bound) & inside or any(
            free_vars(p.type) & inside for p, _ in loop.merge):
        return None
    types = {p.name: substitute(p.type, sizes)
             for p in (*lam.params, *(q for s in pre for q in s.pat))}
    tail = ir.Body(tuple(post), lam.body.result)
    used = free_vars(loop.body) & inside
    later = free_vars(tail) & inside  # what the statements after the loop need
    inits = {init.name for _, init in loop.merge if isinstance(init, ir.Var)} & inside
    arrays = _rows(lam, e.arrs)  # a value of the point -> the array of all points
    expanded = sorted((used | later | inits) - set(arrays), key=lambda v: v.tag)
    if any(free_vars(types[v]) & inside for v in expanded):
        return None
    if expanded:
        pats = tuple(ir.Param(names.fresh(v.base), _expand(types[v], e.w)) for v in expanded)
        body = ir.Body(tuple(pre), tuple(ir.Var(v) for v in expanded))
        out.append(ir.Stm(pats, ir.Screma(e.w, e.arrs, (), (), ir.Lambda(
            lam.params, body, tuple(types[v] for v in expanded)))))
        arrays.update((v, p.name) for v, p in zip(expanded, pats))
    merge = []
    for p, init in loop.merge:
        acc = ir.Param(names.fresh(p.name.base), _expand(p.type, e.w))
        if isinstance(init, ir.Var) and init.name in arrays:
            start: ir.SubExp = ir.Var(arrays[init.name])
        else:  # the same initial value at every point
            rep = ir.Param(names.fresh(f"{p.name.base}_init"), acc.type)
            out.append(ir.Stm((rep,), ir.Replicate((e.w,), init)))
            start = ir.Var(rep.name)
        merge.append((acc, start))
    res = tuple(ir.Param(names.fresh(acc.name.base), acc.type) for acc, _ in merge)
    rows = [(p, acc.name) for (p, _), (acc, _) in zip(loop.merge, merge)]
    inner = _map_of(e.w, rows, used, types, arrays, loop.body,
                    tuple(p.type for p, _ in loop.merge), names)
    new_loop = ir.Loop(tuple(merge), loop.form, ir.Body(
        (ir.Stm(res, inner),), tuple(ir.Var(p.name) for p in res)))
    pat = tuple(ir.Param(names.fresh(p.name.base), p.type) for p in stm.pat)
    if not post and lam.body.result == tuple(ir.Var(p.name) for p in last.pat):
        return _bound(out + [ir.Stm(pat, new_loop)], pat)
    after = tuple(ir.Param(names.fresh(p.name.base), acc.type) for p, (acc, _) in
                  zip(last.pat, merge))
    rows = [(p, q.name) for p, q in zip(last.pat, after)]
    finish = _map_of(e.w, rows, later, types, arrays, tail, lam.ret, names)
    return _bound(out + [ir.Stm(after, new_loop), ir.Stm(pat, finish)], pat)


def _around_last_loop(body: ir.Body) -> tuple[tuple[ir.Stm, ...], ir.Stm, tuple[ir.Stm, ...]]:
    """The statements before the last loop of `body`, that loop's, and those after."""
    k = max(k for k, s in enumerate(body.stms) if isinstance(s.exp, ir.Loop))
    return body.stms[:k], body.stms[k], body.stms[k + 1:]


def _outer_sizes(pre: list[ir.Stm], rows: Mapping[ir.VName, ir.VName],
                 types: Mapping[ir.VName, ir.Type], inside: set[ir.VName],
                 out: list[ir.Stm], names: NameSource) -> dict[ir.VName, ir.VName]:
    """The i64 values statements `pre` of a map's body bind that are sizes
    known outside the map, each bound again by a host statement in `out`:
    name inside -> name outside.
    `rows` maps a value of the map's point to the array of all points it
    is a row of (a parameter's array, or a distributed part's result).
    Such sizes are the sizes types name, a size of a row (every row of an
    array has the same shape), and sums, products and conversions of those."""
    found: dict[ir.VName, ir.VName] = {}
    aliases = {s.pat[0].name: s.exp.se.name for s in pre  # type: ignore[union-attr]
               if isinstance(s.exp, ir.SubExpOp) and isinstance(s.exp.se, ir.Var)}

    def outside(se: ir.SubExp | None) -> ir.SubExp | None:
        if isinstance(se, ir.Var) and se.name in inside:
            return ir.Var(found[se.name]) if se.name in found else None
        return se

    def dim(arr: ir.VName, d: int) -> ir.Exp | None:
        """Dimension `d` of `arr` as its type, an alias's type, or the
        array of rows it is one of says."""
        while True:
            t = types.get(arr)
            if isinstance(t, ir.ArrayT) and (x := outside(t.shape[d])) is not None:
                return ir.SubExpOp(x)
            if arr in rows:
                return ir.ArraySize(rows[arr], d + 1)
            if arr not in aliases:
                return None
            arr = aliases[arr]

    for stm in pre:
        if len(stm.pat) != 1 or stm.pat[0].type != ir.Prim("i64"):
            continue
        match stm.exp:
            case ir.SubExpOp(se) | ir.ConvOp(_, _, se):
                x = outside(se)
                e: ir.Exp | None = None if x is None else (
                    ir.SubExpOp(x) if isinstance(stm.exp, ir.SubExpOp) else replace(stm.exp, x=x))
            case ir.ArraySize(arr, d):
                e = dim(arr, d)
            case ir.BinOp("+" | "-" | "*" | "max" | "min", "i64", a, b):
                xa, xb = outside(a), outside(b)
                e = replace(stm.exp, x=xa, y=xb) if xa is not None and xb is not None else None
            case _:
                e = None
        if e is not None:
            v = names.fresh(stm.pat[0].name.base)
            out.append(ir.Stm((ir.Param(v, ir.Prim("i64")),), e))
            found[stm.pat[0].name] = v
    return found


def _map_of(w: ir.SubExp, rows: list[tuple[ir.Param, ir.VName]], used: set[ir.VName],
            types: Mapping[ir.VName, ir.Type], arrays: Mapping[ir.VName, ir.VName],
            body: ir.Body, ret: tuple[ir.Type, ...], names: NameSource) -> ir.Screma:
    """`map (\\rows point_values -> body)` over the arrays of `rows` and of the
    values of the map's point that `body` uses (renamed: the distributed
    maps bind them too)."""
    point = {v: names.fresh(v.base) for v in sorted(used, key=lambda v: v.tag) if v in arrays}
    inputs = [*rows, *((ir.Param(new, types[v]), arrays[v]) for v, new in point.items())]
    return ir.Screma(w, tuple(a for _, a in inputs), (), (), ir.Lambda(
        tuple(p for p, _ in inputs), substitute(body, point), ret))


def _expand(t: ir.Type, w: ir.SubExp) -> ir.ArrayT:
    """The type of an array of `w` values of type `t`."""
    return ir.ArrayT(_elem(t), (w, *_shape(t)))


def distribute(stm: ir.Stm, names: NameSource, fused: bool = True,
               ranges: Mapping[ir.VName, ir.SubExp] | None = None) -> ir.Body | None:
    """Rule G6 of incremental flattening (map distribution, with array
    expansion): a map whose body has two or more statements with parallel
    work is split into one map per such statement, each with the sequential
    statements before it,

        map (\\x -> let a = f x in let b = g a x in h b) xs
        = let as = map f xs
          let bs = map (\\a x -> g a x) as xs
          in map h bs

    so that each part can be flattened on its own.  Values one part needs
    from another pass between them as arrays of all the map's points; their
    shapes must be known outside the map.  Statements that do not depend on
    the point run once, on the host; a transposition, copy or replication
    of a point's value is one of the array of all points there (Futhark's
    distribution does the same), never a loop in a thread per point; and
    a result an earlier part made is that part's array.  A part of a few
    cheap scalar statements (`_cheap`: arithmetic and element reads) is not
    a map of its own: each later part that uses its values computes them
    again (a copy of its statements), which costs each of their threads a
    few operations and saves a kernel launch and an array per point.  The
    body is fused first (`fused`), unless a rewrite has just split it on
    purpose.  `ranges`: loop counters around `stm` and their bounds, which
    prove reads in bounds (`can_fail`).  Returns host code whose result is
    `stm`'s, or None."""
    e = stm.exp
    assert isinstance(e, ir.Screma)
    if e.scans or e.reds:
        return None
    lam: ir.Lambda = names.renamed(e.map_lam)
    out: list[ir.Stm] = []
    # Hoisted before fusing: fused into a part, invariant work would run
    # again at every point (`updateParams` at every strike of LocVolCalib).
    lam = _hoisted(lam, out)
    body = fuse_body(lam.body) if fused else lam.body
    lam = replace(lam, body=_distributed_nest(body, names, fused))
    if len(_parts(lam.body.stms)) < 2:
        return None
    lam = _hoisted(lam, out)
    inside = {p.name for p in lam.params} | set(binders(lam.body.stms))
    raw_types = _types(lam)
    arrays = _rows(lam, e.arrs)  # a value of the point -> the array of all points
    sizes: dict[ir.VName, ir.VName] = {}  # sizes the host computes again

    def typ(v: ir.VName) -> ir.Type:
        # A size only the body knows is left open (`[?]`) in the arrays of all points.
        return _open(substitute(raw_types[v], sizes), inside)

    groups = _parts(lam.body.stms)
    carried: list[ir.Stm] = []  # a part whose values nothing later uses joins the next
    shared: list[ir.Stm] = []  # cheap parts, computed again where later parts use them
    for k, group in enumerate(groups):
        group = [substitute(s, sizes) for s in (*carried, *group)]
        carried = []
        last = k == len(groups) - 1
        values = lam.body.result  # the map's, which the last part computes
        if not last and _cheap(group, groups[k + 1:], values,
                               lambda e: can_fail(e, raw_types, ranges)):
            shared += group
            continue
        if shared:
            group, recomputed = _recomputed(shared, group, values if last else (), names)
            values = recomputed if last else values
            inside |= set(binders(tuple(group)))  # the copies: values of the point
        new = _outer_sizes(group, arrays, {v: typ(v) for v in raw_types}, inside, out, names)
        if new:
            sizes.update(new)
            inside -= set(new)
            group = [substitute(s, sizes) for s in group if not {p.name for p in s.pat} & set(new)]
        rest = substitute(ir.Body(tuple(s for g in groups[k + 1:] for s in g), values), sizes)
        if not group and not last:
            continue
        host = _manifested(group, arrays, typ, e.w, names)
        if host:
            here = group[0].pat[0].name
            alone = not last or rest.result == (ir.Var(here),)
            # Else, as the last part, taken where the map's other values
            # come from earlier parts: all are then passed on.
            if alone or all(isinstance(r, ir.Var) and (r.name in arrays or r.name == here)
                            for r in rest.result):
                out += host
                arrays[here] = host[-1].pat[0].name
                if alone:
                    result = host[-1].pat
                    continue
                group = []
        if last:
            result = tuple(ir.Param(names.fresh(p.name.base), p.type) for p in stm.pat)
            # A value an earlier part made is already an array of all points.
            passed = {p.name: arrays[r.name] for p, r in zip(result, rest.result)
                      if isinstance(r, ir.Var) and r.name in arrays}
            if len(passed) == len(result) and group:
                passed = {}  # the part's statements may fail: they still run
            out += [ir.Stm((p,), ir.SubExpOp(ir.Var(passed[p.name])))
                    for p in result if p.name in passed]
            made = [(p, r, t) for p, r, t in zip(result, rest.result, lam.ret)
                    if p.name not in passed]
            if not made:
                break
            pat = tuple(p for p, _, _ in made)
            body, ret = ir.Body(tuple(group), tuple(r for _, r, _ in made)), tuple(
                t for _, _, t in made)
        else:
            later = sorted(set(binders(tuple(group))) & free_vars(rest), key=lambda v: v.tag)
            if _parallel(group[-1].exp):  # all it binds, in order: the map then nests
                later = [p.name for p in group[-1].pat]
            if not later:
                carried = group
                continue
            body, ret = ir.Body(tuple(group), tuple(ir.Var(v) for v in later)), tuple(
                typ(v) for v in later)
            pat = tuple(ir.Param(names.fresh(v.base), _expand(typ(v), e.w)) for v in later)
            arrays.update((v, p.name) for v, p in zip(later, pat))
        used = free_vars(body) & inside
        types = {v: typ(v) for v in used}
        out.append(ir.Stm(pat, _map_of(e.w, [], used, types, arrays, body, ret, names)))
    return _bound(out, result)


_CHEAP_STMS = 12  # statements a part may have for later parts to compute it again


def _cheap(group: list[ir.Stm], later: list[list[ir.Stm]],
           result: tuple[ir.SubExp, ...], may_fail: Callable[[ir.Exp], bool]) -> bool:
    """Whether sequential part `group` is a few scalar operations and
    element reads that the `later` parts (then the map's `result`) may
    compute again where they use its values: nothing it binds is an array;
    each statement that may fail has a value something later uses (so that
    a copy of it still runs: one nothing uses would vanish) and no SOAC
    part uses it (a copy in a SOAC's function would run only where the SOAC
    has points); none is a size in a later type (the host must know
    those); and each later part that
    uses them is a SOAC, which nests them into its kernels, or sequential
    (a loop or `if` of parallel work is flattened by rewrites that would
    distribute them again; a transposition, copy or replication the host
    makes for all points)."""
    if not group or len(group) > _CHEAP_STMS:
        return False
    bound = set(binders(tuple(group)))
    rest = ir.Body(tuple(s for g in later for s in g), result)
    if bound & (free_vars(rest) - free_vars(rest, types=False)):
        return False
    users = [g for g in later if free_vars(ir.Body(tuple(g), ())) & bound]
    if any(_parallel(g[-1].exp) and not isinstance(g[-1].exp, ir.Screma)
           or isinstance(g[-1].exp, ir.Rearrange | ir.Copy | ir.Replicate) for g in users):
        return False  # the host makes those for all points at once (`_manifested`)
    scalar = (ir.BinOp, ir.UnOp, ir.CmpOp, ir.ConvOp, ir.SubExpOp)
    if not all(len(s.pat) == 1 and isinstance(s.pat[0].type, ir.Prim) and (
            isinstance(s.exp, scalar) or isinstance(s.exp, ir.Index)
            and all(isinstance(d, ir.DimFix) for d in s.exp.slice)) for s in group):
        return False
    failing = {s.pat[0].name for s in group if may_fail(s.exp)}
    if not failing:
        return True
    # A copy in a SOAC's map function runs only where the SOAC has points: a
    # statement that may fail must still run once per point.
    live = free_vars(rest)
    for s in reversed(group):
        if s.pat[0].name in live:
            live |= free_vars(s.exp)
    return failing <= live and not any(isinstance(g[-1].exp, ir.Screma) for g in users)


def _recomputed(shared: list[ir.Stm], group: list[ir.Stm], result: tuple[ir.SubExp, ...],
                names: NameSource) -> tuple[list[ir.Stm], tuple[ir.SubExp, ...]]:
    """`group` (and, for the last part, the map's `result`) with a renamed
    copy of the `shared` statements whose values they use (directly or
    through one another): where only the map function of the part's SOAC
    uses them, at the start of the innermost function of its map nest
    (`_into_nest`: the nest stays perfect, so its versions are the same),
    else first in the part."""
    copies, subst = _renamed_copies(shared, free_vars(ir.Body(tuple(group), result)), names)
    if not copies:
        return group, result
    group = [substitute(s, subst) for s in group]
    result = tuple(substitute(r, subst) for r in result)
    *before, soac = group
    outside = free_vars(ir.Body(tuple(before), result)) | _outside_map_function(soac.exp)
    if isinstance(soac.exp, ir.Screma) and not outside & set(subst.values()):
        return [*before, _into_nest(copies, soac)], result
    return [*copies, *group], result


def _renamed_copies(stms: list[ir.Stm], need: set[ir.VName],
                    names: NameSource) -> tuple[list[ir.Stm], dict[ir.VName, ir.VName]]:
    """Copies, in order and with their results renamed, of the statements of
    `stms` whose values `need` names (directly or through one another), and
    the renaming."""
    need = set(need)
    chosen: list[ir.Stm] = []
    for s in reversed(stms):
        if {p.name for p in s.pat} & need:
            need |= free_vars(s.exp)
            chosen.append(s)
    subst = {p.name: names.fresh(p.name.base) for s in chosen for p in s.pat}
    return [substitute(s, subst) for s in reversed(chosen)], subst


def _nests(e: ir.Screma) -> bool:
    """Whether `e` is a map whose function is just another Screma."""
    body = e.map_lam.body
    return (not e.scans and not e.reds and len(body.stms) == 1
            and isinstance(body.stms[0].exp, ir.Screma)
            and tuple(ir.Var(p.name) for p in body.stms[0].pat) == body.result)


def _outside_map_function(e: ir.Exp, types: bool = False) -> set[ir.VName]:
    """The names `e` uses outside a Screma's map function (its width,
    inputs, neutral elements and operators; with `types`, the sizes in the
    types the function returns too); all it uses otherwise."""
    if isinstance(e, ir.Screma):
        return free_vars((e.w, e.arrs, e.scans, e.reds)) | (
            free_vars(e.map_lam.ret) if types else set())
    return free_vars(e)


def _into_nest(copies: list[ir.Stm], stm: ir.Stm) -> ir.Stm:
    """Screma `stm` with `copies` first in the innermost map function of
    its perfect map nest that only inner map functions use them in."""
    e = stm.exp
    assert isinstance(e, ir.Screma)
    body = e.map_lam.body
    if _nests(e) and not _outside_map_function(body.stms[0].exp) & set(binders(tuple(copies))):
        stms: tuple[ir.Stm, ...] = (_into_nest(copies, body.stms[0]),)
    else:
        stms = (*copies, *body.stms)
    lam = replace(e.map_lam, body=replace(body, stms=stms))
    return replace(stm, exp=replace(e, map_lam=lam))


def _bound(stms: list[ir.Stm], pat: tuple[ir.Param, ...]) -> ir.Body:
    """Host code `stms` whose result is the values `pat` names."""
    return ir.Body(tuple(stms), tuple(ir.Var(p.name) for p in pat))


def _rows(lam: ir.Lambda, arrs: tuple[ir.VName, ...]) -> dict[ir.VName, ir.VName]:
    """Each parameter of map lambda `lam` -> the array `arrs` it is a row of."""
    return {p.name: a for p, a in zip(lam.params, arrs)}


def _types(lam: ir.Lambda) -> dict[ir.VName, ir.Type]:
    """The type of each parameter of `lam` and of each name its body binds
    at the top level."""
    return {p.name: p.type for p in (*lam.params, *(q for s in lam.body.stms for q in s.pat))}


def map_if(stm: ir.Stm, names: NameSource) -> ir.Body | None:
    """Rule G8 of incremental flattening:

        map (\\x -> let y = f x in if c then b1 else b2) xs
        = if c then map (\\x -> let y = f x in b1) xs
               else map (\\x -> let y = f x in b2) xs

    for a condition `c` no point changes, where a branch has parallel work
    of its own: each branch's map is then flattened with versions of its
    own, over all the points.  Returns host code whose result is `stm`'s,
    or None."""
    e = stm.exp
    assert isinstance(e, ir.Screma)
    if e.scans or e.reds:
        return None
    out: list[ir.Stm] = []
    lam = _hoisted(names.renamed(e.map_lam), out)
    if not lam.body.stms:
        return None
    *pre, last = lam.body.stms
    branch = last.exp
    if (not isinstance(branch, ir.If)
            or lam.body.result != tuple(ir.Var(p.name) for p in last.pat)
            or free_vars(branch.cond) & ({p.name for p in lam.params} | set(binders(tuple(pre))))
            or not _parallel(branch)):
        return None

    def fresh() -> tuple[ir.Param, ...]:  # `stm`'s pattern, named anew
        return tuple(ir.Param(names.fresh(p.name.base), p.type) for p in stm.pat)

    def mapped(body: ir.Body) -> ir.Body:
        inner = names.renamed(replace(lam, body=ir.Body((*pre, *body.stms), body.result)))
        pat = fresh()
        return ir.Body((ir.Stm(pat, replace(e, map_lam=inner)),),
                       tuple(ir.Var(p.name) for p in pat))

    pat = fresh()
    out.append(ir.Stm(pat, ir.If(branch.cond, mapped(branch.then_), mapped(branch.else_),
                                 tuple(p.type for p in pat))))
    return ir.Body(tuple(out), tuple(ir.Var(p.name) for p in pat))


def _hoisted(lam: ir.Lambda, out: list[ir.Stm], guarded: list[ir.Stm] | None = None,
             types: Mapping[ir.VName, ir.Type] | None = None,
             ranges: Mapping[ir.VName, ir.SubExp] | None = None,
             names: NameSource | None = None) -> ir.Lambda:
    """`lam` without the statements of its body that do not depend on its
    parameters, which go to `out` (to run once on the host) unless something
    consumes their value (each point needs its own) or they are loops.  One
    that may fail stays, since the map may have no points; or, given
    `guarded`, goes there (with the invariant statements that use its
    values), for the caller to run only where the map has points.
    `types` and `ranges` may prove reads in bounds (`can_fail`).

    A scalar read of an array, and scalars computed from one, stay: on the
    host they would be copies from the device, each a wait for the device
    (and no CUDA graph can hold one).  Given `names`, a Screma that uses such
    scalars only in its map function moves all the same, with copies of
    their statements first in that function (its threads read them), and
    an array made from them (a literal) moves as a map of one point
    (`_by_one_thread`)."""
    consumed = Aliases(lam.body).consumed
    variant = {p.name for p in lam.params}
    late: set[ir.VName] = set()  # what the guarded statements bind
    reads: dict[ir.VName, ir.Stm] = {}  # invariant scalars from array reads
    kept = []
    todo = list(lam.body.stms)
    while todo:
        s = todo.pop(0)
        names_ = {p.name for p in s.pat}
        uses = free_vars(s.exp)
        if uses & variant or names_ & consumed or isinstance(s.exp, ir.Loop):
            variant |= names_
            kept.append(s)
            continue
        if uses & reads.keys() or _reads_scalar(s):
            if (names is not None and isinstance(s.exp, ir.Screma)
                    and not _outside_map_function(s.exp, types=True) & reads.keys()
                    and not free_vars(tuple(p.type for p in s.pat)) & reads.keys()):
                s = _with_reads(s, reads, names)
                uses = free_vars(s.exp)
            elif names is not None and _one_array(s, reads):
                todo[:0] = _by_one_thread(s, names)
                continue
            else:
                # Cheap scalar statements may be copied into moved work;
                # anything else built on a read stays, and what uses it.
                if (isinstance(s.exp, _SCALAR_READ_OPS)
                        and all(isinstance(p.type, ir.Prim) for p in s.pat)):
                    reads.update((v, s) for v in names_)
                else:
                    variant |= names_
                kept.append(s)
                continue
        # Given `names` (`hoist_invariant`), a new array is risky too: made
        # before a map with no points, its size might be invalid or huge.
        risky = can_fail(s.exp, types or {}, ranges) or (names is not None and _makes_array(s))
        if guarded is not None and (uses & late or risky):
            late |= names_
            guarded.append(s)
        elif risky:
            variant |= names_
            kept.append(s)
        else:
            out.append(s)
    return replace(lam, body=replace(lam.body, stms=tuple(kept)))


_SCALAR_READ_OPS = (ir.Index, ir.BinOp, ir.UnOp, ir.CmpOp, ir.ConvOp, ir.SubExpOp, ir.Assert)


def _makes_array(s: ir.Stm) -> bool:
    """Whether `s` makes a new array (not a view of one: a slice, a
    transposition or another name for it)."""
    return (any(isinstance(p.type, ir.ArrayT) for p in s.pat)
            and not isinstance(s.exp, ir.Rearrange | ir.Index | ir.SubExpOp))


def _one_array(s: ir.Stm, reads: Mapping[ir.VName, ir.Stm]) -> bool:
    """Whether `s` makes one array, of a shape known without `reads`, from
    them (an array literal of read scalars, say), and no SOAC."""
    if len(s.pat) != 1 or _parallel(s.exp) or isinstance(s.exp, ir.Index):
        return False
    t = s.pat[0].type
    return (isinstance(t, ir.ArrayT) and None not in t.shape
            and not free_vars(t) & reads.keys())


def _by_one_thread(s: ir.Stm, names: NameSource) -> list[ir.Stm]:
    """`s`, which makes one array, as a map over one point that makes it,
    and that map's only row: hoisted, its reads stay on the device.

        let a = [[0, -1 / d], ...]   =>   let one = map (\\_ -> [[0, -1 / d], ...]) (iota 1)
                                          let a = one[0]"""
    (p,) = s.pat
    t = p.type
    assert isinstance(t, ir.ArrayT)
    one_t = ir.ArrayT(t.elem, (ir.Constant(1, "i64"), *t.shape))
    points = ir.Param(names.fresh("point"), ir.ArrayT("i64", (ir.Constant(1, "i64"),)))
    one = ir.Param(names.fresh(f"{p.name.base}_one"), one_t)
    inner = ir.Param(names.fresh(p.name.base), t)
    i = ir.Param(names.fresh("i"), ir.Prim("i64"))
    lam = ir.Lambda((i,), ir.Body((ir.Stm((inner,), s.exp),), (ir.Var(inner.name),)), (t,))
    zero = ir.Constant(0, "i64")
    return [ir.Stm((points,), ir.Iota(ir.Constant(1, "i64"), zero, ir.Constant(1, "i64"))),
            ir.Stm((one,), ir.Screma(ir.Constant(1, "i64"), (points.name,), (), (), lam)),
            ir.Stm((p,), ir.Index(one.name, (ir.DimFix(zero),)))]


def _reads_scalar(s: ir.Stm) -> bool:
    """Whether `s` reads one element of an array."""
    return (isinstance(s.exp, ir.Index) and all(isinstance(p.type, ir.Prim) for p in s.pat))


def _with_reads(stm: ir.Stm, reads: Mapping[ir.VName, ir.Stm], names: NameSource) -> ir.Stm:
    """Screma `stm` with renamed copies of the `reads` statements its map
    function uses (and those they use) first in that function."""
    copies, subst = _renamed_copies(list(dict.fromkeys(reads.values())),
                                    free_vars(stm.exp), names)
    return _into_nest(copies, substitute(stm, subst))


def hoist_invariant(stm: ir.Stm, names: NameSource, types: Mapping[ir.VName, ir.Type],
                    ranges: Mapping[ir.VName, ir.SubExp]) -> ir.Body | None:
    """Map `stm` with the statements of its function that no point changes
    computed once, before it (Futhark's simplifier hoists them out of
    lambdas too); None if there are none.  Each point would compute the same
    values, and a version that fused them into its work would compute them
    again at every point (LocVolCalib's grid and operators, at every strike).
    A statement that may fail fails at the map's first point as it would
    before it, so it moves too, but runs only where the map has points (and
    so does one that makes a new array, whose size might be invalid or huge
    where the map has none):

        map (\\x -> let d = xs[1] - xs[0] in f d x) ys
        = if length ys == 0 then []
          else let d = xs[1] - xs[0] in map (\\x -> f d x) ys

    where the map's results can be made empty (their shapes known outside)
    and a SOAC is among them; else such statements stay in the map.
    Returns host code binding `stm`'s pattern."""
    e = stm.exp
    assert isinstance(e, ir.Screma)
    if e.scans or e.reds or e.w == ir.Constant(1, "i64"):  # one point: it runs once anyway
        return None
    out: list[ir.Stm] = []
    guarded: list[ir.Stm] = []
    blanks = _empty_results(stm.pat, names)
    lam = _hoisted(e.map_lam, out, guarded if blanks is not None else None, types, ranges,
                   names)
    if guarded and not any(_parallel(s.exp) for s in guarded):
        # Only parallel work is worth a branch: scalar checks stay per point.
        out, guarded = [], []
        lam = _hoisted(e.map_lam, out, None, types, ranges, names)
    if not out and not guarded:
        return None
    if not guarded:
        return _bound([*out, ir.Stm(stm.pat, replace(e, map_lam=lam))], stm.pat)
    assert blanks is not None
    pat = tuple(ir.Param(names.fresh(p.name.base), p.type) for p in stm.pat)
    mapped = [ir.Stm(pat, replace(e, map_lam=lam))]
    empty = ir.Param(names.fresh("no_points"), ir.Prim("bool"))
    out.append(ir.Stm((empty,), ir.CmpOp("==", "i64", e.w, ir.Constant(0, "i64"))))
    out.append(ir.Stm(stm.pat, ir.If(
        ir.Var(empty.name), blanks,
        ir.Body((*guarded, *mapped), tuple(ir.Var(p.name) for p in pat)),
        tuple(p.type for p in stm.pat))))
    return _bound(out, stm.pat)


def _empty_results(pat: tuple[ir.Param, ...], names: NameSource) -> ir.Body | None:
    """Host code making the results of a map with no points (arrays of the
    pattern's types, whose outer size is then 0); None where a size is unknown."""
    stms, results = [], []
    for p in pat:
        t = p.type
        if not isinstance(t, ir.ArrayT) or any(d is None for d in t.shape):
            return None
        q = ir.Param(names.fresh(p.name.base), t)
        stms.append(ir.Stm((q,), ir.Replicate(t.shape, _constant(0, t.elem))))  # type: ignore[arg-type]
        results.append(ir.Var(q.name))
    return ir.Body(tuple(stms), tuple(results))


def _manifested(group: list[ir.Stm], arrays: Mapping[ir.VName, ir.VName],
                typ: Callable[[ir.VName], ir.Type], w: ir.SubExp,
                names: NameSource) -> list[ir.Stm]:
    """The host statements a part that only transposes, copies or
    replicates a point's value becomes: the same on the array of all
    points, binding an array of the part's value at every point last; none
    for any other part."""
    if len(group) != 1:
        return []
    (s,) = group
    v = s.pat[0].name
    all_points = ir.Param(names.fresh(v.base), _expand(typ(v), w))
    match s.exp:
        case ir.Rearrange(arr, perm) if arr in arrays:
            return [ir.Stm((all_points,), ir.Rearrange(arrays[arr], (0, *(d + 1 for d in perm))))]
        case ir.Copy(arr) if arr in arrays:
            return [ir.Stm((all_points,), ir.Copy(arrays[arr]))]
        case ir.Replicate(shape, ir.Var(x)) if x in arrays:
            # replicate shape xs : [shape][w]..., then the points' dimension first
            k = len(shape)
            t = all_points.type
            assert isinstance(t, ir.ArrayT)
            reps = ir.Param(names.fresh(f"{v.base}_rep"),
                            ir.ArrayT(t.elem, (*t.shape[1:k + 1], w, *t.shape[k + 1:])))
            perm = (k, *range(k), *range(k + 1, len(t.shape)))
            return [ir.Stm((reps,), ir.Replicate(shape, ir.Var(arrays[x]))),
                    ir.Stm((all_points,), ir.Rearrange(reps.name, perm))]
    return []


def _sized(lam: ir.Lambda, sizes: Mapping[ir.VName, ir.VName]) -> ir.Lambda:
    """`lam` with the sizes the host computes again (`_outer_sizes`) read
    from there: their statements dropped, their uses renamed."""
    stms = tuple(s for s in lam.body.stms if not any(p.name in sizes for p in s.pat))
    return substitute(replace(lam, body=replace(lam.body, stms=stms)), sizes)


def _open(t: ir.Type, inside: set[ir.VName]) -> ir.Type:
    """`t` with the sizes bound in `inside` left open."""
    if not isinstance(t, ir.ArrayT):
        return t
    return ir.ArrayT(t.elem, tuple(None if isinstance(d, ir.Var) and d.name in inside else d
                                   for d in t.shape))


def _parts(stms: tuple[ir.Stm, ...]) -> list[list[ir.Stm]]:
    """`stms` cut around each statement with parallel work: runs of
    sequential statements and single parallel ones, so that each parallel
    part is a map of just that statement (which then nests)."""
    parts: list[list[ir.Stm]] = []
    for s in stms:
        if _alone(s.exp) or not parts or _alone(parts[-1][-1].exp):
            parts.append([s])
        else:
            parts[-1].append(s)
    return parts


def _alone(e: ir.Exp) -> bool:
    """Whether `e` is a part of its own: parallel work, or a transposition,
    copy or replication (which the host does for all points at once)."""
    return _parallel(e) or isinstance(e, ir.Rearrange | ir.Copy | ir.Replicate)


def parallel_statements(body: ir.Body) -> int:
    """How many statements of `body`, or of the innermost body of the
    perfect map nest `body` is, have parallel work (G6 distributes over
    them, innermost first)."""
    body = fuse_body(body)
    inner = _nested_map(body)
    if inner is not None:
        return parallel_statements(inner.exp.map_lam.body)  # type: ignore[union-attr]
    return sum(_parallel(s.exp) for s in body.stms)


def work_after_parallel(body: ir.Body) -> bool:
    """Whether `body` (or the innermost body of the perfect map nest it is)
    has one statement with parallel work and more work after it (a
    reduction whose result is scaled, say): G6 then cuts it there, so that
    the parallel statement can nest (a segmented SegRed) and the rest is a
    map of its own."""
    body = fuse_body(body)
    inner = _nested_map(body)
    if inner is not None:
        return work_after_parallel(inner.exp.map_lam.body)  # type: ignore[union-attr]
    at = [k for k, s in enumerate(body.stms) if _parallel(s.exp)]
    return len(at) == 1 and at[0] < len(body.stms) - 1


def _nested_map(body: ir.Body) -> ir.Stm | None:
    """The map statement `body` consists of and returns, if so."""
    if len(body.stms) != 1:
        return None
    (s,) = body.stms
    e = s.exp
    if (isinstance(e, ir.Screma) and not (e.scans or e.reds)
            and body.result == tuple(ir.Var(p.name) for p in s.pat)):
        return s
    return None


def _distributed_nest(body: ir.Body, names: NameSource, fused: bool = True) -> ir.Body:
    """`body`, which may be a perfect map nest, with its innermost map
    distributed (G6 in the nest's whole context: the parts then distribute
    over the outer maps in turn); as it is where that does nothing."""
    inner = _nested_map(body)
    if inner is None:
        return body
    code = distribute(inner, names, fused)
    return body if code is None else code


def _parallel(e: ir.Exp) -> bool:
    """Whether `e` is or holds a SOAC."""
    match e:
        case ir.Screma() | ir.Scatter() | ir.Hist():
            return True
        case ir.If(_, then_, else_, _):
            return any(_parallel(s.exp) for s in (*then_.stms, *else_.stms))
        case ir.Loop(_, _, body):
            return any(_parallel(s.exp) for s in body.stms)
    return False
