"""The layers hold: import-linter checks the contracts written in pyproject.toml, and the import
graph has no cycle that crosses folders."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).parent.parent
SRC = ROOT / "src"
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "contracts"
]


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in proc.stdout


def test_the_benchmark_contracts_cover_every_benchmark_package_by_pattern() -> None:
    """The contracts name benchmark packages by a pattern, never one by one, so that adding a
    benchmark adds no line to them; and every sub-package of benchmarks/ is a benchmark."""
    (registry,) = [c for c in CONTRACTS if c["name"].startswith("Only the registry loads")]
    (alone,) = [c for c in CONTRACTS if c["name"].startswith("Each benchmark package stands")]
    assert registry["forbidden_modules"] == alone["modules"] == ["medvidbench.benchmarks.*"]
    folder = SRC / "medvidbench" / "benchmarks"
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__"}
    assert not modules, f"modules beside the benchmark packages would count as one: {modules}"


def _folder(module: str) -> str:
    """The folder a module's file is in: a package's own for its ``__init__``."""
    is_package = (SRC / module.replace(".", "/") / "__init__.py").exists()
    return module if is_package else module.rpartition(".")[0]


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative).

    An import of one's own ancestor package is left out: Python imports every ancestor before
    a module anyway, so such an edge adds no dependency (``core.evaluation`` reading
    ``medvidbench.__version__``)."""
    edges = {
        m: sorted(
            d for d in graph.find_modules_directly_imported_by(m) if not m.startswith(d + ".")
        )
        for m in graph.modules
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, []))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_crosses_folders() -> None:
    graph = grimp.build_graph("medvidbench", cache_dir=None, exclude_type_checking_imports=True)
    crossing = [c for c in _cycles(graph) if len({_folder(m) for m in c}) > 1]
    assert crossing == []


def test_the_cycle_finder_finds_a_cycle_across_folders() -> None:
    """The finder itself: a made-up graph with a loop between two folders is reported."""
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.sub", "pkg.sub.b", "pkg.c"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.sub.b")
    graph.add_import(importer="pkg.sub.b", imported="pkg.a")
    graph.add_import(importer="pkg.c", imported="pkg")  # an ancestor: not a loop
    graph.add_import(importer="pkg", imported="pkg.c")
    assert _cycles(graph) == [["pkg.a", "pkg.sub.b"]]


def test_no_server_path_may_keep_a_copy_of_a_test_set() -> None:
    """The command line's test-set copies hold a test set's answers: the contract that keeps
    the server (and everything it imports) from reaching the module is there, whole."""
    (kept,) = [c for c in CONTRACTS if c["name"].startswith("Only the command line keeps")]
    assert kept["forbidden_modules"] == ["medvidbench.core.testset_cache"]
    assert {"medvidbench.server", "medvidbench.library", "medvidbench.benchmarks"} <= set(
        kept["source_modules"]
    )
