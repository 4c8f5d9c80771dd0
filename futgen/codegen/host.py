"""Host code: a GPU IR program as the Python of the generated package.

Every core function becomes a method `_fn_<name>_<k>(self, b, params...)`
of the package class; `b` is the backend (`futgen_runtime`'s `CudaBackend`
or `CpuBackend`), so one method serves both.  Statements become:

* scalar operations: calls of the runtime's primitives (Futhark semantics,
  the same text the vectorised kernels use, `futgen.codegen.pysrc`);
* array operations: backend calls (`b.iota`, `b.index`, ...), only those
  `futgen/codegen/RUNTIME_API.md` lists;
* `If`/`Loop`: Python control flow (a loop reads elements of the arrays
  from outside it through host mirrors); `Apply`: a method call;
* a SegOp: on CUDA, the statement's `KernelPlan` (allocate, launch in order,
  bind results, read scalars back); on the CPU backend, a call of a module
  function that evaluates it vectorised (`futgen.codegen.numpy_kernels`);
* a SOAC flattening left on the host: a module function on NumPy arrays,
  with `b.to_host`/`b.from_host` around it (a no-op on the CPU backend).

Module functions receive their free variables as parameters, so nothing in
them depends on where the caller's values live.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from futgen.codegen import numpy_kernels as nk
from futgen.codegen.plan import (
    DTYPES,
    KernelPlan,
    Launch,
    TuningParam,
    branch_conditions,
)
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
from futgen.flatten.names import NameSource
from futgen.gpu import ir as gpu
from futgen.opt.effects import consumed_on_host

# compile_segop(stm, types, fresh, sizes=..., defs=...) -> KernelPlan
# (futgen.codegen.cuda), `fresh` being the program's name source, `sizes` the
# host variables that hold arrays' sizes at the statement ((array, dim) ->
# variable) and `defs` the host scalars' definitions.
PlanSegOp = Callable[..., KernelPlan]


@dataclass
class HostCode:
    """What the module template needs: prepared source text only."""

    methods: list[str]  # class-level defs, indented for the class body
    functions: list[str]  # module-level defs
    entry_functions: dict[str, str]  # entry point name -> method name
    plans: list[KernelPlan] = field(default_factory=list)
    # Tuning parameters: name -> class, default, ancestor path, meaning (and more).
    tuning_params: dict[str, TuningParam] = field(default_factory=dict)
    # Entry points whose host code on CUDA does no NumPy arithmetic (only
    # allocations, launches and size reads): their calls skip np.errstate there.
    numpy_free_on_cuda: set[str] = field(default_factory=set)
    # The thresholds of the version guards (incremental flattening).
    guards: list[str] = field(default_factory=list)


def _method_name(name: str, k: int) -> str:
    return f"_fn_{re.sub(r'[^0-9A-Za-z_]', '_', name)}_{k}"


class HostCompiler:
    """Compiles the functions of a GPU IR program (see the module docstring)."""

    def __init__(self, prog: ir.Program, plan_segop: PlanSegOp | None = None) -> None:
        self.prog = prog
        self.names = {f.name: _method_name(f.name, k) for k, f in enumerate(prog.functions)}
        self.plan_segop = plan_segop
        self.functions: list[str] = []
        self.plans: list[KernelPlan] = []
        self.types = _all_types(prog)
        self.name_source = NameSource(prog)
        self.counter = 0
        self.tuning_params: dict[str, TuningParam] = {}
        # Version guards: the variable bound to each one's outcome -> its
        # threshold; and the guards (threshold, branch) around the code
        # being compiled, which tuning parameters record as their path.
        self.guards: dict[ir.VName, str] = {}
        self.branches: list[tuple[str, bool]] = []
        self.function_name = ""
        # Per function: whether its CUDA path computes on NumPy values (which
        # must run under np.errstate), and the functions it calls.
        self.numpy_math: dict[str, bool] = {}
        self.calls: dict[str, set[str]] = {}
        # (array, dim) -> the host variable bound to that size so far in scope.
        self.known_sizes: dict[tuple[ir.VName, int], ir.VName] = {}
        # Host scalars -> the expressions that define them (names are unique,
        # so this needs no scopes): kernels learn from them which sizes are
        # one value (`KernelLowering.defs`).
        self.scalar_defs: dict[ir.VName, ir.Exp] = {}
        # Arrays a loop being compiled reads elements of -> the variable
        # holding their host mirror (`loop`).
        self.mirrors: dict[ir.VName, str] = {}
        # What the function being compiled may consume: found when a loop
        # first needs it (`_consumed`).
        self.function_ir: ir.Function | None = None
        self.consumed: set[ir.VName] | None = None

    def compile(self) -> HostCode:
        methods = [self.function(f) for f in self.prog.functions]
        entries = {f.name: self.names[f.name] for f in self.prog.functions if f.entry}
        return HostCode(methods, self.functions, entries, self.plans, self.tuning_params,
                        {e for e in entries if not self._uses_numpy_math(e, set())},
                        list(dict.fromkeys(self.guards.values())))

    def _uses_numpy_math(self, fn: str, seen: set[str]) -> bool:
        seen.add(fn)
        return self.numpy_math[fn] or any(self._uses_numpy_math(g, seen)
                                          for g in self.calls[fn] - seen)

    def function(self, f: ir.Function) -> str:
        em = Emitter()
        em.depth = 1
        params = ", ".join(["self", "b", *(pyname(p.name) for p in f.params)])
        self.function_name = f.name
        self.numpy_math[f.name] = False
        self.calls[f.name] = set()
        self.function_ir = f
        self.consumed = None
        with em.block(f"def {self.names[f.name]}({params}):"):
            em.line(f'"""The core function {f.name}."""')
            results = self.inline_body(em, f.body)
            em.line(f"return {tuple_text(results)}")
        return em.text()

    # ------------------------------------------------------------ statements

    def _rearranged_sizes(self, v: ir.VName, arr: ir.VName, perm: tuple[int, ...]) -> None:
        """Dimension k of `v = rearrange perm arr` is dimension perm[k] of
        `arr`: where that has a name, kernels reading `v` know its size."""
        names = self._size_names(arr)
        self._learn_sizes(v, [names[d] for d in perm])

    def inline_body(self, em: Emitter, body: ir.Body,
                    result_sizes: list[list[ir.VName | None]] | None = None) -> list[str]:
        """Emit `body`'s statements into `em`; the Python result expressions.
        Sizes it binds are known inside it only (a branch may not run); the
        names of its array results' sizes go to `result_sizes`, if given."""
        outer = dict(self.known_sizes)
        for stm in body.stms:
            self.stm(em, stm)
        results = [subexp(r) for r in body.result]
        if result_sizes is not None:
            result_sizes += [self._size_names(r.name) if isinstance(r, ir.Var) else []
                             for r in body.result]
        self.known_sizes = outer
        return results

    def _size_names(self, arr: ir.VName) -> list[ir.VName | None]:
        """The host variables holding the sizes of `arr` (None where none does)."""
        t = self.types.get(arr)
        if not isinstance(t, ir.ArrayT):
            return []
        return [d.name if isinstance(d, ir.Var) else
                None if isinstance(d, ir.Constant) else self.known_sizes.get((arr, k))
                for k, d in enumerate(t.shape)]

    def _learn_sizes(self, arr: ir.VName, names: Sequence[ir.VName | None]) -> None:
        """Records that the host variables `names` hold the sizes of `arr`
        (for the dimensions its type leaves open)."""
        for k, n in enumerate(names):
            if n is not None:
                self.known_sizes.setdefault((arr, k), n)

    def stm(self, em: Emitter, stm: ir.Stm) -> None:
        e = stm.exp
        names = [pyname(p.name) for p in stm.pat]
        match e:
            case ir.BinOp("|" | "&", "bool", ir.Var(g), _) if g in self.guards:
                # A guard refined by whether a version fits the device
                # (`flatten.versions`): its branches are still the guard's.
                self.guards[stm.pat[0].name] = self.guards[g]
        text = scalar_exp(e) if isinstance(stm.pat[0].type, ir.Prim) else None
        if isinstance(e, ir.SubExpOp | ir.BinOp) and stm.pat[0].type == ir.Prim("i64"):
            self.scalar_defs[stm.pat[0].name] = e
        if text is None and isinstance(e, ir.SubExpOp):
            text = subexp(e.se)
        if text is not None:
            if not isinstance(e, ir.SubExpOp):
                self._numpy_math()
            em.line(f"{names[0]} = {text}")
            return
        match e:
            case ir.If():
                self.if_(em, stm, e)
            case ir.Loop():
                self.loop(em, stm, e)
            case ir.Apply(fn, args, _, loc):
                self.calls[self.function_name].add(fn)
                call = f"self.{self.names[fn]}({', '.join(['b', *(subexp(a) for a in args)])})"
                line = f"{', '.join(names)}, = {call}"
                if loc is None:
                    em.line(line)
                    return
                # A failure's backtrace lists the calls it passed through.
                with em.block("try:"):
                    em.line(line)
                with em.block("except FutharkError as _err:"):
                    em.line(f"_err.calls.append({str(loc)!r})")
                    em.line("raise")
            case gpu.SegMap() | gpu.SegRed() | gpu.SegScan() | gpu.SegHist() | gpu.SegScatter():
                self.segop(em, stm)
            case ir.Screma() | ir.Scatter() | ir.Hist():
                self.host_soac(em, stm)
            case gpu.ThresholdCmp(name, par, _, default):
                self.guards[stm.pat[0].name] = name
                self.tuning_params[name] = TuningParam(
                    "threshold", default, self.path(),
                    "parallelism from which the guarded version runs")
                em.line(f"{names[0]} = self._tuning.guard({name!r}, {subexp(par)})")
            case gpu.BlockFits(size):
                em.line(f"{names[0]} = b.block_fits(int({subexp(size)}))")
            case ir.Rearrange(arr, perm):
                self._rearranged_sizes(stm.pat[0].name, arr, perm)
                em.line(f"{names[0]} = {self.array_op(stm, e)}")
            case _:
                em.line(f"{names[0]} = {self.array_op(stm, e)}")

    def _numpy_math(self) -> None:
        """Note that the function being compiled computes with NumPy on CUDA too."""
        self.numpy_math[self.function_name] = True

    def array_op(self, stm: ir.Stm, e: ir.Exp) -> str:
        """A backend call for an array operation (and Index/Assert on scalars)."""
        t = stm.pat[0].type
        dt = repr(DTYPES[t.name if isinstance(t, ir.Prim) else t.elem])
        match e:
            case ir.Index(arr, sl, loc):
                source = self.mirrors.get(arr, pyname(arr)) if _element_read(stm) else pyname(arr)
                return f"b.index({source}, {_slice(sl)}, {loc_text(loc)})"
            case ir.Update(arr, sl, value, loc):
                return f"b.update({pyname(arr)}, {_slice(sl)}, {subexp(value)}, {loc_text(loc)})"
            case ir.ArraySize(arr, dim):
                known = self._size_names(arr)[dim]
                if known is not None:  # a second name for a size: kernels see they are one
                    self.scalar_defs[stm.pat[0].name] = ir.SubExpOp(ir.Var(known))
                self.known_sizes.setdefault((arr, dim), stm.pat[0].name)
                return f"np.int64({pyname(arr)}.shape[{dim}])"
            case ir.Assert():
                self._numpy_math()
                return nk.check_call(e)
            case ir.Iota(n, start, stride):
                return f"b.iota(int({subexp(n)}), int({subexp(start)}), int({subexp(stride)}), {dt})"
            case ir.Replicate(shape, value):
                return f"b.replicate({_ints(shape)}, {subexp(value)}, {dt})"
            case gpu.Scratch(_, shape):
                return f"b.empty({_ints(shape)}, {dt})"
            case ir.Reshape(arr, shape, loc):
                return f"b.reshape({pyname(arr)}, {_ints(shape)}, {loc_text(loc)} or None)"
            case ir.Rearrange(arr, perm):
                return f"b.rearrange({pyname(arr)}, {tuple(perm)!r})"
            case ir.Concat(arrs):
                return f"b.concat([{', '.join(pyname(a) for a in arrs)}])"
            case ir.Copy(arr):
                return f"b.copy({pyname(arr)})"
            case ir.ArrayLit(elems, elem):
                values = ", ".join(subexp(x) for x in elems)
                shape = _shape_text(t)
                if isinstance(elem, ir.ArrayT) and elems:
                    # Rows' sizes may be known only at run time: take the first row's.
                    shape = f"({len(elems)},) + tuple({subexp(elems[0])}.shape)"
                return f"b.array_lit([{values}], {dt}, {shape})"
            case ir.SubExpOp(se):
                return subexp(se)
        raise UnsupportedFeature(f"{type(e).__name__} in host code")

    def if_(self, em: Emitter, stm: ir.Stm, e: ir.If) -> None:
        names = [pyname(p.name) for p in stm.pat]
        guard = self.guards.get(e.cond.name) if isinstance(e.cond, ir.Var) else None
        if guard is not None:  # profiling times the version the guard chose
            token = f"{subexp(e.cond)}_t"
            em.line(f"{token} = self._tuning.enter(b)")
        branch_sizes: dict[bool, list[list[ir.VName | None]]] = {True: [], False: []}
        for cond, body, taken in ((f"if {subexp(e.cond)}:", e.then_, True),
                                  ("else:", e.else_, False)):
            if guard is not None:
                self.branches.append((guard, taken))
            with em.block(cond):
                results = self.inline_body(em, body, branch_sizes[taken])
                if names:
                    em.line(f"{', '.join(names)}, = {tuple_text(results)}")
            if guard is not None:
                self.branches.pop()
        if guard is not None:
            em.line(f"self._tuning.leave(b, {token}, {guard!r})")
        # A size both branches name was bound before the `if`: it holds after.
        for p, then_sizes, else_sizes in zip(stm.pat, branch_sizes[True], branch_sizes[False]):
            self._learn_sizes(p.name, [a if a == b else None
                                       for a, b in zip(then_sizes, else_sizes)])

    def path(self) -> tuple[str, ...]:
        """The guards around the code being compiled, as a tuning parameter's
        ancestor path (`!` on a false branch), outermost first."""
        return gpu.path_entries(self.branches)

    def loop(self, em: Emitter, stm: ir.Stm, e: ir.Loop) -> None:
        """A Python loop.  Each array from outside the loop whose elements
        the loop reads one at a time (a time step's parameters, say), and
        that nothing in the function consumes, is mirrored on the host
        first (`b.mirror`: a copy if small, else the array): on CUDA, each
        such read would otherwise wait for the device to finish every launch
        before it, so that the host could not queue the next step's kernels
        while the device runs this step's."""
        outer = dict(self.mirrors)
        reads = _element_reads(e.body) & free_vars(e) - set(self.mirrors)
        if reads:
            reads -= self._consumed()
        for arr in sorted(reads, key=pyname):
            self.mirrors[arr] = em.fresh(f"mirror_{pyname(arr)}_")
            em.line(f"{self.mirrors[arr]} = b.mirror({pyname(arr)})")
        params = emit_loop(em, e, lambda: self.inline_body(em, e.body))
        self.mirrors = outer
        for p, name in zip(stm.pat, params):
            em.line(f"{pyname(p.name)} = {name}")

    def _consumed(self) -> set[ir.VName]:
        """What the function being compiled may consume, found once."""
        if self.consumed is None:
            assert self.function_ir is not None
            self.consumed = consumed_on_host(self.function_ir)
        return self.consumed

    # ------------------------------------------------------------ SOACs and SegOps

    def _module_function(self, kind: str, stm: ir.Stm, params: list[str],
                         emit: Callable[[Emitter], list[str]]) -> str:
        """A module-level `def` taking (self, b, free variables...)."""
        self.counter += 1
        name = f"_{kind}_{self.counter}"
        em = Emitter(prefix=f"_{kind}{self.counter}_")
        with em.block(f"def {name}({', '.join(['self', 'b', *params])}):"):
            em.line(f'"""{_describe(stm)}"""')
            results = emit(em)
            em.line(f"return {tuple_text(results)}")
        self.functions.append(em.text())
        return name

    def _free(self, stm: ir.Stm) -> list[ir.VName]:
        return sorted(free_vars(stm.exp), key=lambda v: v.tag)

    def host_soac(self, em: Emitter, stm: ir.Stm, sizes: tuple[ir.VName, ...] = ()) -> None:
        """A SOAC on NumPy arrays, whichever backend runs the program; `sizes`
        are host variables giving the rows' shapes of empty results."""
        self._numpy_math()
        free = sorted({*self._free(stm), *sizes}, key=lambda v: v.tag)
        def shape_of(t: ir.Type, w: str) -> str:
            return _shape_of(t, w, set(free))

        fn = self._module_function("soac", stm, [pyname(v) for v in free],
                                   lambda inner: nk.emit_soac(inner, stm, self, shape_of))
        args = [self._to_host(v) for v in free]
        res = em.fresh("res")
        em.line(f"{res} = {fn}(self, self._cpu, {', '.join(args)})")
        for k, p in enumerate(stm.pat):
            value = f"{res}[{k}]"
            if isinstance(p.type, ir.ArrayT):
                value = f"b.from_host({value})"
            em.line(f"{pyname(p.name)} = {value}")

    def _to_host(self, v: ir.VName) -> str:
        if isinstance(self.types.get(v), ir.ArrayT):
            return f"b.to_host({pyname(v)})"
        return pyname(v)

    def segop(self, em: Emitter, stm: ir.Stm) -> None:
        """A SegOp: its kernel plan on CUDA, vectorised NumPy on the CPU backend."""
        names = [pyname(p.name) for p in stm.pat]
        if isinstance(stm.exp, gpu.SegMap):  # a result's shape: the space's, then its row's
            for p, t in zip(stm.pat, stm.exp.ret):
                self._learn_sizes(p.name, [d.name if isinstance(d, ir.Var) else None for d in
                                           (*stm.exp.space.dims, *getattr(t, "shape", ()))])
        plan = self._plan(stm)
        if plan is None:
            self._numpy_math()
            self._cpu_segop(em, stm)
            return
        with em.block('if b.kind == "cuda":'):
            public: dict[str, str] = {}
            if plan.thresholds:  # profiling times the strategies the guards chose
                em.line(f"{names[0]}_t = self._tuning.enter(b)")
            for t in plan.thresholds:
                name = self._public_name(t.key)
                public[t.key] = name
                under = gpu.path_entries((public[k], taken) for k, taken in t.under)
                self.tuning_params[name] = TuningParam("threshold", t.default,
                                                       self.path() + under, t.doc)
                guard = f"self._tuning.guard({name!r}, int({t.par}))"
                reached = branch_conditions(t.under)
                if t.requires is not None:
                    reached.append(f"({t.requires})")
                if t.holds is not None:
                    guard = f"(({t.holds}) or {guard})"
                em.line(f"{t.key} = {' and '.join([*reached, guard])}")
            for size in plan.block_sizes:
                name = self._public_name(size.key)
                allowed = {"values": size.values} if size.values else {}
                self.tuning_params[name] = TuningParam(size.cls, size.default,
                                                       self.path(), size.doc, allowed)
                em.line(f"{size.key} = self._tuning.block_size({name!r})")
            tiles = {}
            for tile in plan.tile_sizes:
                tiles[tile.key] = name = self._public_name(tile.key)
                self.tuning_params[name] = TuningParam(
                    "tile_size", tile.default, self.path(), tile.doc,
                    {"values": tile.values, "macro": tile.macro})
            _emit_plan(em, plan, names, tiles)
            if plan.thresholds:
                em.line(f"self._tuning.leave(b, {names[0]}_t)")
        with em.block("else:"):
            self._cpu_segop(em, stm)

    def _public_name(self, key: str) -> str:
        """A plan's tuning parameter as the package names it: numbered by a
        count of the function's parameters of its base name (not the name
        source, nor a count over every class), so that a compiler change
        adding or removing parameters of other classes leaves the names, and
        a tuning file written before it, valid."""
        prefix = f"{self.function_name}.{key.rstrip('0123456789')}"
        taken = sum(1 for name in self.tuning_params
                    if name.startswith(prefix) and name[len(prefix):].isdigit())
        return f"{prefix}{taken}"

    def _cpu_segop(self, em: Emitter, stm: ir.Stm) -> None:
        """A SegOp as vectorised NumPy, or (threads with private arrays) the
        map it came from, row by row with whole-array inner SOACs."""
        host = getattr(stm.exp, "host", None)
        if host is not None:
            for before in getattr(stm.exp, "host_before", ()):  # producers fused into a SegMap
                self._cpu_segop(em, before)
            sizes = tuple(d.name for t in stm.exp.ret if isinstance(t, ir.ArrayT)
                          for d in t.shape if isinstance(d, ir.Var))
            # The SegMap's own names: versions bind fresh ones, not the map's.
            self.host_soac(em, replace(host, pat=stm.pat[:len(host.pat)]), sizes)
            return
        free = self._free(stm)
        if isinstance(stm.exp, gpu.SegMap) and stm.exp.level == gpu.BLOCKS:
            fn = self._module_function("blocks", stm, [pyname(v) for v in free],
                                       lambda inner: self._blocks(inner, stm))
        else:
            fn = self._module_function("segop", stm, [pyname(v) for v in free],
                                       lambda inner: nk.emit_segop(inner, stm, self))
        names = [pyname(p.name) for p in stm.pat]
        em.line(f"{', '.join(names)}, = {fn}(self, b, {', '.join(pyname(v) for v in free)})")

    def _blocks(self, em: Emitter, stm: ir.Stm) -> list[str]:
        """A BLOCKS SegMap with no core map (`futgen.opt.block_invariants`'s)
        on the CPU backend: its block code once per point, as host code with
        its BLOCK SegOps vectorised; the results stacked."""
        e = stm.exp
        assert isinstance(e, gpu.SegMap)
        dims = [f"int({subexp(d)})" for d in e.space.dims]
        rows = [em.fresh("rows") for _ in e.ret]
        for r in rows:
            em.line(f"{r} = []")
        with em.block(f"for {tuple_text([pyname(g) for g in e.space.gtids])} in "
                      f"np.ndindex({', '.join(dims)}):"):
            for s in e.body.stms:
                if isinstance(s.exp, ir.If | ir.Loop) and gpu.block_ops(ir.Body((s,), ())):
                    raise UnsupportedFeature("BLOCK SegOps in a branch or loop of block code "
                                             "on the CPU backend")
                if isinstance(s.exp, gpu.SegMap | gpu.SegRed | gpu.SegScan):
                    self._cpu_segop(em, s)
                else:
                    self.stm(em, s)
            for r, x in zip(rows, e.body.result):
                em.line(f"{r}.append({subexp(x)})")
        out = []
        for r, t in zip(rows, e.ret):
            row = [f"int({subexp(d)})" for d in getattr(t, "shape", ())]
            col = em.fresh("col")
            em.line(f"{col} = S.stack({r}, {ir.elem_prim(t)!r}, {tuple_text(['0', *row])})"
                    f".reshape({tuple_text([*dims, *row])})")
            out.append(col)
        return out

    def _plan(self, stm: ir.Stm) -> KernelPlan | None:
        if self.plan_segop is None:
            return None
        plan = self.plan_segop(stm, self.types, self.name_source.fresh,
                               sizes=self.known_sizes, defs=self.scalar_defs)
        self.plans.append(plan)
        return plan


def _emit_plan(em: Emitter, plan: KernelPlan, names: list[str],
               tiles: dict[str, str]) -> None:
    """The host side of a kernel plan: allocate, launch in order, bind results.
    Consecutive launches of one condition share one `if`, inside which the
    lets and temps of that condition come first.  A launch of a kernel with
    tile sizes (key -> public name in `tiles`) notes that the call used them."""
    def launch_lines(group: Iterable[Launch]) -> None:
        for launch in group:
            for key in launch.tile_sizes:
                em.line(f"self._tuning.tile_size({tiles[key]!r})")
            em.line(_launch_call(launch))

    _emit_setup(em, plan, None)
    ready = {None}  # the conditions whose lets and temps are bound
    for when, group in itertools.groupby(plan.launches, key=lambda la: la.when):
        if when is None:
            launch_lines(group)
            continue
        with em.block(f"if {when}:"):
            if when not in ready:
                _emit_setup(em, plan, when)
                ready.add(when)
            launch_lines(group)
    for name, (kind, temp) in zip(names, plan.results):
        em.line(f"{name} = {temp}" if kind == "array" else f"{name} = b.read_scalar({temp})")
    assert {t.when for t in plan.temps} | {w for *_, w in plan.lets} <= ready, \
        "a conditional temp or let without launches of its condition"


def _emit_setup(em: Emitter, plan: KernelPlan, when: str | None) -> None:
    """The lets and allocations of the launches of condition `when`."""
    for name, expr, cond in plan.lets:
        if cond == when:
            em.line(f"{name} = {expr}")
    for t in (*plan.temps, *plan.outputs):
        if t.when == when:
            make = "zeros" if t.zeroed else "empty"
            em.line(f"{t.name} = b.{make}({tuple_text([f'int({d})' for d in t.shape])}, "
                    f"{DTYPES[t.prim]!r})")


def _launch_call(launch: Launch) -> str:
    sig = "".join("P" if a.kind == "array" else _CTYPE_CHARS[a.ctype] for a in launch.args)
    args = "".join(f", {a.value}.gpudata" if a.kind == "array" else f", {a.value}"
                   for a in launch.args)
    shared = launch.shared_bytes if isinstance(launch.shared_bytes, int) \
        else f"int({launch.shared_bytes})"
    block = launch.block if isinstance(launch.block, int) else f"int({launch.block})"
    if launch.groups != 1:
        block = f"({block}, int({launch.groups}))"
    return (f"b.launch_sig({launch.kernel!r}, {sig!r}, int({launch.threads}), "
            f"{block}, {shared}{args})")


# The struct character (native alignment: the layout of kernel parameters)
# of each scalar C type; values of the program's types pack as they are.
_CTYPE_CHARS = {
    "int8_t": "b", "int16_t": "h", "int32_t": "i", "int64_t": "q",
    "uint8_t": "B", "uint16_t": "H", "uint32_t": "I", "uint64_t": "Q",
    "__half": "e", "float": "f", "double": "d", "bool": "?",
}


# ------------------------------------------------------------ helpers


def _element_read(stm: ir.Stm) -> bool:
    """Whether `stm` reads one element of an array (every dimension fixed)."""
    e = stm.exp
    return (isinstance(e, ir.Index) and isinstance(stm.pat[0].type, ir.Prim)
            and all(isinstance(d, ir.DimFix) for d in e.slice))


def _element_reads(body: ir.Body) -> set[ir.VName]:
    """The arrays whose elements `body`'s host code reads (not its kernels)."""
    found: set[ir.VName] = set()
    for stm in body.stms:
        match stm.exp:
            case ir.Index(arr, _, _) if _element_read(stm):
                found.add(arr)
            case ir.If(_, then_, else_, _):
                found |= _element_reads(then_) | _element_reads(else_)
            case ir.Loop(_, _, inner):
                found |= _element_reads(inner)
    return found


def _slice(sl: tuple[ir.DimIndex, ...]) -> str:
    parts = []
    for d in sl:
        if isinstance(d, ir.DimFix):
            parts.append(f"int({subexp(d.i)})")
        else:
            parts.append(f"(int({subexp(d.start)}), int({subexp(d.num)}), int({subexp(d.stride)}))")
    return tuple_text(parts)


def _ints(ses: tuple[ir.SubExp, ...]) -> str:
    return tuple_text([f"int({subexp(s)})" for s in ses])


def _shape_text(t: ir.Type) -> str:
    if isinstance(t, ir.Prim):
        return "()"
    return tuple_text(["0" if d is None else f"int({subexp(d)})" for d in t.shape])


def _shape_of(t: ir.Type, w: str, available: set[ir.VName]) -> str:
    """Shape of `w` rows of `t` for empty results.  An inner size is known when
    it is a constant or a variable the SOAC's code can see (`available`);
    sizes only the lambda computes are 0, as no row ever computed them."""
    def size(d: ir.SubExp | None) -> str:
        if isinstance(d, ir.Constant) or (isinstance(d, ir.Var) and d.name in available):
            return f"int({subexp(d)})"
        return "0"

    inner = [] if isinstance(t, ir.Prim) else [size(d) for d in t.shape]
    return tuple_text([w, *inner])


def _describe(stm: ir.Stm) -> str:
    names = ", ".join(pyname(p.name) for p in stm.pat)
    return f"{type(stm.exp).__name__} binding {names}."


def _all_types(prog: ir.Program) -> dict[ir.VName, ir.Type]:
    """The type of every name bound anywhere in the program (names are unique),
    except the loop counters and thread indices of kernel bodies: the CUDA
    code generator reads this as "host variables", and those are not."""
    out: dict[ir.VName, ir.Type] = {}

    def walk(node: object, host: bool) -> None:
        if isinstance(node, ir.Param):
            out[node.name] = node.type
        elif isinstance(node, ir.ForLoop):
            if host:
                out[node.i] = ir.Prim(node.prim)
            walk(node.bound, host)
        elif isinstance(node, gpu.SegOp):
            for name in node.__dataclass_fields__:
                walk(getattr(node, name), False)
        elif isinstance(node, tuple | list):
            for x in node:
                walk(x, host)
        elif hasattr(node, "__dataclass_fields__") and not isinstance(node, type):
            for name in node.__dataclass_fields__:
                walk(getattr(node, name), host)

    walk(prog, True)
    return out


def compile_host(prog: ir.Program, plan_segop: PlanSegOp | None = None) -> HostCode:
    """The host code of a GPU IR program (see the module docstring)."""
    return HostCompiler(prog, plan_segop).compile()
