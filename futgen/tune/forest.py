"""The threshold forest of a package, and the runs that force every version.

Every tunable threshold of a package (`TUNING_PARAMS`, class `threshold`)
records its ancestor path: the guards around it, outermost first, each with
`!` when it sits on the false branch.  A threshold whose path is empty is a
root; one whose path ends in `!g` is a child of `g`'s false branch.  This
is the forest of `research/seed002.md`, which the autotuner walks bottom-up
and the tests walk to run every version.

Forcing a threshold to 0 takes its version (0 <= P for every parallelism P,
empty inputs included); forcing it to "infinity" never does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from futgen.core import ir
from futgen.gpu.ir import INFINITE_THRESHOLD, ThresholdCmp, path_entries
from futgen.opt.parts import bodies

FORCED = {True: 0, False: INFINITE_THRESHOLD}


@dataclass
class Node:
    """A threshold and the thresholds nested in each of its branches."""

    name: str
    default: int
    children: dict[bool, list[Node]] = field(default_factory=lambda: {True: [], False: []})


def forest(params: Mapping[str, Mapping]) -> list[Node]:
    """The trees of the thresholds in `params` (a package's TUNING_PARAMS)."""
    nodes = {name: Node(name, int(p["default"])) for name, p in params.items()
             if p["class"] == "threshold"}
    roots = []
    for name in sorted(nodes):
        path = tuple(params[name]["path"])
        if not path:
            roots.append(nodes[name])
            continue
        parent = path[-1].lstrip("!")
        if parent not in nodes:
            raise ValueError(f"threshold {name}'s path names {parent}, which is no threshold")
        nodes[parent].children[not path[-1].startswith("!")].append(nodes[name])
    return roots


def program_thresholds(prog: ir.Program) -> dict[str, dict]:
    """The version guards of a GPU IR program as a package's TUNING_PARAMS
    lists them (for `version_runs` without building the package), with the
    paths the host code generator gives them: the guards of the branches
    around each, a condition `g & fits` (or `|`) counting as `g`'s."""
    out: dict[str, dict] = {}
    for f in prog.functions:
        _guards(f.body, (), {}, out)
    return out


def _guards(body: ir.Body, path: tuple[tuple[str, bool], ...],
            guards: dict[ir.VName, str], out: dict[str, dict]) -> None:
    guards = dict(guards)  # condition variable -> the threshold it tests
    for s in body.stms:
        match s.exp:
            case ThresholdCmp(name, _, _, default):
                guards[s.pat[0].name] = name
                out[name] = {"class": "threshold", "default": default,
                             "path": path_entries(path)}
            case ir.BinOp("&" | "|", "bool", ir.Var(g), _) if g in guards:
                guards[s.pat[0].name] = guards[g]
            case ir.If(ir.Var(c), then_, else_, _) if c in guards:
                _guards(then_, (*path, (guards[c], True)), guards, out)
                _guards(else_, (*path, (guards[c], False)), guards, out)
            case ir.If() | ir.Loop():
                for b in bodies(s.exp):
                    _guards(b, path, guards, out)


def version_runs(params: Mapping[str, Mapping]) -> list[dict[str, int]]:
    """Threshold settings that between them run every version: each is one
    root-to-leaf path through every tree, thresholds off the paths left at
    their defaults.  Trees side by side take their paths in step (run k
    takes each tree's k-th path, cycling), so the runs number the most
    paths of any one tree, not their product."""
    return _covering(forest(params))


def _covering(trees: list[Node]) -> list[dict[str, int]]:
    if not trees:
        return [{}]
    per_tree = [_paths(t) for t in trees]
    runs = []
    for k in range(max(len(p) for p in per_tree)):
        run: dict[str, int] = {}
        for paths in per_tree:
            run.update(paths[k % len(paths)])
        runs.append(run)
    return runs


def _paths(node: Node) -> list[dict[str, int]]:
    return [{node.name: FORCED[taken], **below}
            for taken in (True, False) for below in _covering(node.children[taken])]
