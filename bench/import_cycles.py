"""Import circles inside each app (strongly connected components of more than one module), by grimp's
graph; imports inside functions count too. Run: .venv/bin/python bench/import_cycles.py
(tests/cross/test_import_cycles.py asserts 0 for every app; its finder, on scipy's csgraph, counts here too)."""
import os
import sys

# bench/ holds scripts named like the apps (bench/scoring.py): look the apps up from the repository root.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.path.dirname(HERE))

import grimp  # noqa: E402

from tests.cross.test_import_cycles import circles  # noqa: E402 - the test's finder, so both count alike

APPS = ["core", "annotations", "inference", "scoring", "demo", "cprt_site"]


graph = grimp.build_graph(*APPS)
total = 0
for app in APPS:
    mods = {m for m in graph.modules if m == app or m.startswith(app + ".")}
    for comp in circles(graph, mods):
        total += 1
        print(f"{app}: {len(comp)} modules: {' '.join(comp)}")
print(f"{total} import circles")
