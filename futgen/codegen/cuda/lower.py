"""Lowering kernel code (core IR restricted as `futgen.gpu.ir` says) to ImpCode.

A `KernelLowering` lowers the bodies and operator lambdas that go into one
kernel.  It finds the kernel's free variables as it goes: a variable not
bound inside the kernel is a host variable, so it becomes a kernel parameter
(scalars by value, arrays as device pointers plus one int64 per dimension)
whose host-side value is the printed VName (`KernelLowering.params`).

Run-time checks (bounds, division by zero, negative exponents, assertions)
become `Fail` statements whose codes and Futhark messages are recorded in
`ErrorTable`; the host turns a code back into `FutharkError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from futgen.codegen.cuda import imp, scalar
from futgen.codegen.cuda.imp import Bin, Cast, Expr, Fail, Lit, Stm
from futgen.codegen.cuda.private import ZERO, Buffer, PrivateMemory, product, row_major
from futgen.codegen.plan import CTYPES, ErrorSite, KArg
from futgen.codegen.pysrc import pyname
from futgen.core import ir
from futgen.gpu.ir import Scratch

_SIGNED_DIVISIONS = ("/", "%", "//", "%%")

# Where a body result goes: a scalar variable, a private buffer, or a function
# storing a private array result elsewhere (a SegMap's output row).
Out = str | Buffer | Callable[[Buffer], list[Stm]]


def c_name(v: ir.VName) -> str:
    """A C identifier for a VName, the same as the host code's Python name
    (so a kernel plan's host expressions name host variables); the tag keeps
    it clear of C keywords."""
    return pyname(v)


class ErrorTable:
    """The error sites of a program: codes from a shared counter, so unique."""

    def __init__(self, codes: Iterator[int]):
        self.codes = codes
        self.sites: list[ErrorSite] = []

    def site(self, message: str, loc: object | None) -> int:
        """A new error site; `message` is a str.format template over the arguments."""
        code = next(self.codes)
        self.sites.append(ErrorSite(code, message, "" if loc is None else str(loc)))
        return code


# Index arithmetic in 32 bits.  A kernel lowered with `index_type` set to
# INDEX_MACRO is compiled twice (FUTGEN_IDX int32_t, then int64_t) and the
# host launches the narrow one where every int64 parameter, every array and
# the space have at most NARROW_LIMIT elements (`common.narrow_when`).  Its i64
# values known to lie within NARROW_WEIGHT * NARROW_LIMIT + NARROW_CONSTANT
# of 0 (thread indices, parameters, sums of a few such and small constants)
# are declared FUTGEN_IDX: they then fit in an int32_t.  Other i64 values
# stay int64_t, and i64 operations (`fut_add_i64`, ...) still compute in 64
# bits, so nothing else changes; a row-major index over narrow values stays
# below its array's length.
INDEX_MACRO = "FUTGEN_IDX"
NARROW_WEIGHT, NARROW_CONSTANT = 4, 1 << 20
NARROW_LIMIT = (2**31 - 1 - NARROW_CONSTANT) // NARROW_WEIGHT
Bound = tuple[int, int]  # |v| <= weight * NARROW_LIMIT + constant


class KernelLowering:
    """Lowers kernel code into one kernel, collecting its parameters.

    Args:
        types: types of the host variables in scope (arrays and scalars).
        errors: the program's error table.
        fresh: makes unique C names (for temporaries and labels).
    """

    def __init__(self, types: dict[ir.VName, ir.Type], errors: ErrorTable,
                 fresh: Callable[[str], str],
                 sizes: Mapping[tuple[ir.VName, int], ir.VName] | None = None,
                 defs: Mapping[ir.VName, ir.Exp] | None = None):
        self.types = types
        self.errors = errors
        self.fresh = fresh
        # (array, dim) -> a host variable holding that size (see compile_segop).
        self.sizes = sizes or {}
        # Host scalars -> the expressions that define them (see compile_segop):
        # `n = m` makes a bound `n` and a size `m` one, `k = n - 1` makes
        # `i < k` say `i + 1 < n`.
        self.defs = defs or {}
        # Variables known to lie in [0, bound): thread indices, loop counters.
        # An index so bounded by the very size of the dimension it indexes
        # needs no bounds check.
        self.ranges: dict[ir.VName, ir.SubExp] = {}
        # Variables known to lie in [1, bound]: `n - i` for `i` in [0, n), an
        # index in [0, n) where `0 < i` holds.  One less, they are in [0, n):
        # `a[i - 1]` under `if 0 < i`, `a[n - i - 1]` need no bounds check.
        self.ranges_from_one: dict[ir.VName, ir.SubExp] = {}
        # Variables known to lie in [0, bound - 1), as under `if i < n - 1`:
        # one more, they are in [0, bound): `a[i + 1]` needs no bounds check.
        self.ranges_below_last: dict[ir.VName, ir.SubExp] = {}
        # `-i` for `i` in [0, bound): `n - 1 - i` is in [0, n) again.
        self.ranges_negated: dict[ir.VName, ir.SubExp] = {}
        self.true: set[ir.VName] = set()  # booleans known true (`_holds`)
        self.comparisons: dict[ir.VName, ir.CmpOp] = {}  # the conditions `_if` may use
        # Set while lowering reads whose indices a check elsewhere covered
        # (`indices_checked`).
        self.in_bounds = False
        self.local: set[ir.VName] = set()
        self.local_types: dict[ir.VName, ir.Type] = {}
        self.params: dict[str, tuple[imp.KParam, KArg]] = {}
        self.escape: str | None = None
        self.escaped = False
        self.fail_flag: str | None = None  # set by a failure that escapes (`Fail.flag`)
        self.mem: PrivateMemory | None = None  # set by kernels whose threads have arrays
        # Set by kernels that stage some reads in shared memory: the staged
        # value of `arr[sl]`, or None where it is read from global memory.
        self.staged: Callable[[ir.VName, tuple[ir.DimIndex, ...]], Expr | None] | None = None
        # The C type of the kernel's indices: int64_t, or INDEX_MACRO where the
        # kernel is compiled in both widths; then `narrow` bounds its i64
        # variables declared in that type.
        self.index_type = "int64_t"
        self.narrow: dict[ir.VName, Bound] = {}
        # Set by a kernel whose threads run the points of a space by a flat
        # index: (flat, its gtids, its dims).  A read of an array of the
        # space's shape at `gtid + c` in each dimension is then at `flat`
        # plus a constant offset (a stencil's neighbours), not at a
        # row-major index computed again; `offsets` holds the i64 values
        # known to be `gtid + c` (gtid, c).
        self.flat_space: tuple[Expr, Sequence[ir.VName], Sequence[ir.SubExp]] | None = None
        self.offsets: dict[ir.VName, tuple[ir.VName, int]] = {}

    # ---------------------------------------------------------- parameters

    def add_param(self, cname: str, ctype: str, pointer: bool, host: str) -> str:
        """A kernel parameter (once per name); returns its C name."""
        if cname not in self.params:
            self.params[cname] = (imp.KParam(ctype, cname, pointer),
                                  KArg("array" if pointer else "scalar", ctype, host))
        return cname

    def bind(self, v: ir.VName, t: ir.Type) -> str:
        """Marks `v` as bound inside the kernel; returns its C name."""
        self.local.add(v)
        self.local_types[v] = t
        return c_name(v)

    def type_of(self, v: ir.VName) -> ir.Type:
        if v in self.local_types:
            return self.local_types[v]
        return self.types.get(v, ir.Prim("i64"))

    def var(self, v: ir.VName) -> Expr:
        """A variable's value: a local, or a host scalar made a parameter."""
        if v not in self.local:
            t = self.type_of(v)
            if not isinstance(t, ir.Prim):
                raise NotImplementedError(f"array {v} used as a scalar in kernel code")
            self.add_param(c_name(v), CTYPES[t.name], False, c_name(v))
        return imp.Var(c_name(v))

    def subexp(self, se: ir.SubExp) -> Expr:
        if isinstance(se, ir.Constant):
            return scalar.constant(se.value, se.prim)
        return self.var(se.name)

    def size(self, d: ir.SubExp | None, arr: ir.VName, k: int) -> Expr:
        """Dimension `k` of host array `arr`, as an int64 kernel value."""
        if isinstance(d, ir.Constant):
            fits = abs(int(d.value)) <= NARROW_LIMIT  # else only the 64-bit variant runs
            return Lit(f"({self.index_type if fits else 'int64_t'}){int(d.value)}")
        if isinstance(d, ir.Var):
            return self.var(d.name)
        name = self.add_param(f"{c_name(arr)}_dim{k}", "int64_t", False,
                              f"{c_name(arr)}.shape[{k}]")
        return imp.Var(name)

    def dims_of(self, arr: ir.VName) -> list[ir.SubExp | None]:
        """The dimensions of host array `arr` as sizes, where known: its
        type's, else a host variable bound to them (None otherwise)."""
        t = self.types[arr]
        assert isinstance(t, ir.ArrayT), arr
        return [d if d is not None else
                (ir.Var(self.sizes[(arr, k)]) if (arr, k) in self.sizes else None)
                for k, d in enumerate(t.shape)]

    def array(self, v: ir.VName) -> tuple[str, str, list[Expr]]:
        """A host array used in the kernel: its C name, element type and dimensions."""
        t = self.types[v]
        if not isinstance(t, ir.ArrayT):
            raise NotImplementedError(f"{v} is indexed but is not an array")
        cname = self.add_param(c_name(v), CTYPES[t.elem], True, c_name(v))
        return cname, t.elem, [self.size(d, v, k) for k, d in enumerate(self.dims_of(v))]

    # ------------------------------------------------------------- regions

    def region(self, bindings: Sequence[tuple[ir.Param, Expr]], body: ir.Body,
               outs: Sequence[str], escape: str | None) -> list[Stm]:
        """`body` with parameters bound, its results assigned to `outs`.

        With `escape` a label name, a failure jumps past the region (the
        caller's kernel has barriers every thread must reach); with None it
        returns from the kernel.  The region is a C block so the jump leaves
        every declaration behind.
        """
        saved, self.escape, self.escaped = (self.escape, self.escaped), escape, False
        stms: list[Stm] = []
        for p, value in bindings:
            assert isinstance(p.type, ir.Prim), p
            stms.append(imp.Decl(CTYPES[p.type.name], self.bind(p.name, p.type), value, True))
        stms += self.body(body, outs)
        out: list[Stm] = [imp.Block(tuple(stms))]
        if escape is not None and self.escaped:
            out.append(imp.Label(escape))
        self.escape, self.escaped = saved
        return out

    def body(self, body: ir.Body, outs: Sequence[Out]) -> list[Stm]:
        """`body`'s statements, then its results stored in `outs`: scalar
        variables, the buffers of private array results, or functions that
        store a private array result elsewhere."""
        stms = self.statements(body)
        staged: list[Stm] = []
        for o, r in zip(outs, body.result, strict=True):
            if isinstance(o, str):
                stms.append(imp.Assign(o, self.subexp(r)))
                continue
            src = self.buffer(r)
            if not isinstance(o, Buffer):
                staged += o(src)
                continue
            if any(isinstance(x, Buffer) and x.ptr == src.ptr and x is not o for x in outs):
                # a swap of loop arrays: go through a buffer of its own first
                tmp = self._mem().new(self.fresh_name("swap"), ir.ArrayT(o.prim, o.shape))
                stms += self._copy(tmp, src)
                src = tmp
            staged += self._copy(o, src)
        return stms + staged

    def statements(self, body: ir.Body) -> list[Stm]:
        """`body`'s statements (a kernel kind may lower some together)."""
        return [c for s in body.stms for c in self.stm(s)]

    def fail(self, message: str, loc: object | None, args: Sequence[Expr]) -> Fail:
        self.escaped = True
        flag = self.fail_flag if self.escape is not None else None
        return Fail(self.errors.site(message, loc), tuple(args), self.escape, flag)

    # ---------------------------------------------------------- statements

    def stm(self, s: ir.Stm) -> list[Stm]:
        pat = s.pat
        match s.exp:
            case ir.If(cond, then_, else_, _):
                return self._if(pat, cond, then_, else_)
            case ir.Loop(merge, form, body):
                return self._loop(pat, merge, form, body)
            case Scratch():
                self._mem().new(pat[0].name, pat[0].type)  # type: ignore[arg-type]
                return []
            case ir.Replicate(_, value):
                buf = self._mem().new(pat[0].name, pat[0].type)  # type: ignore[arg-type]
                return self._mem().fill(buf, self._elems(buf), self.subexp(value), self.fresh)
            case ir.Update(arr, sl, value, loc):
                return self._update(pat[0], arr, sl, value, loc)
            case _:
                (p,) = pat
                self._note_range(p.name, s.exp)
                return self._scalar(p, s.exp)

    def _note_offset(self, v: ir.VName, e: ir.Exp) -> None:
        """Whether i64 `v = e` is a thread index plus a constant (`offsets`)."""
        match e:
            case ir.SubExpOp(ir.Var(x)) if x in self.offsets:
                self.offsets[v] = self.offsets[x]
            case ir.BinOp("+" | "-" as op, "i64", ir.Var(x), ir.Constant(c)) if x in self.offsets:
                g, k = self.offsets[x]
                self.offsets[v] = (g, k + int(c) if op == "+" else k - int(c))
            case ir.BinOp("+", "i64", ir.Constant(c), ir.Var(x)) if x in self.offsets:
                g, k = self.offsets[x]
                self.offsets[v] = (g, k + int(c))

    def _note_range(self, v: ir.VName, e: ir.Exp) -> None:
        """What the scalar `v = e` is known to lie in, from its operands' ranges."""
        self._note_offset(v, e)
        match e:
            case ir.SubExpOp(ir.Var(x)):  # a copy keeps its range
                if x in self.ranges:
                    self.ranges[v] = self.ranges[x]
                if x in self.ranges_from_one:
                    self.ranges_from_one[v] = self.ranges_from_one[x]
            case ir.BinOp("-", _, ir.Var(x), ir.Constant(1)) if x in self.ranges_from_one:
                self.ranges[v] = self.ranges_from_one[x]
            case ir.BinOp("+", _, ir.Var(x), ir.Constant(1)) if x in self.ranges_below_last:
                self.ranges[v] = self.ranges_below_last[x]
            case ir.BinOp("-", _, n, ir.Var(i)) if self.same_size(self.ranges.get(i), n):
                self.ranges_from_one[v] = n
            case ir.BinOp("*", _, ir.Var(i), ir.Constant(-1)) if i in self.ranges:
                self.ranges_negated[v] = self.ranges[i]
            case (ir.BinOp("+", _, k, ir.Var(x)) | ir.BinOp("+", _, ir.Var(x), k)) if (
                    x in self.ranges_negated and self._last_index(k, self.ranges_negated[x])):
                self.ranges[v] = self.ranges_negated[x]  # `n - 1 - i`: a reversed index
            case ir.CmpOp():
                self.comparisons[v] = e
        if self._holds(e):
            self.true.add(v)

    def _holds(self, e: ir.Exp) -> bool:
        """Whether the boolean `e` is known true: a bounds test of an index
        known in bounds, or a conjunction of such (a view's index check)."""
        match e:
            case ir.CmpOp("<=", _, ir.Constant(0), ir.Var(i)):
                return i in self.ranges
            case ir.CmpOp("<", _, ir.Var(i), n):
                return self.same_size(self.ranges.get(i), n)
            case ir.BinOp("&", "bool", x, y):
                return self._true(x) and self._true(y)
        return False

    def _true(self, se: ir.SubExp) -> bool:
        return se == ir.Constant(True, "bool") or (isinstance(se, ir.Var) and se.name in self.true)

    def _last_index(self, k: ir.SubExp, n: ir.SubExp) -> bool:
        """Whether `k` is `n - 1`."""
        match self._defined(k):
            case ir.BinOp("-", _, m, ir.Constant(1)):
                return self.same_size(m, n)
        return False

    def _scalar(self, p: ir.Param, e: ir.Exp) -> list[Stm]:
        checks, value = self.exp(e)
        ctype = CTYPES[p.type.name]
        if ctype == "int64_t" and self.index_type != ctype:
            bound = _narrow_exp(e, self._narrow_bound)
            if bound is not None:
                self.narrow[p.name] = bound
                ctype = self.index_type
        return [*checks, imp.Decl(ctype, self.bind(p.name, p.type), value, True)]

    def bind_index(self, v: ir.VName) -> tuple[str, str]:
        """Binds thread or loop index `v` (below a dimension of the space):
        its C type and name."""
        if self.index_type != "int64_t":
            self.narrow[v] = (1, 0)
        self.offsets[v] = (v, 0)
        return self.index_type, self.bind(v, ir.Prim("i64"))

    def _narrow_bound(self, se: ir.SubExp) -> Bound | None:
        """The bound of i64 `se` in a kernel compiled in both widths: a
        parameter's is the launch guard's, NARROW_LIMIT."""
        if isinstance(se, ir.Constant):
            small = se.prim == "i64" and abs(int(se.value)) <= NARROW_CONSTANT
            return (0, abs(int(se.value))) if small else None
        if se.name in self.narrow:
            return self.narrow[se.name]
        local = se.name in self.local
        return (1, 0) if not local and self.type_of(se.name) == ir.Prim("i64") else None

    def _declare(self, pat: Sequence[ir.Param]) -> list[Stm]:
        return [imp.Decl(CTYPES[p.type.name], self.bind(p.name, p.type), None, True)
                for p in pat if isinstance(p.type, ir.Prim)]

    def _if(self, pat: tuple[ir.Param, ...], cond: ir.SubExp, then_: ir.Body,
            else_: ir.Body) -> list[Stm]:
        c = self.subexp(cond)
        decls = self._declare(pat)
        outs = [c_name(p.name) if isinstance(p.type, ir.Prim)
                else self._mem().new(p.name, p.type) for p in pat]  # type: ignore[arg-type]
        self.local.update(p.name for p in pat)
        positive = self._positive_index(cond)
        below_last = self._index_below_last(cond)
        saved = dict(self.ranges_from_one), dict(self.ranges_below_last)
        if positive is not None:  # in the branch taken where it holds, it lies in [1, n)
            self.ranges_from_one[positive] = self.ranges[positive]
        if below_last is not None:  # there it lies in [0, n - 1)
            self.ranges_below_last[below_last] = self.ranges[below_last]
        then_stms = tuple(self.body(then_, outs))
        self.ranges_from_one, self.ranges_below_last = saved
        return [*decls, imp.If(c, then_stms, tuple(self.body(else_, outs)))]

    def _positive_index(self, cond: ir.SubExp) -> ir.VName | None:
        """The index in `ranges` that `cond` says is positive (`0 < i`,
        `i > 0`, `1 <= i`, `i >= 1`), if it is such a comparison."""
        if not isinstance(cond, ir.Var):
            return None
        match self.comparisons.get(cond.name):
            case (ir.CmpOp("<", _, ir.Constant(0), ir.Var(i)) | ir.CmpOp(">", _, ir.Var(i), ir.Constant(0))
                  | ir.CmpOp("<=", _, ir.Constant(1), ir.Var(i))
                  | ir.CmpOp(">=", _, ir.Var(i), ir.Constant(1))):
                return i if i in self.ranges else None
        return None

    def _index_below_last(self, cond: ir.SubExp) -> ir.VName | None:
        """The index `i` in `ranges` (below `n`) that `cond` says is below
        `n - 1` (`i < k` or `k > i`, `k` being `n - 1`), if it says so."""
        if not isinstance(cond, ir.Var):
            return None
        match self.comparisons.get(cond.name):
            case ir.CmpOp("<", _, ir.Var(i), k) | ir.CmpOp(">", _, k, ir.Var(i)):
                n = self.ranges.get(i)
                if n is not None and self._last_index(k, n):
                    return i
        return None

    def _defined(self, se: ir.SubExp) -> ir.Exp | None:
        """The host definition of `se`, past copies."""
        root = self._root(se)
        return self.defs.get(root.name) if isinstance(root, ir.Var) else None

    def same_size(self, a: ir.SubExp | None, b: ir.SubExp | None) -> bool:
        """Whether sizes `a` and `b` are one value: the same, or host copies of one."""
        return a is not None and b is not None and self._root(a) == self._root(b)

    def _root(self, se: ir.SubExp) -> ir.SubExp:
        """`se`, or the value it is a host copy of."""
        while isinstance(se, ir.Var):
            e = self.defs.get(se.name)
            if not isinstance(e, ir.SubExpOp):
                break
            se = e.se
        return se

    # ---------------------------------------------------------- private arrays

    def _mem(self) -> PrivateMemory:
        if self.mem is None:
            raise NotImplementedError("private arrays outside a SegMap kernel")
        return self.mem

    def buffer(self, se: ir.SubExp) -> Buffer:
        assert isinstance(se, ir.Var), se
        return self._mem().arrays[se.name]

    def fresh_name(self, base: str) -> ir.VName:
        return ir.VName(self.fresh(base), 0)

    def _elems(self, buf: Buffer) -> Expr:
        return product([self.subexp(d) for d in buf.shape])

    def _copy(self, dst: Buffer, src: Buffer, offset: Expr = ZERO) -> list[Stm]:
        return self._mem().copy(dst, src, self._elems(src), self.fresh, offset)

    def _update(self, p: ir.Param, arr: ir.VName, sl: tuple[ir.DimIndex, ...],
                value: ir.SubExp, loc: object | None) -> list[Stm]:
        """`p = arr with [sl] = value`, in `arr`'s buffer (a row copy for an array value)."""
        buf = self._mem().arrays[arr]
        self._mem().bind(p.name, buf)
        self.local.add(p.name)
        stms, flat = self._private_index(buf, sl, loc)
        if isinstance(value, ir.Var) and value.name in self._mem().arrays:
            src = self._mem().arrays[value.name]
            row = product([self.subexp(d) for d in buf.shape[len(sl):]])
            return stms + self._copy(buf, src, Bin("*", flat, row))
        return [*stms, self._mem().store(buf, flat, self.subexp(value))]

    def _private_index(self, buf: Buffer, sl: tuple[ir.DimIndex, ...],
                       loc: object | None) -> tuple[list[Stm], Expr]:
        """Bounds checks of fixed indices `sl` into a private array, and the
        flat (row-major) index of the element or row they give."""
        dims = [self.subexp(d) for d in buf.shape]
        return self._checked_flat(buf.ptr, sl, dims[:len(sl)], dims, loc, list(buf.shape))

    def _loop(self, pat: tuple[ir.Param, ...], merge: tuple[tuple[ir.Param, ir.SubExp], ...],
              form: ir.LoopForm, body: ir.Body) -> list[Stm]:
        stms: list[Stm] = []
        params: list[str | Buffer] = []
        if self.mem is not None:
            self.mem.depth += 1
        for p, init in merge:
            if isinstance(p.type, ir.ArrayT):
                params.append(self._loop_buffer(p, init, stms))
                continue
            value = self.subexp(init)
            stms.append(imp.Decl(CTYPES[p.type.name], self.bind(p.name, p.type), value, True))
            params.append(c_name(p.name))
        # The body computes every new scalar before any parameter changes;
        # arrays are copied into the parameters' buffers last (`body`).
        news: list[str | Buffer] = [x if isinstance(x, Buffer) else self.fresh(f"{x}_next")
                                    for x in params]
        inner = [imp.Decl(CTYPES[p.type.name], n, None, True)  # type: ignore[union-attr]
                 for (p, _), n in zip(merge, news) if isinstance(n, str)]
        match form:
            case ir.ForLoop(i, prim, bound):
                b = self.subexp(bound)
                counter = self.bind(i, ir.Prim(prim))  # bound before the body uses it
                self.ranges[i] = bound
                inner += self.body(body, news)
                inner += _assign_scalars(params, news)
                stms.append(imp.For(CTYPES[prim], counter, scalar.constant(0, prim), b,
                                    tuple(inner)))
            case ir.WhileLoop(cond):
                inner += self.body(body, news)
                inner += _assign_scalars(params, news)
                stms.append(imp.While(self.var(cond), tuple(inner)))
        if self.mem is not None:
            self.mem.depth -= 1
        for p, x in zip(pat, params):
            if isinstance(x, Buffer):
                self._mem().bind(p.name, x)
                self.local.add(p.name)
            else:
                stms.append(imp.Decl(CTYPES[p.type.name], self.bind(p.name, p.type),  # type: ignore[union-attr]
                                     imp.Var(x), True))
        return stms

    def _loop_buffer(self, p: ir.Param, init: ir.SubExp, stms: list[Stm]) -> Buffer:
        """The buffer of array loop parameter `p`: its initial array's, when
        nothing else reads that, else a new one with a copy of it."""
        mem = self._mem()
        mem.depth -= 1  # the initial array was bound outside the loop
        reuse = mem.reusable(init)
        mem.depth += 1
        src = self.buffer(init)
        self.local.add(p.name)
        if reuse:
            mem.bind(p.name, src)
            return src
        buf = mem.new(p.name, p.type)  # type: ignore[arg-type]
        stms += self._copy(buf, src)
        return buf

    # --------------------------------------------------------- expressions

    def exp(self, e: ir.Exp) -> tuple[list[Stm], Expr]:
        """Checks to run first, and the value of a scalar expression."""
        match e:
            case ir.SubExpOp(se):
                return [], self.subexp(se)
            case ir.UnOp(op, prim, x):
                return [], scalar.unop(op, prim, self.subexp(x))
            case ir.BinOp(op, prim, x, y):
                return self._binop(op, prim, self.subexp(x), self.subexp(y))
            case ir.CmpOp(op, prim, x, y):
                return [], scalar.cmpop(op, prim, self.subexp(x), self.subexp(y))
            case ir.ConvOp(src, dst, x):
                return [], scalar.convert(src, dst, self.subexp(x))
            case ir.Index(arr, sl, loc):
                return self._index(arr, sl, loc)
            case ir.ArraySize(arr, dim) if self.mem is not None and arr in self.mem.arrays:
                return [], self.subexp(self.mem.arrays[arr].shape[dim])
            case ir.ArraySize(arr, dim):
                _, _, dims = self.array(arr)
                return [], dims[dim]
            case ir.Assert(cond) if self._true(cond):  # an index check `_holds` settles
                return [], Lit("true")
            case ir.Assert(cond, msg, loc, args):
                c = self.subexp(cond)
                values = [Cast("int64_t", self.subexp(a)) for a in args]
                return [imp.If(imp.Un("!", c), (self.fail(msg, loc, values),))], Lit("true")
        raise NotImplementedError(
            f"no CUDA lowering of {type(e).__name__} in kernel code (flattening should "
            "have left it on the host)")

    def _binop(self, op: str, prim: str, x: Expr, y: Expr) -> tuple[list[Stm], Expr]:
        checks: list[Stm] = []
        if prim in scalar.INTS and op in _SIGNED_DIVISIONS:
            zero = Bin("==", y, scalar.constant(0, prim))
            checks.append(imp.If(zero, (self.fail("division by zero", None, ()),)))
        if prim in scalar.SIGNED and op == "**":
            neg = Bin("<", y, scalar.constant(0, prim))
            checks.append(imp.If(neg, (self.fail("Negative exponent", None, ()),)))
        return checks, scalar.binop(op, prim, x, y)

    @contextmanager
    def indices_checked(self) -> Iterator[None]:
        """Lowers array reads without bounds checks, for code whose indices a
        check elsewhere has covered (a tiled kernel checks the corners of
        each tile's index ranges once)."""
        self.in_bounds = True
        try:
            yield
        finally:
            self.in_bounds = False

    def _index(self, arr: ir.VName, sl: tuple[ir.DimIndex, ...],
               loc: object | None) -> tuple[list[Stm], Expr]:
        if self.mem is not None and arr in self.mem.arrays:
            buf = self.mem.arrays[arr]
            stms, flat = self._private_index(buf, sl, loc)
            return stms, self.mem.load(buf, flat)
        cname, _, dims = self.array(arr)
        stms, flat = self._checked_flat(cname, sl, dims, dims, loc, self.dims_of(arr))
        staged = self.staged(arr, sl) if self.staged is not None else None
        return stms, imp.Load(cname, flat) if staged is None else staged

    def _in_range(self, d: ir.DimIndex, sizes: Sequence[ir.SubExp | None], k: int) -> bool:
        """Whether fixed index `d` is known to be in [0, sizes[k])."""
        i = d.i  # type: ignore[union-attr]
        size = sizes[k] if k < len(sizes) else None
        if isinstance(i, ir.Constant):  # a constant index into a dimension of constant size
            return isinstance(size, ir.Constant) and 0 <= int(i.value) < int(size.value)
        return self.same_size(self.ranges.get(i.name), size)

    def _checked_flat(self, cname: str, sl: tuple[ir.DimIndex, ...], dims: list[Expr],
                      shape: list[Expr], loc: object | None,
                      sizes: Sequence[ir.SubExp | None] = ()) -> tuple[list[Stm], Expr]:
        """Bounds checks of the fixed indices `sl` against `dims` (the message
        shows the array's `shape`), and the row-major flat index they give,
        counted in elements of the indexed dimensions.  `sizes` are the
        dimensions as sizes where known: an index in `ranges` below the
        same size is in bounds, unchecked."""
        if len(sl) != len(dims) or not all(isinstance(d, ir.DimFix) for d in sl):
            raise NotImplementedError(f"kernel code indexes {cname} with a slice; only "
                                      "fixed indices are allowed")
        stms: list[Stm] = []
        names = []
        near = self._near_flat(sl, sizes)
        for k, d in enumerate(sl):
            i = d.i  # type: ignore[union-attr]
            narrow = self.index_type != "int64_t" and self._narrow_bound(i) is not None
            ctype = self.index_type if narrow else "int64_t"
            n = self.fresh(f"{cname}_i{k}")
            stms.append(imp.Decl(ctype, n, Cast(ctype, self.subexp(i)),
                                 maybe_unused=self.staged is not None or near is not None))
            names.append(imp.Var(n))
        conds = [Bin("||", Bin("<", i, Lit("0")), Bin(">=", i, d))
                 for k, (i, d) in enumerate(zip(names, dims))
                 if not (self.in_bounds or self._in_range(sl[k], sizes, k))]
        if conds:
            out = conds[0]
            for c in conds[1:]:
                out = Bin("||", out, c)
            k = len(names)
            shown = ", ".join(f"{{{j}}}" for j in range(k))
            dims_text = "][".join(f"{{{k + j}}}" for j in range(len(shape)))
            message = f"Index [{shown}] out of bounds for array of shape [{dims_text}]."
            stms.append(imp.If(out, (self.fail(message, loc, [*names, *shape]),)))
        return stms, row_major(names, dims) if near is None else near

    def _near_flat(self, sl: tuple[ir.DimIndex, ...],
                   sizes: Sequence[ir.SubExp | None]) -> Expr | None:
        """The flat index of `sl` as the space's flat index plus a constant
        offset, where the array has the space's shape and each index is the
        dimension's thread index plus a constant (see `flat_space`)."""
        if self.flat_space is None:
            return None
        flat, gtids, dims = self.flat_space
        if len(sl) != len(gtids) or len(sizes) != len(dims):
            return None
        offset: Expr | None = None
        for k, (d, g) in enumerate(zip(sl, gtids)):
            i = d.i  # type: ignore[union-attr]
            near = self.offsets.get(i.name) if isinstance(i, ir.Var) else None
            if near is None or near[0] != g or not self.same_size(sizes[k], dims[k]):
                return None
            if near[1]:
                stride = product([self.subexp(n) for n in dims[k + 1:]])
                term = Bin("*", Lit(f"(int64_t){near[1]}"), stride)
                offset = term if offset is None else Bin("+", offset, term)
        return flat if offset is None else Bin("+", flat, offset)


def _narrow_exp(e: ir.Exp, bound: Callable[[ir.SubExp], Bound | None]) -> Bound | None:
    """The bound of i64 expression `e` from its operands' (`bound`), where
    it is within NARROW_WEIGHT and NARROW_CONSTANT; None otherwise."""
    out: Bound | None = None
    match e:
        case ir.SubExpOp(x) | ir.UnOp("neg" | "abs", "i64", x):
            out = bound(x)
        case ir.BinOp("+" | "-", "i64", x, y):
            bx, by = bound(x), bound(y)
            out = (bx[0] + by[0], bx[1] + by[1]) if bx and by else None
        case ir.BinOp("max" | "min", "i64", x, y):
            bx, by = bound(x), bound(y)
            out = (max(bx[0], by[0]), max(bx[1], by[1])) if bx and by else None
        case (ir.BinOp("*", "i64", x, ir.Constant(c)) |
              ir.BinOp("*", "i64", ir.Constant(c), x)):
            bx = bound(x)
            out = (bx[0] * abs(int(c)), bx[1] * abs(int(c))) if bx else None
    if out is None or out[0] > NARROW_WEIGHT or out[1] > NARROW_CONSTANT:
        return None
    return out


def _assign_scalars(params: Sequence[str | Buffer], news: Sequence[str | Buffer]) -> list[Stm]:
    return [imp.Assign(x, imp.Var(n)) for x, n in zip(params, news) if isinstance(x, str)]
