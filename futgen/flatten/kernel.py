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
* **Inner SOACs become loops.**  After vertical fusion (`fusion.fuse_body`), a
  Screma with reductions and no array results is a sequential `Loop` whose
  merge parameters are the accumulators; it reads its input rows through
  views.  Anything else that would make an array (scans and maps with array
  results, scatter, hist, literals, updates) raises `NotKernel`.
* **Invariant work is hoisted**: `size` of a view, `rearrange` of an array
  bound outside the kernel and scalar operations that cannot fail, when they
  do not depend on the thread, move to the host in front of the SegOp.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from futgen.core import ir
from futgen.flatten.fusion import fuse_body
from futgen.flatten.names import NameSource, free_vars
from futgen.gpu.ir import MAX_ASSERT_ARGS

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
            stms.append(ir.Stm(stm.pat, _inline_exp(e, funs, names)))
    return ir.Body(tuple(stms), body.result)


def _inline_exp(e: ir.Exp, funs: dict[str, ir.Function], names: NameSource) -> ir.Exp:
    def lam(f: ir.Lambda) -> ir.Lambda:
        return replace(f, body=inline(f.body, funs, names))

    match e:
        case ir.If():
            return replace(e, then_=inline(e.then_, funs, names),
                           else_=inline(e.else_, funs, names))
        case ir.Loop():
            return replace(e, body=inline(e.body, funs, names))
        case ir.Screma():
            return replace(e, map_lam=lam(e.map_lam),
                           scans=tuple(replace(s, lam=lam(s.lam)) for s in e.scans),
                           reds=tuple(replace(r, lam=lam(r.lam)) for r in e.reds))
        case ir.Scatter():
            return replace(e, lam=lam(e.lam))
        case ir.Hist():
            return replace(e, lam=lam(e.lam),
                           ops=tuple(replace(o, lam=lam(o.lam)) for o in e.ops))
    return e


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
        self.hoisted: list[ir.Stm] = []

    def copy(self) -> KernelBuilder:
        """An independent builder in the same state (to try a translation)."""
        other = KernelBuilder(self.names, self.types)
        other.views = dict(self.views)
        other.local = set(self.local)
        other.hoisted = list(self.hoisted)
        return other

    # --------------------------------------------------------- structure

    def body(self, body: ir.Body) -> ir.Body:
        """A kernel body computing the same scalars as `body`."""
        out: list[ir.Stm] = []
        body = fuse_body(body)
        self.stms(body.stms, out)
        for r in body.result:
            self.require_scalar(r)
        return ir.Body(tuple(out), body.result)

    def stms(self, stms: tuple[ir.Stm, ...], out: list[ir.Stm]) -> None:
        for stm in stms:
            self.stm(stm, out)

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
        for p in pat:
            if not isinstance(p.type, ir.Prim):
                raise NotKernel(f"{p.name} would be an array in kernel code")
            self.local.add(p.name)

    # --------------------------------------------------------- statements

    def stm(self, stm: ir.Stm, out: list[ir.Stm]) -> None:
        """Appends the kernel form of `stm` to `out` (or records a view, or hoists)."""
        pat, e = stm.pat, stm.exp
        match e:
            case ir.SubExpOp(ir.Var(v)) | ir.Copy(v) if isinstance(pat[0].type, ir.ArrayT):
                self.views[pat[0].name] = self.views.get(v, View(v, ()))
                self.local.add(pat[0].name)
            case ir.UnOp() | ir.BinOp() | ir.CmpOp() | ir.ConvOp() if self.invariant(e):
                self.hoisted.append(stm)
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
                self.hoisted.append(stm)
            case ir.If(cond, then_, else_, ret):
                self._bind(pat)
                out.append(ir.Stm(pat, ir.If(cond, self.body(then_), self.body(else_), ret)))
            case ir.Loop(merge, form, body):
                self._bind(tuple(p for p, _ in merge))
                if isinstance(form, ir.ForLoop):
                    self.local.add(form.i)
                self._bind(pat)
                out.append(ir.Stm(pat, ir.Loop(merge, form, self.body(body))))
            case ir.Screma():
                self.sequential_screma(pat, e, out)
            case _:
                raise NotKernel(f"{type(e).__name__} is not kernel code")

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
        rank = len(self.types[view.arr].shape)  # type: ignore[union-attr]
        for k in range(len(view.dims), rank):
            n = ir.Param(self.names.fresh("n"), I64)
            self.hoisted.append(ir.Stm((n,), ir.ArraySize(view.arr, k)))
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
            self.hoisted.append(ir.Stm((p,), ir.ArraySize(view.arr, k)))

    def sequential_screma(self, pat: tuple[ir.Param, ...], e: ir.Screma,
                          out: list[ir.Stm]) -> None:
        """A reduction Screma as a loop over its rows, accumulating in merge parameters."""
        if e.scans or len(e.map_lam.ret) != sum(len(r.nes) for r in e.reds):
            raise NotKernel("a scan or map inside kernel code makes an array")
        self._bind(pat)
        i = self.names.fresh("i")
        accs = tuple(ir.Param(self.names.fresh("acc"), p.type) for p in pat)
        self._bind(accs)
        self.local.add(i)
        stms: list[ir.Stm] = []
        for p, a in zip(e.map_lam.params, e.arrs):
            self.bind_row(p, a, (ir.Var(i),), stms)
        mapped = self.body(e.map_lam.body)
        stms += mapped.stms
        vals, acc_vars, results = list(mapped.result), [ir.Var(a.name) for a in accs], []
        for r in e.reds:
            n = len(r.nes)
            args = acc_vars[:n] + vals[:n]
            acc_vars, vals = acc_vars[n:], vals[n:]
            for q, a in zip(r.lam.params, args):
                self.stm(ir.Stm((q,), ir.SubExpOp(a)), stms)
            op = self.body(r.lam.body)
            stms += op.stms
            results += op.result
        loop = ir.Loop(tuple(zip(accs, (ne for r in e.reds for ne in r.nes))),
                       ir.ForLoop(i, "i64", e.w), ir.Body(tuple(stms), tuple(results)))
        out.append(ir.Stm(pat, loop))

    def op_lambda(self, lam: ir.Lambda) -> ir.Lambda:
        """The kernel form of a SegRed/SegScan operator (scalar parameters only)."""
        self._bind(lam.params)
        if not all(isinstance(t, ir.Prim) for t in lam.ret):
            raise NotKernel("an operator on arrays")
        return replace(lam, body=self.body(lam.body))
