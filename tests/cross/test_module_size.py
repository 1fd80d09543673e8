"""No module of the code over 450 lines (issue 35; STYLE.md: past ~500 lines a module does two jobs).
Migrations are generated, tests are laid out by view; both aside."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["core", "annotations", "inference", "scoring", "demo", "cprt_site", "benchmarks", "bench"]
LIMIT = 450


def test_no_module_over_the_limit():
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for package in PACKAGES for path in (ROOT / package).rglob("*.py") if "migrations" not in path.parts
    }
    assert "cprt_site/settings.py" in sizes
    assert {name: n for name, n in sizes.items() if n > LIMIT} == {}
