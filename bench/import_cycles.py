"""Import circles inside each app (strongly connected components of more than one module), by grimp's
graph; imports inside functions count too. Run: .venv/bin/python bench/import_cycles.py
(tests/cross/test_import_cycles.py asserts 0 for every app)."""
import os
import sys

# bench/ holds scripts named like the apps (bench/scoring.py): look the apps up from the repository root.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.path.dirname(HERE))

import grimp  # noqa: E402

APPS = ["core", "annotations", "inference", "scoring", "demo", "cprt_site"]


def sccs(graph, modules):
    """Tarjan's strongly connected components of the import graph restricted to modules."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in modules:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return out


graph = grimp.build_graph(*APPS)
total = 0
for app in APPS:
    mods = {m for m in graph.modules if m == app or m.startswith(app + ".")}
    for comp in sccs(graph, mods):
        total += 1
        print(f"{app}: {len(comp)} modules: {' '.join(comp)}")
print(f"{total} import circles")
