"""The intra-block version of a map (incremental flattening's rule G3, e_middle).

`map (\\x -> e) xs`, where `e` has parallelism of its own, can give each
point of the map a whole thread block: the map becomes a `BLOCKS` SegMap,
and `e` becomes block code (`futgen.gpu.ir`) whose SOACs are `BLOCK`
SegOps shared by the block's threads, their intermediate arrays in shared
memory.  This suits a map whose points are few but whose inner work is
wide enough for a block (LocVolCalib's tridiagonal solves, the papers'
`mapscan1`), and keeps a loop's arrays in fast memory across iterations.

`BlockBuilder` translates the map's body, reusing `KernelBuilder` for what
block code shares with kernel code (views of the arrays outside, scalar
statements, hoisting invariant work to the host).  Inside a `BLOCK` SegOp
the body is kernel code: its own inner SOACs run sequentially in each
thread.  What block code cannot hold raises `NotIntra`, and the map gets no
intra-block version:

* arrays whose sizes only the block knows (shared memory is sized on the
  host), arrays updated in place or built element by element (they would
  need one thread to write while the others wait), thread-private arrays
  inside a `BLOCK` SegOp;
* scatter, histograms, and a Screma with both scans and reductions.

`worth_intra` says when the version is worth having (Futhark's rule): the
body has more than one reduction or scan, or a SOAC inside a loop; one
reduction or scan under a map is a segmented SegRed or SegScan already.
"""

from __future__ import annotations

from dataclasses import replace

from futgen.core import ir
from futgen.flatten.fusion import fuse_body
from futgen.flatten.kernel import (
    I64,
    KernelBuilder,
    NotKernel,
    View,
    commutative_operator,
)
from futgen.flatten.names import NameSource, i64_op, i64_product
from futgen.flatten.shared_layout import SharedLayout
from futgen.gpu.ir import (
    BLOCK,
    BLOCKS,
    SHARED_ALIGN,
    SHARED_PAD_SHIFT,
    SegBinOp,
    SegMap,
    SegRed,
    SegScan,
    SegSpace,
    block_ops,
)


class NotIntra(Exception):
    """This map gets no intra-block version; the message says why."""


def worth_intra(body: ir.Body) -> bool:
    """Whether a map with this body should get an intra-block version: its
    body has two or more reductions or scans, or a SOAC inside a loop."""
    return _reductions(body) >= 2 or loop_parallelism(body)


def loop_parallelism(body: ir.Body) -> bool:
    """Whether `body` has a SOAC inside a loop."""
    return _soac_in_loop(body, False)


def _reductions(body: ir.Body) -> int:
    n = 0
    for stm in body.stms:
        match stm.exp:
            case ir.Screma(scans=scans, reds=reds, map_lam=lam):
                n += (1 if scans or reds else 0) + _reductions(lam.body)
            case ir.If(_, then_, else_, _):
                n += _reductions(then_) + _reductions(else_)
            case ir.Loop(_, _, loop_body):
                n += _reductions(loop_body)
    return n


def _soac_in_loop(body: ir.Body, in_loop: bool) -> bool:
    for stm in body.stms:
        match stm.exp:
            case ir.Screma() if in_loop:
                return True
            case ir.Loop(_, _, loop_body) if _soac_in_loop(loop_body, True):
                return True
            case ir.If(_, then_, else_, _) if (_soac_in_loop(then_, in_loop)
                                                or _soac_in_loop(else_, in_loop)):
                return True
    return False


def intra_version(e: ir.Screma, kb: KernelBuilder, host: ir.Stm) -> SegMap:
    """The `BLOCKS` SegMap computing the map `e` (`host` its statement), a
    block per point of the perfect map nest `e` begins (`map (map f)`: a
    block per call of `f`); `kb` collects the statements to hoist to the
    host."""
    if e.scans or e.reds:
        raise NotIntra("the map also reduces or scans")
    block = BlockBuilder(kb)
    gtids: list[ir.VName] = []
    dims: list[ir.SubExp] = []
    pre: list[ir.Stm] = []
    lam, arrs, w = e.map_lam, e.arrs, e.w
    try:
        while True:
            gtid = kb.names.fresh("gtid")
            kb.local.add(gtid)
            gtids.append(gtid)
            dims.append(w)
            for p, a in zip(lam.params, arrs):
                kb.bind_row(p, a, (ir.Var(gtid),), pre)
            inner = _inner_map(lam)
            if inner is None or not kb.invariant_size(inner.w):
                break
            lam, arrs, w = inner.map_lam, inner.arrs, inner.w
        body = block.body(lam.body, lam.ret)
    except NotKernel as err:
        raise NotIntra(str(err)) from None
    body = ir.Body((*pre, *body.stms), body.result)
    if not block_ops(body):
        raise NotIntra("no parallelism inside")
    ret = tuple(kb.types[r.name] if isinstance(t, ir.ArrayT) else t  # type: ignore[union-attr]
                for t, r in zip(lam.ret, body.result))
    rows = replace(e.map_lam, ret=tuple(ir.array_of(t, tuple(dims[1:])) for t in ret))
    return SegMap(BLOCKS, SegSpace(tuple(gtids), tuple(dims)), ret, body,
                  replace(host, exp=replace(host.exp, map_lam=rows)))


def _inner_map(lam: ir.Lambda) -> ir.Screma | None:
    """The map a lambda's body is, when it is just one map returning its results."""
    body = fuse_body(lam.body)
    if len(body.stms) != 1:
        return None
    (stm,) = body.stms
    e = stm.exp
    if (isinstance(e, ir.Screma) and not e.scans and not e.reds
            and body.result == tuple(ir.Var(p.name) for p in stm.pat)):
        return e
    return None


class BlockBuilder:
    """Translates a map's body into block code (see the module docstring).

    The arrays block code binds are `kb.private` (they need memory of their
    own: shared memory here), so `KernelBuilder`'s bookkeeping of views and
    shapes carries over."""

    def __init__(self, kb: KernelBuilder):
        self.kb = kb
        self.names: NameSource = kb.names

    def body(self, body: ir.Body, ret: tuple[ir.Type, ...]) -> ir.Body:
        """Block code computing `body`; array results are shared arrays."""
        out: list[ir.Stm] = []
        body = fuse_body(body)
        for stm in body.stms:
            self.stm(stm, out)
        results = []
        for t, r in zip(ret, body.result):
            if isinstance(t, ir.ArrayT):
                r = self.shared(r, out)
            else:
                self.kb.require_scalar(r)
            results.append(r)
        return ir.Body(tuple(out), tuple(results))

    def stm(self, stm: ir.Stm, out: list[ir.Stm]) -> None:
        pat, e = stm.pat, stm.exp
        kb = self.kb
        match e:
            case ir.Screma():
                out.append(self.block_op(pat, e))
            case ir.Loop():
                out.append(self.loop(pat, e, out))
            case ir.If():
                out.append(kb.branch(pat, e, self.body))
            case ir.Copy(v) | ir.SubExpOp(ir.Var(v)) if isinstance(pat[0].type, ir.ArrayT):
                # Block code never updates an array in place: a copy may alias.
                kb.views[pat[0].name] = kb.views.get(v, View(v, ()))
                kb.local.add(pat[0].name)
            case ir.Replicate(shape, value) if not kb._is_array(value):
                pat = (ir.Param(pat[0].name, ir.ArrayT(pat[0].type.elem, shape)),)  # type: ignore[union-attr]
                kb._bind(pat)
                out.append(ir.Stm(pat, e))
            case ir.Update() | ir.Replicate() | ir.Concat() | ir.ArrayLit() | ir.Scatter() \
                    | ir.Hist() | ir.Reshape():
                raise NotIntra(f"{type(e).__name__} in block code")
            case ir.Rearrange(arr, _) if arr in kb.local:
                raise NotIntra("a transposition of an array the block makes")
            case _:
                kb.stm(stm, out)

    def block_op(self, pat: tuple[ir.Param, ...], e: ir.Screma) -> ir.Stm:
        """A `BLOCK` SegMap, SegRed or SegScan computing Screma `e`; its body
        is kernel code, each thread running its inner SOACs sequentially."""
        if e.scans and e.reds:
            raise NotIntra("a Screma with both scans and reductions")
        if not self.kb.invariant_size(e.w):
            raise NotIntra("a width known only in the block")
        tb = self.kb.copy()
        ltid = self.names.fresh("ltid")
        tb.local.add(ltid)
        pre: list[ir.Stm] = []
        for p, a in zip(e.map_lam.params, e.arrs):
            tb.bind_row(p, a, (ir.Var(ltid),), pre)
        ops = tuple(SegBinOp(tb.op_lambda(o.lam), o.nes,
                             getattr(o, "comm", False) or commutative_operator(o.lam))
                    for o in (*e.scans, *e.reds))
        if any(isinstance(ne, ir.Var) and ne.name in tb.local and ne.name not in self.kb.local
               for o in ops for ne in o.nes):
            raise NotIntra("a neutral element computed by a thread")
        body = tb.body(e.map_lam.body)
        if tb.private - self.kb.private:
            raise NotIntra("threads of a block operation that need private arrays")
        self._adopt(tb)
        body = ir.Body((*pre, *body.stms), body.result)
        space = SegSpace((ltid,), (e.w,))
        elems = [p.type for o in ops for p in o.lam.params[:len(o.nes)]]
        nscan = len(elems) if e.scans else 0
        nred = len(elems) - nscan
        ret = tuple(t for t in e.map_lam.ret)
        pat = tuple(p if nscan <= k < nscan + nred else
                    ir.Param(p.name, ir.ArrayT(ir.elem_prim(p.type), (e.w,)))
                    for k, p in enumerate(pat))
        self.kb._bind(pat)
        op: SegMap | SegRed | SegScan
        if e.scans:
            op = SegScan(BLOCK, space, ops, ret, body)
        elif e.reds:
            op = SegRed(BLOCK, space, ops, ret, body)
        else:
            op = SegMap(BLOCK, space, ret, body)
        return ir.Stm(pat, op)

    def loop(self, pat: tuple[ir.Param, ...], e: ir.Loop, out: list[ir.Stm]) -> ir.Stm:
        """A loop of block code; its array parameters are shared arrays."""
        kb = self.kb
        merge = []
        for p, init in e.merge:
            if isinstance(p.type, ir.ArrayT):
                init = self.shared(init, out)
                p = ir.Param(p.name, kb.types[init.name])  # type: ignore[union-attr]
            merge.append((p, init))
        params = tuple(p for p, _ in merge)
        kb._bind(params)
        if isinstance(e.form, ir.ForLoop):
            kb.local.add(e.form.i)
        body = self.body(e.body, tuple(p.type for p in params))
        # A parameter passed on unchanged would share its memory with the
        # next iteration's value: give the result memory of its own.
        stms = list(body.stms)
        results = [self.copied(r, stms) if isinstance(r, ir.Var) and r.name in
                   {p.name for p in params if isinstance(p.type, ir.ArrayT)} else r
                   for r in body.result]
        body = kb.same_shapes(params, ir.Body(tuple(stms), tuple(results)))
        pat = tuple(ir.Param(p.name, q.type) for p, q in zip(pat, params))
        kb._bind(pat)
        return ir.Stm(pat, ir.Loop(tuple(merge), e.form, body))

    def shared(self, se: ir.SubExp, out: list[ir.Stm]) -> ir.Var:
        """A shared array holding the array `se`: itself, or a copy of a view
        (a row of an array outside, `iota`, a slice)."""
        if not isinstance(se, ir.Var):
            raise NotIntra("an array constant in block code")
        if se.name in self.kb.private:
            return se
        view = self.kb.views.get(se.name)
        if isinstance(view, View) and view.arr in self.kb.private and not view.dims:
            return ir.Var(view.arr)
        return self.copied(se, out)

    def copied(self, se: ir.Var, out: list[ir.Stm]) -> ir.Var:
        """A `BLOCK` SegMap copying the one-dimensional array `se`."""
        kb = self.kb
        declared = kb.types.get(se.name)
        if isinstance(declared, ir.ArrayT) and len(declared.shape) != 1:
            raise NotIntra("a copy of a multi-dimensional array in block code")
        if se.name in kb.private:
            t = kb.types[se.name]
        else:
            n = ir.Param(self.names.fresh("n"), I64)
            kb.stm(ir.Stm((n,), ir.ArraySize(se.name, 0)), out)
            t = ir.ArrayT(_elem(kb, se.name), (ir.Var(n.name),))
        if not isinstance(t, ir.ArrayT) or len(t.shape) != 1:
            raise NotIntra("a copy of a multi-dimensional array in block code")
        x = ir.Param(self.names.fresh("x"), ir.Prim(t.elem))
        copy = ir.Param(self.names.fresh(f"{se.name.base}_shared"), t)
        lam = ir.Lambda((x,), ir.Body((), (ir.Var(x.name),)), (x.type,))
        out.append(self.block_op((copy,), ir.Screma(t.shape[0], (se.name,), (), (), lam)))  # type: ignore[arg-type]
        return ir.Var(copy.name)

    def _adopt(self, trial: KernelBuilder) -> None:
        kb = self.kb
        kb.views, kb.local, kb.hoisted = trial.views, trial.local, trial.hoisted
        kb.private, kb.types = trial.private, trial.types


def _elem(kb: KernelBuilder, v: ir.VName) -> str:
    view = kb.views.get(v)
    if view is None:
        return ir.elem_prim(kb.types[v])
    if isinstance(view, View):
        return ir.elem_prim(kb.types[view.arr])
    return "i64"  # an iota


# ------------------------------------------------------------ host side

def intra_parallelism(op: SegMap, names: NameSource) -> tuple[list[ir.Stm], ir.SubExp]:
    """Host statements computing the threads a block of `op` can use (the
    largest space of its `BLOCK` SegOps), and that number."""
    stms: list[ir.Stm] = []
    widest: ir.SubExp | None = None
    for inner in block_ops(op.body):
        size = i64_product(inner.space.dims, names, stms, "intra")
        widest = size if widest is None else i64_op(stms, names, "max", widest, size, "intra")
    assert widest is not None
    return stms, widest


def shared_bytes(op: SegMap, names: NameSource) -> tuple[list[ir.Stm], ir.SubExp]:
    """Host statements computing the shared memory a block of `op` needs for
    its arrays' slots (`SharedLayout`, padded by SHARED_PAD_SHIFT, each
    rounded up to SHARED_ALIGN bytes), and that number."""
    stms: list[ir.Stm] = []
    total: ir.SubExp = ir.Constant(0, "i64")
    for shape, itemsize in SharedLayout.of(op.body).slots:
        elems = i64_product(shape, names, stms, "intra")
        pad = i64_op(stms, names, ">>", elems, ir.Constant(SHARED_PAD_SHIFT, "i64"), "intra")
        elems = i64_op(stms, names, "+", elems, pad, "intra")
        size = i64_op(stms, names, "*", elems, ir.Constant(itemsize, "i64"), "intra")
        padded = i64_op(stms, names, "+", size, ir.Constant(SHARED_ALIGN - 1, "i64"), "intra")
        aligned = i64_op(stms, names, "&", padded, ir.Constant(-SHARED_ALIGN, "i64"), "intra")
        total = i64_op(stms, names, "+", total, aligned, "intra")
    return stms, total


__all__ = ["NotIntra", "intra_parallelism", "intra_version", "loop_parallelism", "shared_bytes",
           "worth_intra"]
