"""Kernel bodies and SOAC lambdas as vectorised NumPy: the CPU backend's code.

The CPU backend is the executable definition of the GPU IR (DESIGN.md), and
it must be fast enough to run the test programs' larger inputs, so a body is
not run once per point but once for *all* points of a segment space: every
scalar variable of the body becomes a *lane value*, an array with one element
per point (or a NumPy scalar that stands for every point).  Primitive
operations are elementwise (`futgen_runtime.prims`), so straight-line code
needs no change; the rest is:

* `Index` of an array bound outside: a gather, bounds-checked for all lanes
  at once with Futhark's message (`S.gather`);
* `If` on a per-lane condition: the lanes are split by the condition and each
  branch runs, as a nested function, on its own lanes only, so a branch never
  evaluates (or fails) where the source program would not run it;
* `Loop` with a per-lane trip count or `while` condition: the body runs on
  the lanes still going, which are recomputed every iteration (masking);
* reductions and scans over the innermost dimension: a NumPy ufunc when the
  operator is one built-in operator, else the operator itself vectorised, in
  a pairwise tree (reduce) or a log-step scan, which assume associativity
  only, as the GPU does.

A SOAC left on the host by flattening runs the same way when its lambda is
kernel code; otherwise (array-valued rows, nested SOACs) its lambda runs
once per row with host code (`RowCompiler`, implemented by
`futgen.codegen.host`), and its operators fold sequentially.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from futgen.codegen.pysrc import (
    Emitter,
    emit_loop,
    free_vars,
    loc_text,
    pyname,
    scalar_exp,
    subexp,
    tuple_text,
)
from futgen.core import ir
from futgen.errors import UnsupportedFeature
from futgen.gpu import ir as gpu

_SCALAR_OPS = (ir.SubExpOp, ir.UnOp, ir.BinOp, ir.CmpOp, ir.ConvOp, ir.Assert)


class RowCompiler(Protocol):
    """Compiles a body as host code, for lambdas that cannot be vectorised."""

    def inline_body(self, em: Emitter, body: ir.Body) -> list[str]:
        """Emit `body`'s statements into `em`; the Python results."""


# ------------------------------------------------------------ what vectorises


def is_kernel_body(body: ir.Body) -> bool:
    """Scalar-only code: what a SegOp body may contain (see `futgen.gpu.ir`)."""
    return all(_is_kernel_stm(s) for s in body.stms)


def _is_kernel_stm(stm: ir.Stm) -> bool:
    if not all(isinstance(p.type, ir.Prim) for p in stm.pat):
        return False
    match stm.exp:
        case ir.Index(_, sl, _):
            return all(isinstance(d, ir.DimFix) for d in sl)
        case ir.If(_, then_, else_, _):
            return is_kernel_body(then_) and is_kernel_body(else_)
        case ir.Loop(merge, _, body):
            return all(isinstance(p.type, ir.Prim) for p, _ in merge) and is_kernel_body(body)
    return isinstance(stm.exp, _SCALAR_OPS)


def is_vectorisable(lam: ir.Lambda) -> bool:
    """A lambda over scalars with kernel code: runs once on whole columns."""
    return (all(isinstance(p.type, ir.Prim) for p in lam.params)
            and all(isinstance(t, ir.Prim) for t in lam.ret)
            and is_kernel_body(lam.body))


def single_binop(lam: ir.Lambda) -> ir.BinOp | None:
    """The operator of `\\x y -> x op y` when it has a NumPy ufunc, else None."""
    from futgen_runtime import prims

    e = ir.lambda_binop(lam)
    if e is not None and prims.BINOPS[e.op].reducer(e.prim) is not None:
        return e
    return None


def check_call(e: ir.Assert) -> str:
    """The `S.check` call of an Assert (host code and NumPy kernels alike)."""
    args = f", {tuple_text([subexp(a) for a in e.args])}" if e.args else ""
    return f"S.check({subexp(e.cond)}, {e.msg!r}, {loc_text(e.loc)}{args})"


# ------------------------------------------------------------ lane code


class LaneCompiler:
    """Emits kernel code that runs on all lanes at once.

    `lanes` holds the names whose values differ per lane; the rest (free
    host variables) are the same everywhere, so an `if` or loop on them is
    ordinary Python control flow.  Marking a scalar as a lane is always
    safe (the helpers accept scalars), so lane-ness is over-approximated.
    """

    def __init__(self, em: Emitter) -> None:
        self.em = em

    def function(self, name: str, params: list[ir.VName], body: ir.Body,
                 lanes: set[ir.VName]) -> None:
        """`def name(_n, params...)` returning the body's results as a tuple."""
        args = ", ".join(["_n", *(pyname(p) for p in params)])
        with self.em.block(f"def {name}({args}):"):
            results = self.body(body, set(lanes) | set(params))
            self.em.line(f"return {tuple_text(results)}")

    def body(self, body: ir.Body, lanes: set[ir.VName]) -> list[str]:
        for stm in body.stms:
            self.stm(stm, lanes)
        return [subexp(r) for r in body.result]

    def stm(self, stm: ir.Stm, lanes: set[ir.VName]) -> None:
        names = [pyname(p.name) for p in stm.pat]
        is_lane = bool(free_vars(stm.exp) & lanes)
        e = stm.exp
        text = scalar_exp(e)
        if text is not None:
            self.em.line(f"{names[0]} = {text}")
        elif isinstance(e, ir.Index):
            idx = tuple_text([subexp(d.i) for d in e.slice])  # type: ignore[union-attr]
            self.em.line(f"{names[0]} = S.gather({pyname(e.arr)}, {idx}, {loc_text(e.loc)})")
        elif isinstance(e, ir.Assert):
            self.em.line(f"{names[0]} = {check_call(e)}")
        elif isinstance(e, ir.If):
            self.if_(stm, e, lanes)
        elif isinstance(e, ir.Loop):
            self.loop(stm, e, lanes)
            is_lane = is_lane or any(isinstance(v, ir.Var) and v.name in lanes
                                     for _, v in e.merge)
        else:
            raise UnsupportedFeature(f"{type(e).__name__} in kernel code")
        if is_lane:
            lanes.update(p.name for p in stm.pat)

    def _assign(self, stm: ir.Stm, values: list[str]) -> None:
        for p, v in zip(stm.pat, values):
            self.em.line(f"{pyname(p.name)} = {v}")

    def if_(self, stm: ir.Stm, e: ir.If, lanes: set[ir.VName]) -> None:
        em = self.em
        if not (isinstance(e.cond, ir.Var) and e.cond.name in lanes):
            with em.block(f"if {subexp(e.cond)}:"):
                self._assign(stm, self.body(e.then_, set(lanes)))
            with em.block("else:"):
                self._assign(stm, self.body(e.else_, set(lanes)))
            return
        yes, no = em.fresh("yes"), em.fresh("no")
        em.line(f"{yes}, {no} = S.split({subexp(e.cond)}, _n)")
        results = []
        for branch, idx in ((e.then_, yes), (e.else_, no)):
            free = sorted(free_vars(branch) & lanes, key=str)
            fn = em.fresh("branch")
            self.function(fn, free, branch, set(free))
            args = ", ".join([f"{idx}.size", *(f"S.sel({pyname(v)}, {idx})" for v in free)])
            # A branch no lane takes does not run: its lane-free statements
            # (`xs[2]` of a short `xs`) would fail where the program does not.
            res = em.fresh("res")
            em.line(f"{res} = {fn}({args}) if {idx}.size else {(0,) * len(stm.pat)!r}")
            results.append(res)
        self._assign(stm, [f"S.merge(_n, {yes}, {no}, {results[0]}[{k}], {results[1]}[{k}], "
                           f"{ir.elem_prim(p.type)!r})" for k, p in enumerate(stm.pat)])

    def loop(self, stm: ir.Stm, e: ir.Loop, lanes: set[ir.VName]) -> None:
        params = [p.name for p, _ in e.merge]
        lane_loop = bool(free_vars(e) & lanes) or any(
            isinstance(v, ir.Var) and v.name in lanes for _, v in e.merge)
        per_lane_trip = (
            isinstance(e.form, ir.ForLoop) and isinstance(e.form.bound, ir.Var)
            and e.form.bound.name in lanes
        ) or (isinstance(e.form, ir.WhileLoop) and lane_loop)
        if not per_lane_trip:
            self._uniform_loop(stm, e, lanes | set(params) if lane_loop else lanes)
        else:
            self._masked_loop(stm, e, lanes)

    def _uniform_loop(self, stm: ir.Stm, e: ir.Loop, lanes: set[ir.VName]) -> None:
        """Every lane runs the same iterations: plain Python control flow."""
        names = emit_loop(self.em, e, lambda: self.body(e.body, set(lanes)))
        self._assign(stm, names)

    def _masked_loop(self, stm: ir.Stm, e: ir.Loop, lanes: set[ir.VName]) -> None:
        """Lanes stop at different iterations: run the body on the live ones."""
        em = self.em
        params = [p.name for p, _ in e.merge]
        state = [em.fresh("state") for _ in params]
        for s, (p, init) in zip(state, e.merge):
            em.line(f"{s} = S.full({subexp(init)}, _n, {ir.elem_prim(p.type)!r})")
        free = sorted((free_vars(e.body) & lanes) - set(params), key=str)
        counter = [e.form.i] if isinstance(e.form, ir.ForLoop) else []
        fn = em.fresh("body")
        self.function(fn, counter + params + free, e.body, set(free) | set(params))
        live = em.fresh("live")
        if isinstance(e.form, ir.ForLoop):
            i, bound = em.fresh("i"), subexp(e.form.bound)
            header = f"for {i} in range(S.lane_max({bound})):"
            first = [f"np.{_np(e.form.prim)}({i})"]
            live_expr = f"S.active({i} < {bound}, _n)"
        else:
            k = params.index(e.form.cond)
            em.line(f"{live} = S.active({state[k]}, _n)")
            header = f"while {live}.size:"
            first = []
            live_expr = f"S.active({state[k]}, _n)"
        with em.block(header):
            if isinstance(e.form, ir.ForLoop):
                em.line(f"{live} = {live_expr}")
            args = [f"{live}.size", *first, *(f"{s}[{live}]" for s in state),
                    *(f"S.sel({pyname(v)}, {live})" for v in free)]
            res = em.fresh("res")
            em.line(f"{res} = {fn}({', '.join(args)})")
            for k, s in enumerate(state):
                em.line(f"S.update_lanes({s}, {live}, {res}[{k}])")
            if isinstance(e.form, ir.WhileLoop):
                em.line(f"{live} = {live_expr}")
        self._assign(stm, state)


def _np(prim: str) -> str:
    from futgen.codegen.plan import DTYPES

    return "bool_" if prim == "bool" else DTYPES[prim]


# ------------------------------------------------------------ operators


def _operator(em: Emitter, op_lam: ir.Lambda, nes: tuple[ir.SubExp, ...],
              cols: list[str], scan: bool, rows: RowCompiler) -> list[str]:
    """Reduce or scan columns (last axis) with an operator; the result names."""
    prims_ = [ir.elem_prim(t) for t in op_lam.ret]
    out = [em.fresh("red") for _ in nes]
    binop = single_binop(op_lam)
    if binop is not None:
        fn = "S.ufunc_scan" if scan else "S.ufunc_reduce"
        em.line(f"{out[0]} = {fn}({binop.prim!r}, {binop.op!r}, {subexp(nes[0])}, {cols[0]})")
        return out
    if is_vectorisable(op_lam):
        fn = em.fresh("op")
        LaneCompiler(em).function(fn, [p.name for p in op_lam.params], op_lam.body, set())
        args = tuple_text(cols), tuple_text([repr(p) for p in prims_])
        if scan:
            em.line(f"{', '.join(out)}, = S.tree_scan({fn}, {args[0]}, {args[1]})")
        else:
            em.line(f"{', '.join(out)}, = S.tree_reduce({fn}, {tuple_text([subexp(n) for n in nes])},"
                    f" {args[0]}, {args[1]})")
        return out
    return _sequential_operator(em, op_lam, nes, cols, scan, rows, out)


def _sequential_operator(em: Emitter, op_lam: ir.Lambda, nes: tuple[ir.SubExp, ...],
                         cols: list[str], scan: bool, rows: RowCompiler,
                         out: list[str]) -> list[str]:
    """A fold in row order with the operator as host code (array operands)."""
    fn = _row_function(em, op_lam, rows)
    acc = [em.fresh("acc") for _ in nes]
    em.line(f"{tuple_text(acc)} = {tuple_text([subexp(n) for n in nes])}")
    steps = [em.fresh("steps") for _ in nes] if scan else []
    for s in steps:
        em.line(f"{s} = []")
    i = em.fresh("i")
    with em.block(f"for {i} in range(len({cols[0]})):"):
        em.line(f"{tuple_text(acc)} = {fn}({', '.join([*acc, *(f'{c}[{i}]' for c in cols)])})")
        for s, a in zip(steps, acc):
            em.line(f"{s}.append({a})")
    for k, o in enumerate(out):
        if scan:
            em.line(f"{o} = S.stack({steps[k]}, {ir.elem_prim(op_lam.ret[k])!r}, "
                    f"np.shape({cols[k]}))")
        else:
            em.line(f"{o} = {acc[k]}")
    return out


def _row_function(em: Emitter, lam: ir.Lambda, rows: RowCompiler) -> str:
    """A nested `def` running `lam` once, as host code on the CPU backend."""
    fn = em.fresh("row")
    with em.block(f"def {fn}({', '.join(pyname(p.name) for p in lam.params)}):"):
        results = rows.inline_body(em, lam.body)
        em.line(f"return {tuple_text(results)}")
    return fn


# ------------------------------------------------------------ map parts


def _map_columns(em: Emitter, lam: ir.Lambda, w: str, arrs: list[str],
                 empty: list[str], rows: RowCompiler) -> list[str]:
    """The lambda over all `w` rows of `arrs`: one column name per result.
    `empty[k]` is the shape expression of result k when there are no rows."""
    cols = [em.fresh("col") for _ in lam.ret]
    if is_vectorisable(lam):
        fn = em.fresh("map")
        LaneCompiler(em).function(fn, [p.name for p in lam.params], lam.body, set())
        res = em.fresh("res")
        em.line(f"{res} = {fn}({', '.join([w, *arrs])})")
        for k, (c, t) in enumerate(zip(cols, lam.ret)):
            em.line(f"{c} = S.column({res}[{k}], {w}, {ir.elem_prim(t)!r})")
        return cols
    fn = _row_function(em, lam, rows)
    acc = em.fresh("rows")
    i = em.fresh("i")
    em.line(f"{acc} = []")
    with em.block(f"for {i} in range({w}):"):
        args = [f"np.array({a}[{i}])" if isinstance(p.type, ir.ArrayT) else f"{a}[{i}]"
                for a, p in zip(arrs, lam.params)]
        em.line(f"{acc}.append({fn}({', '.join(args)}))")
    for k, (c, t) in enumerate(zip(cols, lam.ret)):
        em.line(f"{c} = S.stack([r[{k}] for r in {acc}], {ir.elem_prim(t)!r}, {empty[k]})")
    return cols


# ------------------------------------------------------------ host-level SOACs


SizeText = Callable[[ir.Type, str], str]


def emit_soac(em: Emitter, stm: ir.Stm, rows: RowCompiler, shape_of: SizeText) -> list[str]:
    """Emit, into a function whose parameters are the SOAC's free variables
    (arrays on the host), the code computing `stm`'s SOAC; its results.

    `shape_of(t, w)` gives the shape expression of `w` rows of type `t` (for
    results of zero rows)."""
    e = stm.exp
    w = em.fresh("w")
    em.line(f"{w} = int({subexp(e.w)})")  # type: ignore[union-attr]
    match e:
        case ir.Screma():
            return _screma(em, e, w, rows, shape_of)
        case ir.Scatter():
            return _scatter(em, e, w, rows, shape_of)
        case ir.Hist():
            return _hist(em, e, w, rows, shape_of)
    raise UnsupportedFeature(f"{type(e).__name__} on the host")


def _screma(em: Emitter, e: ir.Screma, w: str, rows: RowCompiler,
            shape_of: SizeText) -> list[str]:
    empty = [shape_of(t, w) for t in e.map_lam.ret]
    cols = _map_columns(em, e.map_lam, w, [pyname(a) for a in e.arrs], empty, rows)
    out: list[str] = []
    k = 0
    for op, scan in [*((s, True) for s in e.scans), *((r, False) for r in e.reds)]:
        n = len(op.nes)
        out += _operator(em, op.lam, op.nes, cols[k:k + n], scan, rows)
        k += n
    return out + cols[k:]


def _scatter(em: Emitter, e: ir.Scatter, w: str, rows: RowCompiler,
             shape_of: SizeText) -> list[str]:
    empty = [shape_of(t, w) for t in e.lam.ret]
    cols = _map_columns(em, e.lam, w, [pyname(a) for a in e.arrs], empty, rows)
    out, k = [], 0
    for d in e.dests:
        em.line(f"{pyname(d.arr)} = S.writable({pyname(d.arr)})")
        idx = tuple_text(cols[k:k + d.num_idx])
        em.line(f"S.scatter({pyname(d.arr)}, {idx}, {cols[k + d.num_idx]}, {w})")
        out.append(pyname(d.arr))
        k += d.num_idx + 1
    return out


def _hist(em: Emitter, e: ir.Hist, w: str, rows: RowCompiler, shape_of: SizeText) -> list[str]:
    empty = [shape_of(t, w) for t in e.lam.ret]
    cols = _map_columns(em, e.lam, w, [pyname(a) for a in e.arrs], empty, rows)
    bins, vals = cols[:len(e.ops)], cols[len(e.ops):]
    out: list[str] = []
    for op, b in zip(e.ops, bins):
        n = len(op.dests)
        dests = [pyname(d) for d in op.dests]
        for d in dests:
            em.line(f"{d} = S.writable({d})")
        binop = single_binop(op.lam)
        if binop is not None:
            em.line(f"S.hist_ufunc({dests[0]}, {binop.prim!r}, {binop.op!r}, {b}, {vals[0]}, {w})")
        else:
            _sequential_hist(em, op, b, vals[:n], dests, w, rows)
        out += dests
        vals = vals[n:]
    return out


def _sequential_hist(em: Emitter, op: ir.HistOp, bins: str, vals: list[str],
                     dests: list[str], w: str, rows: RowCompiler) -> None:
    """Combines values into their bins one row at a time with the operator."""
    fn = _row_function(em, op.lam, rows)
    b = em.fresh("bins")
    em.line(f"{b} = np.broadcast_to(np.asarray({bins}, dtype=np.int64), ({w},))")
    i = em.fresh("i")
    with em.block(f"for {i} in np.flatnonzero(S.in_bounds([{b}], {dests[0]}.shape)):"):
        copy = isinstance(op.lam.params[0].type, ir.ArrayT)
        cur = [f"np.array({d}[{b}[{i}]])" if copy else f"{d}[{b}[{i}]]" for d in dests]
        new = em.fresh("new")
        em.line(f"{new} = {fn}({', '.join([*cur, *(f'{v}[{i}]' for v in vals)])})")
        for k, d in enumerate(dests):
            em.line(f"{d}[{b}[{i}]] = {new}[{k}]")


# ------------------------------------------------------------ SegOps


def emit_segop(em: Emitter, stm: ir.Stm, rows: RowCompiler) -> list[str]:
    """Emit the vectorised evaluation of a SegOp statement; its results.

    The body runs once over all points of the segment space; reductions and
    scans then run over the innermost dimension of the reshaped columns."""
    op = stm.exp
    assert isinstance(op, gpu.SegMap | gpu.SegRed | gpu.SegScan)
    dims = em.fresh("dims")
    em.line(f"{dims} = {tuple_text([f'int({subexp(d)})' for d in op.space.dims])}")
    em.line(f"_n = int(np.prod({dims}, dtype=np.int64))")
    if not is_kernel_body(op.body):  # a SegMap with private arrays runs its `host` map
        raise UnsupportedFeature(f"{type(op).__name__} whose body is not kernel code")
    results = [em.fresh("lanes") for _ in op.ret]
    with em.block("if _n:"):  # with no points the body never runs (it may fail)
        em.line(f"{tuple_text([pyname(g) for g in op.space.gtids])} = S.points({dims})")
        values = LaneCompiler(em).body(op.body, set(op.space.gtids))
        em.line(f"{tuple_text(results)} = {tuple_text(values)}")
    with em.block("else:"):
        em.line(f"{tuple_text(results)} = {tuple_text(['0'] * len(results))}")
    cols = []
    for r, t in zip(results, op.ret):
        c = em.fresh("col")
        em.line(f"{c} = S.column({r}, _n, {ir.elem_prim(t)!r}).reshape({dims})")
        cols.append(c)
    if isinstance(op, gpu.SegMap):
        return cols
    out, k = [], 0
    for bop in op.ops:
        n = len(bop.nes)
        part = _operator(em, bop.lam, bop.nes, cols[k:k + n], isinstance(op, gpu.SegScan), rows)
        if isinstance(op, gpu.SegRed) and len(op.space.dims) == 1:
            for name in part:
                em.line(f"{name} = np.asarray({name})[()]")
        out += part
        k += n
    return out + cols[k:]
