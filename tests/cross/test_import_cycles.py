"""No import circle inside an app: the strongly connected components (of more than one module) of
grimp's import graph, the count bench/import_cycles.py prints. Imports inside functions count too."""
from __future__ import annotations

import grimp
import pytest

APPS = ["core", "annotations", "inference", "scoring", "demo", "cprt_site"]  # every app: no import circle inside any
ROOTS = ["core", "annotations", "inference", "scoring", "demo", "cprt_site"]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph(*ROOTS)


def circles(graph, modules: set[str]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module, within `modules` (iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & modules)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child) & modules))))
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


def test_no_import_circle_between_the_benchmarks():
    """bench/ is a folder of scripts (no package): bench/run_faults.py and bench/redis_outage.py once
    imported each other; what they share lives in bench/common.py."""
    bench = grimp.build_graph("bench")
    found = circles(bench, set(bench.modules))
    assert found == [], "\n".join(f"{len(c)} modules: {' '.join(c)}" for c in found)
