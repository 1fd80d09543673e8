"""No import circle inside an app: the strongly connected components (of more than one module) of
grimp's import graph, the count bench/import_cycles.py prints. Imports inside functions count too."""
from __future__ import annotations

import ast
from pathlib import Path

import grimp
import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

APPS = ["core", "annotations", "inference", "scoring", "demo", "cprt_site"]  # every app: no import circle inside any
ROOTS = ["core", "annotations", "inference", "scoring", "demo", "cprt_site"]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph(*ROOTS)


def circles(graph, modules: set[str]) -> list[list[str]]:
    """The strongly connected components of more than one module within `modules` (scipy's csgraph), each
    sorted, in order; `graph.find_modules_directly_imported_by(m)` gives a module's direct imports."""
    names = sorted(modules)
    at = {m: i for i, m in enumerate(names)}
    edges = [(at[m], at[w]) for m in names for w in graph.find_modules_directly_imported_by(m) & modules]
    rows, cols = (list(c) for c in zip(*edges)) if edges else ([], [])
    matrix = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(names), len(names)))
    _, component = connected_components(matrix, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for name, c in zip(names, component):
        groups.setdefault(int(c), []).append(name)
    return sorted(g for g in groups.values() if len(g) > 1)


def test_the_circle_finder_finds_a_circle():
    class Graph:  # a -> b -> c -> a, c -> d
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}

        def find_modules_directly_imported_by(self, module):
            return self.edges[module]

    assert circles(Graph(), {"a", "b", "c", "d"}) == [["a", "b", "c"]]


@pytest.mark.parametrize("app", APPS)
def test_no_import_circle_inside_the_app(graph, app):
    modules = {m for m in graph.modules if m == app or m.startswith(app + ".")}
    found = circles(graph, modules)
    assert found == [], "\n".join(f"{len(c)} modules: {' '.join(c)}" for c in found)


BENCH = Path(__file__).resolve().parents[2] / "bench"


class BenchGraph:
    """bench/'s scripts import each other by their names (`import common`, `from bench import common`); a
    name that is also an app's (bench/scoring.py) is read as the app, which is what the scripts mean."""

    def __init__(self):
        scripts = {p.stem for p in BENCH.glob("*.py")} - set(APPS)
        self.edges = {p.stem: self._imports(p, scripts) - {p.stem} for p in BENCH.glob("*.py") if p.stem in scripts}

    @staticmethod
    def _imports(path: Path, scripts: set[str]) -> set[str]:
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):  # inside functions too
            if isinstance(node, ast.Import):
                names = [alias.name.split(".") for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module.split(".") + [alias.name] for alias in node.names]
            else:
                continue
            for parts in names:
                head = parts[1] if parts[0] == "bench" and len(parts) > 1 else parts[0]
                if head in scripts:
                    found.add(head)
        return found

    def find_modules_directly_imported_by(self, module):
        return self.edges[module]


def test_no_import_circle_in_bench():
    graph = BenchGraph()
    assert {"common", "vispr_import", "scale"} <= set(graph.edges) and "common" in graph.edges["vispr_import"]
    found = circles(graph, set(graph.edges))
    assert found == [], found  # bench/run_faults.py and bench/redis_outage.py once imported each other
