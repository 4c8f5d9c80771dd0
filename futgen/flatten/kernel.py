"""Turning the body of a SOAC into kernel code (the rules of `futgen.gpu.ir`).

A SegOp body may bind only scalars and contains no SOACs and no calls.  This
module rewrites a lambda body into that form, or raises `NotKernel` when it
cannot (the SOAC then stays on the host):

* **Calls are inlined** (`inline`), with every name the callee binds renamed,
  since a function may be inlined at several places.
* **Arrays become views.**  A row `x = xs[gtid]` of an array bound outside
  the kernel is never materialised: `x` is recorded as the view `xs[gtid]`,
  and `x[j]` becomes `xs[gtid, j]`.  Slices, strided or backwards, are views
  too (`xs[gtid, a:b:s][j]` is `xs[gtid, a + j*s]`); indexing one checks the
  index against the view's own shape, with the message the interpreter gives.  `iota n` is the view whose element `i`
  is `i` (scaled and shifted), so `zip xs (iota n)` needs no array either.
* **Inner SOACs become loops.**  After vertical fusion (`fusion.fuse_body`), an
  inner Screma is a sequential `Loop` whose merge parameters are the
  reductions' accumulators, the scans' carries and the arrays its scans and
  map write element by element (`Update` in place); it reads its input rows
  through views.
* **Arrays that must exist become thread-private** (`gpu.ir`): `replicate`,
  the arrays a Screma makes, and a view that is updated, carried by a loop,
  returned by an `if` or by the thread (`owned` copies it into a `Scratch`
  array).  Their shapes must be known on the host; an array whose size
  depends on the thread, scatter, hist, literals and slice updates raise
  `NotKernel`.
* **Invariant work is hoisted**: `size` of a view, `rearrange` of an array
  bound outside the kernel and scalar operations that cannot fail, when they
  do not depend on the thread, move to the host in front of the SegOp.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from futgen.core import ir
from futgen.flatten.fusion import fuse_body, screma_sections
from futgen.flatten.names import NameSource, free_vars
from futgen.gpu.ir import MAX_ASSERT_ARGS, Scratch
from futgen.opt.parts import map_bodies

I64 = ir.Prim("i64")


class NotKernel(Exception):
    """This code cannot be a kernel body; the message says why."""


@dataclass(frozen=True, slots=True)
class Strided:
    """A dimension of a view: `num` elements of a dimension of the underlying
    array, from `start` in steps of `stride`."""

    start: ir.SubExp
    stride: ir.SubExp
    num: ir.SubExp


@dataclass(frozen=True, slots=True)
class View:
    """An array that is a slice of an array `arr` bound outside the kernel:
    `dims` says, for the leading dimensions of `arr`, a fixed index or a
    strided range; the remaining dimensions are whole.  A row `xs[i]` is
    `View(xs, (i,))`; `xs[i, 1:n:2]` is `View(xs, (i, Strided(1, 2, m)))`."""

    arr: ir.VName
    dims: tuple[ir.SubExp | Strided, ...]

    @property
    def plain(self) -> bool:
        """Whether the view is only fixed indices (a row of a row ...)."""
        return not any(isinstance(d, Strided) for d in self.dims)


@dataclass(frozen=True, slots=True)
class IotaView:
    """The array `iota n start stride`, never materialised."""

    n: ir.SubExp
    start: ir.SubExp
    stride: ir.SubExp


AnyView = View | IotaView


def _typed(p: ir.Param, t: ir.Type) -> ir.Param:
    return ir.Param(p.name, t)




def _write_loops(buf: ir.VName, t: ir.ArrayT, idx: tuple[ir.Var, ...], value: ir.SubExp,
                 read: tuple[ir.Stm, ...], names: NameSource) -> ir.Loop:
    """The loop nest setting `buf[idx] = value` at every index of `t`'s shape,
    `read` computing `value` from `idx`."""
    depth = len(idx)
    params = [ir.Param(names.fresh(f"{buf.base}_w"), t) for _ in range(depth)]
    out = ir.Param(names.fresh(f"{buf.base}_w"), t)
    body = ir.Body((*read, ir.Stm((out,), ir.Update(params[-1].name, tuple(
        ir.DimFix(i) for i in idx), value))), (ir.Var(out.name),))
    for k in range(depth - 1, -1, -1):
        init = ir.Var(buf if k == 0 else params[k - 1].name)
        loop = ir.Loop(((params[k], init),), ir.ForLoop(idx[k].name, "i64", t.shape[k]), body)
        if k == 0:
            return loop
        res = ir.Param(names.fresh(f"{buf.base}_w"), t)
        body = ir.Body((ir.Stm((res,), loop),), (ir.Var(res.name),))
    raise AssertionError("a private array has at least one dimension")

# Binary operators that can fail (division by zero), which are not hoisted.
_PARTIAL_BINOPS = frozenset({"/", "%", "//", "%%", "**"})


def inline(body: ir.Body, funs: dict[str, ir.Function], names: NameSource) -> ir.Body:
    """`body` with every `Apply`, at any depth, replaced by the callee's body."""
    stms: list[ir.Stm] = []
    for stm in body.stms:
        e = stm.exp
        if isinstance(e, ir.Apply):
            fn: ir.Function = names.renamed(funs[e.fn])
            stms += [ir.Stm((p,), ir.SubExpOp(a)) for p, a in zip(fn.params, e.args)]
            inner = inline(fn.body, funs, names)
            stms += inner.stms
            stms += [ir.Stm((p,), ir.SubExpOp(r)) for p, r in zip(stm.pat, inner.result)]
        else:
            stms.append(ir.Stm(stm.pat, map_bodies(e, lambda b: inline(b, funs, names))))
    return ir.Body(tuple(stms), body.result)


@dataclass(frozen=True)
class MapInScan:
    """A map run in a scan's loop (`scan_then_map`): its statement's pattern
    and Screma, and the scan's arrays that only it reads.  (Block code has
    its own, `codegen.cuda.intra.PostMap`.)"""

    pat: tuple[ir.Param, ...]
    op: ir.Screma
    dead: frozenset[ir.VName]


def scan_then_map(first: ir.Stm, then: ir.Stm, later: object) -> MapInScan | None:
    """`then` as a map in `first`'s sequential loop, if `first` scans and
    `then` only maps scalars over the same rows and reads `first`'s arrays
    only at its own row (as parameters, never as free variables of its
    lambda, which would need them whole).  A thread's scan followed by a map
    of its values (tridiagonal solves) then writes one private array, not
    one per scanned value.  `later` is what follows (statements and result):
    the arrays it reads are still made."""
    scan, post = first.exp, then.exp
    if not (isinstance(scan, ir.Screma) and scan.scans and isinstance(post, ir.Screma)
            and not post.scans and not post.reds and post.w == scan.w
            and all(isinstance(t, ir.Prim) for t in post.map_lam.ret)):
        return None
    scanned, _, mapped = screma_sections(scan, first.pat)
    arrays = {p.name for p in (*scanned, *mapped)}
    read = set(post.arrs) & arrays
    made = {p.name for p in first.pat}
    if not read or (free_vars(post.map_lam) | free_vars(post.w)) & made:
        return None
    if any(isinstance(p.type, ir.ArrayT) and len(p.type.shape) != 1
           for p in first.pat if p.name in read):
        return None
    return MapInScan(then.pat, post, frozenset(read - free_vars(later)))


class KernelBuilder:
    """Translates statements into the kernel body of one SegOp.

    `out` receives kernel statements, `hoisted` the host statements that must
    run before the SegOp; `local` holds every name bound inside the kernel
    (thread indices included), which is what invariance is checked against.
    """

    def __init__(self, names: NameSource, types: dict[ir.VName, ir.Type]):
        self.names = names
        self.types = types
        self.views: dict[ir.VName, AnyView] = {}
        self.local: set[ir.VName] = set()
        self.private: set[ir.VName] = set()
        self.hoisted: list[ir.Stm] = []

    def copy(self) -> KernelBuilder:
        """An independent builder in the same state (to try a translation)."""
        other = KernelBuilder(self.names, self.types)
        other.views = dict(self.views)
        other.local = set(self.local)
        other.private = set(self.private)
        other.hoisted = list(self.hoisted)
        return other

    # --------------------------------------------------------- structure

    def branch(self, pat: tuple[ir.Param, ...], e: ir.If,
               body: Callable[[ir.Body, tuple[ir.Type, ...]], ir.Body]) -> ir.Stm:
        """The `if` statement binding `pat`, its branches translated by `body`
        (kernel or block code), the pattern shaped by the branches' results."""
        types = tuple(p.type for p in pat)
        then_ = body(e.then_, types)
        pat = self.shaped(pat, then_.result)
        else_ = self.same_shapes(pat, body(e.else_, types))
        self._bind(pat)
        return ir.Stm(pat, replace(e, then_=then_, else_=else_))

    def body(self, body: ir.Body, ret: tuple[ir.Type, ...] | None = None) -> ir.Body:
        """A kernel body computing the same values as `body`; its results
        are scalars, or private arrays where `ret` says array."""
        out: list[ir.Stm] = []
        body = fuse_body(body)
        self.stms(body.stms, out, body.result)
        results = []
        for k, r in enumerate(body.result):
            if ret is not None and isinstance(ret[k], ir.ArrayT):
                r = self.owned(r, out)
            else:
                self.require_scalar(r)
            results.append(r)
        return ir.Body(tuple(out), tuple(results))

    def stms(self, stms: tuple[ir.Stm, ...], out: list[ir.Stm],
             result: tuple[ir.SubExp, ...] | None = None) -> None:
        """Translates `stms`; given the `result` of the body they end, a
        scan followed by a map of its values is one loop (`scan_then_map`)."""
        k = 0
        while k < len(stms):
            post = None
            if result is not None and k + 1 < len(stms):
                post = scan_then_map(stms[k], stms[k + 1], (stms[k + 2:], result))
            if post is None:
                self.stm(stms[k], out)
                k += 1
            else:
                self.stms(tuple(self.screma_loop(stms[k].pat, stms[k].exp, post)), out)  # type: ignore[arg-type]
                k += 2

    def require_scalar(self, se: ir.SubExp) -> None:
        """NotKernel unless `se` is a scalar (kernel results are scalars)."""
        if isinstance(se, ir.Var) and (se.name in self.views or (
                se.name not in self.local and isinstance(self.types.get(se.name), ir.ArrayT))):
            raise NotKernel(f"{se.name} is an array")

    def bind_row(self, p: ir.Param, arr: ir.VName, idx: tuple[ir.SubExp, ...],
                 out: list[ir.Stm]) -> None:
        """Binds `p` to `arr[idx]`: an Index statement for a scalar, a view otherwise."""
        self.stm(ir.Stm((p,), ir.Index(arr, tuple(ir.DimFix(i) for i in idx))), out)

    def _bind(self, pat: tuple[ir.Param, ...]) -> None:
        """Binds scalars, and private arrays of host-known shape."""
        for p in pat:
            if isinstance(p.type, ir.ArrayT):
                if not all(d is not None and self.invariant_size(d) for d in p.type.shape):
                    raise NotKernel(f"the array {p.name} has a size known only in the thread ({p.type})")
                self.private.add(p.name)
                self.types[p.name] = p.type
            self.local.add(p.name)

    def hoist(self, stm: ir.Stm) -> None:
        """Moves `stm` to the host, once (a trial translation may hoist it first)."""
        if not any(s.pat == stm.pat for s in self.hoisted):
            self.hoisted.append(stm)

    def invariant_size(self, d: ir.SubExp) -> bool:
        return not (isinstance(d, ir.Var) and d.name in self.local)

    # --------------------------------------------------------- private arrays

    def owned(self, se: ir.SubExp, out: list[ir.Stm]) -> ir.SubExp:
        """A private array holding the array `se` (itself, or a copy of a view)."""
        if not isinstance(se, ir.Var):
            raise NotKernel("an array constant in kernel code")
        v = se.name
        if v in self.private:
            return se
        view = self.views.get(v)
        if isinstance(view, View) and view.arr in self.private and not view.dims:
            return ir.Var(view.arr)
        return ir.Var(self.materialise(v, out))

    def materialise(self, v: ir.VName, out: list[ir.Stm],
                    perm: tuple[int, ...] | None = None) -> ir.VName:
        """Copies the view (or outer array) `v`, its dimensions permuted by
        `perm` if given (`rearrange`), into a new Scratch array."""
        view = self.views.get(v, View(v, ()))
        if isinstance(view, IotaView):
            prim, shape = "i64", [view.n]
        else:
            prim = self.types[view.arr].elem  # type: ignore[union-attr]
            shape = self.view_shape(view, out)
        perm = perm or tuple(range(len(shape)))
        shape = [shape[k] for k in perm]
        t = ir.ArrayT(prim, tuple(shape))
        buf = ir.Param(self.names.fresh(f"{v.base}_copy"), t)
        stms = [ir.Stm((buf,), Scratch(prim, tuple(shape)))]
        idx = tuple(ir.Var(self.names.fresh("j")) for _ in shape)
        src_idx = [idx[0]] * len(idx)
        for k, d in enumerate(perm):
            src_idx[d] = idx[k]
        elem = ir.Param(self.names.fresh("elem"), ir.Prim(prim))
        res = ir.Param(self.names.fresh(f"{v.base}_copy"), t)
        read = ir.Stm((elem,), ir.Index(v, tuple(ir.DimFix(i) for i in src_idx)))
        stms.append(ir.Stm((res,), _write_loops(buf.name, t, idx, ir.Var(elem.name),
                                                (read,), self.names)))
        self.stms(tuple(stms), out)
        return res.name

    # --------------------------------------------------------- statements

    def stm(self, stm: ir.Stm, out: list[ir.Stm]) -> None:
        """Appends the kernel form of `stm` to `out` (or records a view, or hoists)."""
        pat, e = stm.pat, stm.exp
        match e:
            case ir.SubExpOp(ir.Var(v)) if isinstance(pat[0].type, ir.ArrayT):
                self.views[pat[0].name] = self.views.get(v, View(v, ()))
                self.local.add(pat[0].name)
            case ir.Copy(v) if v in self.private or self._private_view(v):
                self.views[pat[0].name] = View(self.materialise(v, out), ())
                self.local.add(pat[0].name)
            case ir.Copy(v):  # a copy of memory the kernel never writes: a view
                self.views[pat[0].name] = self.views.get(v, View(v, ()))
                self.local.add(pat[0].name)
            case ir.UnOp() | ir.BinOp() | ir.CmpOp() | ir.ConvOp() if self.invariant(e):
                self.hoist(stm)
            case ir.SubExpOp() if self.invariant(e):
                self.hoist(stm)
            case ir.Replicate(shape, value) if self._is_array(value):
                self.stms(self.replicate_rows(pat[0], shape, self.owned(value, out)), out)
            case ir.Replicate() | Scratch() if isinstance(pat[0].type, ir.ArrayT):
                pat = (_typed(pat[0], ir.ArrayT(pat[0].type.elem, e.shape)),)
                self._bind(pat)
                out.append(ir.Stm(pat, e))
            case ir.Concat(arrs):
                self.stms(self.concat(pat[0], arrs, out), out)
            case ir.ArrayLit(elems, elem) if elems:
                self.stms(self.array_lit(pat[0], elem, elems, out), out)
            case ir.Update(arr, sl, value, loc):
                if not all(isinstance(d, ir.DimFix) for d in sl):
                    raise NotKernel("a slice update in kernel code")
                target = self.owned(ir.Var(arr), out)
                if self._is_array(value):
                    value = self.owned(value, out)
                pat = (_typed(pat[0], self.types[target.name]),)  # type: ignore[union-attr]
                self._bind(pat)
                out.append(ir.Stm(pat, ir.Update(target.name, sl, value, loc)))  # type: ignore[union-attr]
            case ir.Assert(args=args) if len(args) > MAX_ASSERT_ARGS:
                raise NotKernel("an assertion with too many message arguments")
            case ir.SubExpOp() | ir.UnOp() | ir.BinOp() | ir.CmpOp() | ir.ConvOp() | ir.Assert():
                self._bind(pat)
                out.append(stm)
            case ir.Index(arr, sl, loc):
                self.index(pat[0], arr, sl, loc, out)
            case ir.Iota(n, start, stride):
                self.views[pat[0].name] = IotaView(n, start, stride)
                self.local.add(pat[0].name)
            case ir.ArraySize(arr, dim):
                self.size(pat[0], arr, dim, out)
            case ir.Rearrange(arr, _) if arr not in self.local:
                self.hoist(stm)
            case ir.Rearrange(arr, perm):
                self.views[pat[0].name] = View(self.materialise(arr, out, perm), ())
                self.local.add(pat[0].name)
            case ir.If():
                out.append(self.branch(pat, e, self.body))
            case ir.Loop(merge, form, body):
                merge = tuple(self._merge_param(p, init, out) for p, init in merge)
                self._bind(tuple(p for p, _ in merge))
                if isinstance(form, ir.ForLoop):
                    self.local.add(form.i)
                params = tuple(p for p, _ in merge)
                body = self.same_shapes(params, self.body(body, tuple(p.type for p in params)))
                pat = tuple(_typed(p, q.type) for p, q in zip(pat, params))
                self._bind(pat)
                out.append(ir.Stm(pat, ir.Loop(merge, form, body)))
            case ir.Screma():
                self.stms(self.screma_loop(pat, e), out)
            case _:
                raise NotKernel(f"{type(e).__name__} is not kernel code")

    def _merge_param(self, p: ir.Param, init: ir.SubExp,
                     out: list[ir.Stm]) -> tuple[ir.Param, ir.SubExp]:
        """A loop parameter and its initial value; an array one is private,
        of its initial array's shape."""
        if not isinstance(p.type, ir.ArrayT):
            return p, init
        owned = self.owned(init, out)
        return _typed(p, self.types[owned.name]), owned  # type: ignore[union-attr]

    def _is_array(self, se: ir.SubExp) -> bool:
        return isinstance(se, ir.Var) and (se.name in self.views or isinstance(
            self.types.get(se.name), ir.ArrayT))

    def shaped(self, pat: tuple[ir.Param, ...],
               results: tuple[ir.SubExp, ...]) -> tuple[ir.Param, ...]:
        """`pat` with the shapes of the private arrays in `results`."""
        return tuple(_typed(p, self.types[r.name]) if isinstance(p.type, ir.ArrayT)  # type: ignore[union-attr]
                     else p for p, r in zip(pat, results))

    def same_shapes(self, pat: tuple[ir.Param, ...], body: ir.Body) -> ir.Body:
        """`body`, checking at run time that each private array it returns has
        the shape of its place in `pat` (the buffer it is copied into), where
        the sizes have different names; the check fails only in a loop that
        changes an array's size, which a private buffer cannot follow."""
        checks: list[ir.Stm] = []
        for p, r in zip(pat, body.result):
            if not isinstance(p.type, ir.ArrayT):
                continue
            have = self.types[r.name].shape  # type: ignore[union-attr]
            for want, got in zip(p.type.shape, have):
                if want == got:
                    continue
                ok = ir.Param(self.names.fresh("same_size"), ir.Prim("bool"))
                chk = ir.Param(self.names.fresh("check"), ir.Prim("bool"))
                checks += [ir.Stm((ok,), ir.CmpOp("==", "i64", want, got)),  # type: ignore[arg-type]
                           ir.Stm((chk,), ir.Assert(
                               ir.Var(ok.name), "An array of size {0} where size {1} was "
                               "expected (a loop or if in a GPU thread may not change the "
                               "size of an array).", None, (got, want)))]  # type: ignore[arg-type]
                self.local.update((ok.name, chk.name))
        return ir.Body((*body.stms, *checks), body.result)

    def _private_view(self, v: ir.VName) -> bool:
        view = self.views.get(v)
        return isinstance(view, View) and view.arr in self.private

    def invariant(self, e: ir.Exp) -> bool:
        """Whether `e` is a scalar operation that cannot fail and reads nothing
        bound in the kernel, so it may as well run once on the host (this also
        keeps neutral elements, which SegRed takes from the host, out of the
        kernel)."""
        if isinstance(e, ir.BinOp) and e.op in _PARTIAL_BINOPS:
            return False
        return not free_vars(e) & self.local

    def index(self, p: ir.Param, arr: ir.VName, sl: tuple[ir.DimIndex, ...], loc,
              out: list[ir.Stm]) -> None:
        view = self.views.get(arr, View(arr, ()))
        if isinstance(view, IotaView):
            if len(sl) != 1 or not isinstance(sl[0], ir.DimFix):
                raise NotKernel("iota is one-dimensional")
            self._bind((p,))
            out.extend(self.iota_elem(p, view, sl[0].i))
            return
        fixed = all(isinstance(d, ir.DimFix) for d in sl)
        if fixed and not view.plain:
            self.check_view_index(view, [d.i for d in sl if isinstance(d, ir.DimFix)], loc,
                                  out)
        dims = self.compose(view, sl, out)
        if isinstance(p.type, ir.Prim):
            if not all(isinstance(d, (ir.Var, ir.Constant)) for d in dims):
                raise NotKernel("a scalar index of a view leaves a dimension open")
            self._bind((p,))
            out.append(ir.Stm((p,), ir.Index(view.arr, tuple(
                ir.DimFix(d) for d in dims), loc)))  # type: ignore[arg-type]
        else:
            self.views[p.name] = View(view.arr, dims)
            self.local.add(p.name)

    def compose(self, view: View, sl: tuple[ir.DimIndex, ...],
                out: list[ir.Stm]) -> tuple[ir.SubExp | Strided, ...]:
        """The dimensions of `view[sl]` in terms of the underlying array."""
        items = list(sl)
        dims: list[ir.SubExp | Strided] = []
        for d in view.dims:
            if isinstance(d, Strided) and items:
                item = items.pop(0)
                if isinstance(item, ir.DimFix):
                    dims.append(self.affine(d.start, item.i, d.stride, out))
                else:
                    dims.append(Strided(self.affine(d.start, item.start, d.stride, out),
                                        self.scalar("*", d.stride, item.stride, out),
                                        item.num))
            else:
                dims.append(d)
        for item in items:
            dims.append(item.i if isinstance(item, ir.DimFix)
                        else Strided(item.start, item.stride, item.num))
        return tuple(dims)

    def affine(self, start: ir.SubExp, i: ir.SubExp, stride: ir.SubExp,
               out: list[ir.Stm]) -> ir.SubExp:
        """`start + i * stride` as kernel statements."""
        return self.scalar("+", start, self.scalar("*", i, stride, out), out)

    def scalar(self, op: str, x: ir.SubExp, y: ir.SubExp, out: list[ir.Stm]) -> ir.SubExp:
        """`x op y` on i64, bound to a fresh name (hoisted when invariant)."""
        r = ir.Param(self.names.fresh("v"), I64)
        self.stm(ir.Stm((r,), ir.BinOp(op, "i64", x, y)), out)
        return ir.Var(r.name)

    def view_shape(self, view: View, out: list[ir.Stm]) -> list[ir.SubExp]:
        """The sizes of the dimensions of a view."""
        shape = [d.num for d in view.dims if isinstance(d, Strided)]
        full = self.types[view.arr].shape  # type: ignore[union-attr]
        if view.arr in self.private:  # its shape is known: no size to ask the host for
            return shape + list(full[len(view.dims):])  # type: ignore[arg-type]
        for k in range(len(view.dims), len(full)):
            n = ir.Param(self.names.fresh("n"), I64)
            self.hoist(ir.Stm((n,), ir.ArraySize(view.arr, k)))
            shape.append(ir.Var(n.name))
        return shape

    def check_view_index(self, view: View, idx: list[ir.SubExp], loc,
                         out: list[ir.Stm]) -> None:
        """An Assert that `idx` is in bounds of the view's own shape (the
        underlying array's check would miss an index past a slice's end)."""
        shape = self.view_shape(view, out)
        ok: ir.SubExp = ir.Constant(True, "bool")
        for i, n in zip(idx, shape):
            for c in (ir.CmpOp("<=", "i64", ir.Constant(0, "i64"), i),
                      ir.CmpOp("<", "i64", i, n)):
                b = ir.Param(self.names.fresh("inb"), ir.Prim("bool"))
                self.stm(ir.Stm((b,), c), out)
                both = ir.Param(self.names.fresh("inb"), ir.Prim("bool"))
                self.stm(ir.Stm((both,), ir.BinOp("&", "bool", ok, ir.Var(b.name))), out)
                ok = ir.Var(both.name)
        shown = ", ".join(f"{{{k}}}" for k in range(len(idx)))
        dims = "".join(f"[{{{len(idx) + k}}}]" for k in range(len(shape)))
        msg = f"Index [{shown}] out of bounds for array of shape {dims}."
        check = ir.Param(self.names.fresh("check"), ir.Prim("bool"))
        self.stm(ir.Stm((check,), ir.Assert(ok, msg, loc, (*idx, *shape))), out)

    def iota_elem(self, p: ir.Param, v: IotaView, i: ir.SubExp) -> list[ir.Stm]:
        """`p = start + i * stride` (just `i` for the plain `iota n`)."""
        zero, one = ir.Constant(0, "i64"), ir.Constant(1, "i64")
        if v.start == zero and v.stride == one:
            return [ir.Stm((p,), ir.SubExpOp(i))]
        t = ir.Param(self.names.fresh("t"), I64)
        self.local.add(t.name)
        return [ir.Stm((t,), ir.BinOp("*", "i64", i, v.stride)),
                ir.Stm((p,), ir.BinOp("+", "i64", v.start, ir.Var(t.name)))]

    def size(self, p: ir.Param, arr: ir.VName, dim: int, out: list[ir.Stm]) -> None:
        view = self.views.get(arr, View(arr, ()))
        if isinstance(view, IotaView):
            self._bind((p,))
            out.append(ir.Stm((p,), ir.SubExpOp(view.n)))
            return
        nums = [d.num for d in view.dims if isinstance(d, Strided)]
        if dim < len(nums):
            self.stm(ir.Stm((p,), ir.SubExpOp(nums[dim])), out)
        else:
            k = len(view.dims) + dim - len(nums)
            if view.arr in self.private:
                self.stm(ir.Stm((p,), ir.SubExpOp(
                    self.types[view.arr].shape[k])), out)  # type: ignore[union-attr,arg-type]
            else:
                self.hoist(ir.Stm((p,), ir.ArraySize(view.arr, k)))

    def screma_loop(self, pat: tuple[ir.Param, ...], e: ir.Screma,
                    post: MapInScan | None = None) -> list[ir.Stm]:
        """An inner Screma as a sequential loop over its rows: merge parameters
        are the scans' carries, the reductions' accumulators, and the arrays of
        scan and map results, each written at the row's index.  With `post`,
        the map after it runs in the same loop on each row's values, and the
        arrays only it read are not made."""
        nscan = sum(len(o.nes) for o in e.scans)
        nred = sum(len(o.nes) for o in e.reds)
        ops = [*e.scans, *e.reds]
        op_types = [p.type for o in ops for p in o.lam.params[:len(o.nes)]]
        nes = [ne for o in ops for ne in o.nes]
        array_pats = [*pat[:nscan], *pat[nscan + nred:]]  # scan results, then map results
        stms: list[ir.Stm] = []
        bufs = []
        rows = self.row_shapes(e)
        shapes = [(e.w, *rows[k if k < nscan else k + nred]) for k in range(len(array_pats))]
        if post is not None:
            array_pats += list(post.pat)
            shapes += [(e.w,)] * len(post.pat)
        for p, shape in zip(array_pats, shapes):
            t = p.type
            assert isinstance(t, ir.ArrayT)
            buf = ir.Param(self.names.fresh(f"{p.name.base}_buf"), ir.ArrayT(t.elem, shape))
            stms.append(ir.Stm((buf,), Scratch(t.elem, shape)))
            bufs.append(buf)
        i = ir.Var(self.names.fresh("i"))
        carries = [ir.Param(self.names.fresh("acc"), t) for t in op_types]
        arrays = [ir.Param(self.names.fresh(b.name.base), b.type) for b in bufs]
        body: list[ir.Stm] = [ir.Stm((p,), ir.Index(a, (ir.DimFix(i),)))
                              for p, a in zip(e.map_lam.params, e.arrs)]
        body += e.map_lam.body.stms
        values = list(e.map_lam.body.result)
        new_carries: list[ir.SubExp] = []
        for o in ops:
            n = len(o.nes)
            args = [ir.Var(c.name) for c in carries[len(new_carries):len(new_carries) + n]]
            body += [ir.Stm((q,), ir.SubExpOp(a)) for q, a in zip(o.lam.params, [*args, *values[:n]])]
            body += o.lam.body.stms
            new_carries += o.lam.body.result
            values = values[n:]
        written = [*new_carries[:nscan], *values]
        if post is not None:
            row = dict(zip((p.name for p in array_pats), written))
            body += [ir.Stm((q,), ir.SubExpOp(row[a]) if a in row else
                            ir.Index(a, (ir.DimFix(i),)))
                     for q, a in zip(post.op.map_lam.params, post.op.arrs)]
            body += post.op.map_lam.body.stms
            written += post.op.map_lam.body.result
        kept = [k for k, p in enumerate(array_pats) if post is None or p.name not in post.dead]
        new_arrays = []
        for k in kept:
            a = arrays[k]
            new = ir.Param(self.names.fresh(a.name.base), a.type)
            body.append(ir.Stm((new,), ir.Update(a.name, (ir.DimFix(i),), written[k])))
            new_arrays.append(ir.Var(new.name))
        loop_pat = (*(ir.Param(self.names.fresh("scan_acc"), t) for t in op_types[:nscan]),
                    *pat[nscan:nscan + nred], *(array_pats[k] for k in kept))
        loop = ir.Loop(tuple(zip(carries, nes)) + tuple(
                           (arrays[k], ir.Var(bufs[k].name)) for k in kept),
                       ir.ForLoop(i.name, "i64", e.w),
                       ir.Body(tuple(body), (*new_carries, *new_arrays)))
        return [*(stms[k] for k in kept), ir.Stm(loop_pat, loop)]

    def array_lit(self, p: ir.Param, elem: ir.Type, elems: tuple[ir.SubExp, ...],
                  out: list[ir.Stm]) -> list[ir.Stm]:
        """`[a, b, ...]` as a private array written row by row (the rows are
        scalars, or arrays of one shape)."""
        row: tuple[ir.SubExp, ...] = ()
        if isinstance(elem, ir.ArrayT):
            elems = tuple(self.owned(x, out) for x in elems)
            row = self.types[elems[0].name].shape  # type: ignore[union-attr,assignment]
            prim = elem.elem
        else:
            prim = elem.name  # type: ignore[union-attr]
        t = ir.ArrayT(prim, (ir.Constant(len(elems), "i64"), *row))
        cur = ir.Param(self.names.fresh(f"{p.name.base}_lit"), t)
        stms = [ir.Stm((cur,), Scratch(prim, t.shape))]  # type: ignore[arg-type]
        for k, x in enumerate(elems):
            nxt = _typed(p, t) if k == len(elems) - 1 else ir.Param(
                self.names.fresh(cur.name.base), t)
            stms.append(ir.Stm((nxt,), ir.Update(
                cur.name, (ir.DimFix(ir.Constant(k, "i64")),), x)))
            cur = nxt
        return stms

    def replicate_rows(self, p: ir.Param, shape: tuple[ir.SubExp, ...],
                       row: ir.SubExp) -> list[ir.Stm]:
        """`replicate shape row` of an array `row`, row by row into a private array."""
        row_t = self.types[row.name]  # type: ignore[union-attr]
        t = ir.ArrayT(row_t.elem, (*shape, *row_t.shape))  # type: ignore[union-attr]
        buf = ir.Param(self.names.fresh(f"{p.name.base}_rep"), t)
        idx = tuple(ir.Var(self.names.fresh("j")) for _ in shape)
        return [ir.Stm((buf,), Scratch(t.elem, t.shape)),  # type: ignore[arg-type]
                ir.Stm((_typed(p, t),), _write_loops(buf.name, t, idx, row, (), self.names))]

    def concat(self, p: ir.Param, arrs: tuple[ir.VName, ...],
               out: list[ir.Stm]) -> list[ir.Stm]:
        """`concat` of arrays along their first dimension, into a private
        array: one loop per part copying its rows after the previous parts."""
        parts = [self.owned(ir.Var(a), out) for a in arrs]
        shapes = [self.types[q.name].shape for q in parts]  # type: ignore[union-attr]
        total: ir.SubExp = shapes[0][0]
        offsets = [total]
        for sh in shapes[1:]:
            total = self.scalar("+", total, sh[0], out)
            offsets.append(total)
        t = ir.ArrayT(self.types[parts[0].name].elem, (total, *shapes[0][1:]))  # type: ignore[union-attr]
        cur = ir.Param(self.names.fresh(f"{p.name.base}_cat"), t)
        stms = [ir.Stm((cur,), Scratch(t.elem, t.shape))]  # type: ignore[arg-type]
        start: ir.SubExp = ir.Constant(0, "i64")
        for k, (q, sh) in enumerate(zip(parts, shapes)):
            j = ir.Var(self.names.fresh("j"))
            at = ir.Param(self.names.fresh("at"), I64)
            row = ir.Param(self.names.fresh("row"), ir.ArrayT(t.elem, sh[1:]) if len(sh) > 1
                           else ir.Prim(t.elem))
            acc = ir.Param(self.names.fresh(cur.name.base), t)
            new = ir.Param(self.names.fresh(cur.name.base), t)
            nxt = _typed(p, t) if k == len(parts) - 1 else ir.Param(
                self.names.fresh(cur.name.base), t)
            body = ir.Body((ir.Stm((at,), ir.BinOp("+", "i64", start, j)),
                            ir.Stm((row,), ir.Index(q.name, (ir.DimFix(j),))),  # type: ignore[union-attr]
                            ir.Stm((new,), ir.Update(acc.name, (ir.DimFix(ir.Var(at.name)),),
                                                     ir.Var(row.name)))),
                           (ir.Var(new.name),))
            stms.append(ir.Stm((nxt,), ir.Loop(((acc, ir.Var(cur.name)),),
                                               ir.ForLoop(j.name, "i64", sh[0]), body)))
            cur, start = nxt, offsets[k]
        return stms

    def row_shapes(self, e: ir.Screma) -> list[tuple[ir.SubExp, ...]]:
        """The shape of each value the map lambda of `e` returns: its type's,
        or where that leaves a size open, the private array a trial
        translation of the lambda makes."""
        rets = e.map_lam.ret
        if all(not isinstance(t, ir.ArrayT) or None not in t.shape for t in rets):
            return [getattr(t, "shape", ()) for t in rets]
        trial = self.copy()
        i = ir.Var(self.names.fresh("i"))
        trial.local.add(i.name)
        stms: list[ir.Stm] = []
        for p, a in zip(e.map_lam.params, e.arrs):
            trial.bind_row(p, a, (i,), stms)
        body = trial.body(e.map_lam.body, rets)
        self.hoisted = trial.hoisted  # what the shapes may name
        return [trial.types[r.name].shape if isinstance(t, ir.ArrayT) else ()  # type: ignore[union-attr]
                for t, r in zip(rets, body.result)]

    def op_lambda(self, lam: ir.Lambda) -> ir.Lambda:
        """The kernel form of a SegRed/SegScan operator (scalar parameters only)."""
        self._bind(lam.params)
        if not all(isinstance(t, ir.Prim) for t in lam.ret):
            raise NotKernel("an operator on arrays")
        return replace(lam, body=self.body(lam.body))


def commutative_operator(lam: ir.Lambda) -> bool:
    """Whether `lam` is one built-in operator that the operator table says is
    commutative (`+`, `*`, `max`, ...): then a reduction may combine elements
    in any order, which lets kernels read memory coalesced."""
    from futgen_runtime.prims import BINOPS

    op = ir.lambda_binop(lam)
    return op is not None and BINOPS[op.op].commutative
