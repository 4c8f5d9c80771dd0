"""CUDA code generation: SegOp statements -> kernels and `KernelPlan`s.

`compile_segop` dispatches on the SegOp and its space to one strategy
module (`segmap` for SegMap and SegScatter, `intra` for a SegMap with a
block per point, `segred`, `segscan`, `seghist`); each lowers kernel code to ImpCode
(`lower.py`) and renders it (`render.py`).  `render_kernels_file` writes a
program's `kernels.cu` from `templates/kernels.cu.j2`: the includes, the
prelude of scalar helpers (`scalar.prelude`), then every plan's kernels.

Error codes must be unique in a program.  By default they come from the
same name source as every VName (`fresh("failure").tag + 1`), which is
unique program-wide and never 0; a caller may pass its own counter.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence

import jinja2

from futgen.codegen.cuda.common import SegCompile
from futgen.codegen.cuda.intra import compile_intra
from futgen.codegen.cuda.lower import ErrorTable, c_name
from futgen.codegen.cuda.scalar import prelude
from futgen.codegen.cuda.seghist import compile_seghist
from futgen.codegen.cuda.segmap import compile_segmap, compile_segscatter
from futgen.codegen.cuda.segred import compile_segred
from futgen.codegen.cuda.segscan import compile_segscan
from futgen.codegen.plan import KernelPlan
from futgen.codegen.resources import templates_dir
from futgen.core import ir
from futgen.gpu.ir import BLOCKS, SegHist, SegMap, SegRed, SegScan, SegScatter

__all__ = ["compile_segop", "kernels_prelude", "render_kernels_file"]


def _codes_from(fresh: Callable[[str], ir.VName]) -> Iterator[int]:
    for _ in itertools.count():
        yield fresh("failure").tag + 1


def compile_segop(stm: ir.Stm, types: dict[ir.VName, ir.Type],
                  fresh: Callable[[str], ir.VName],
                  codes: Iterator[int] | None = None, *,
                  sizes: Mapping[tuple[ir.VName, int], ir.VName] | None = None,
                  defs: Mapping[ir.VName, ir.Exp] | None = None) -> KernelPlan:
    """Compiles one host statement whose expression is a SegOp.

    Args:
        stm: `let (pat) = segop`; the plan's results follow `pat`.
        types: types of the host variables in scope (arrays the kernels read,
            scalars they use, size variables).
        fresh: the program's name source (`Internaliser.fresh`-like); kernel,
            temp and local names come from it, so they are unique.
        codes: error-code counter shared by the whole program (optional).
        sizes: host variables holding arrays' sizes at this statement,
            `(array, dim) -> variable`: kernels take those rather than the
            arrays' own dimensions, so a thread index bounded by one needs
            no bounds check where it indexes the array.
        defs: the definitions of host scalars in scope (copies and
            arithmetic), which tell where two sizes are one value, so that
            more indices are known in bounds.

    Returns:
        The KernelPlan (see `futgen/codegen/plan.py`).
    """
    errors = ErrorTable(codes if codes is not None else _codes_from(fresh))
    sc = SegCompile(stm, types, lambda base: c_name(fresh(base)), errors, dict(sizes or {}),
                    dict(defs or {}))
    match stm.exp:
        case SegMap(level=level) if level == BLOCKS:
            return compile_intra(sc, stm.exp)
        case SegMap():
            return compile_segmap(sc, stm.exp)
        case SegRed():
            return compile_segred(sc, stm.exp)
        case SegScan():
            return compile_segscan(sc, stm.exp)
        case SegHist():
            return compile_seghist(sc, stm.exp)
        case SegScatter():
            return compile_segscatter(sc, stm.exp)
    raise NotImplementedError(f"no CUDA strategy for {type(stm.exp).__name__}")


def kernels_prelude() -> str:
    """The scalar helper functions every kernels.cu starts with."""
    return prelude()


def render_kernels_file(plans: Sequence[KernelPlan], fast_division: bool = False) -> str:
    """The whole `kernels.cu` of a program with these plans; f32 division
    within 2 ulp where `fast_division` (`futgen build --fast-division`)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())),
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    template = env.get_template("kernels.cu.j2")
    sources = [p.source for p in plans]
    intra = any("futgen_group_" in s for s in sources)  # every intra-block kernel's barriers
    return template.render(prelude=kernels_prelude(), kernels=sources,
                           fast_division=fast_division,
                           cub=intra or any("cub::" in s for s in sources), intra=intra,
                           atomics=any("futgen_atomic_combine" in s for s in sources),
                           locks=any("futgen_store_cg" in s for s in sources),
                           tiles=any("futgen_load4" in s for s in sources))
