"""SPY-Bench's move into benchmarks/spy_bench/, as an operator upgrades: a database at the migrations
main had before the move (inference 0017 and the other apps' leaves then), with a SPY-Bench set, its
items and rows, an import and a finished run with results, migrates to the end with every row kept,
the content types moved to spy_bench (same ids, so permissions stay theirs) and the run's figures
unchanged. In subprocesses on a temporary SQLite file; the shared test database is never migrated
backwards."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MODELS = ("spyset", "spyitem", "spyrow", "spyimport")


def step(name: str, tmp_path: Path) -> dict:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'upgrade.sqlite3'}", "CPRT_DATA_DIR": str(tmp_path / "data"),
           "CACHE_URL": "locmemcache://", "DJANGO_SETTINGS_MODULE": "cprt_site.settings", "PYTHONPATH": str(ROOT)}
    env.pop("CELERY_BROKER_URL", None)
    out = tmp_path / f"{name}.json"
    done = subprocess.run([sys.executable, "-m", "tests.benchmarks.spy_bench.upgrade_steps", name, str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text())


@pytest.mark.slow
def test_an_upgrade_across_the_move_keeps_every_row_content_type_and_figure(tmp_path):
    before = step("old", tmp_path)
    assert "inference.0017_run_result_outcome_item_index" in before["applied"]
    assert not [m for m in before["applied"] if m.startswith("spy_bench.") or m.startswith("inference.0018")]
    counts = {table: len(rows) for table, rows in before["rows"].items()}
    assert counts["inference_spyset"] == 1 and counts["inference_spyimport"] == 1
    assert counts["inference_spyitem"] == 5 and counts["inference_spyrow"] > counts["inference_spyitem"]
    assert sorted(model for _, app, model in before["content_types"] if app == "inference") == sorted(MODELS)
    assert before["permissions"]  # the models' permissions, on those content types
    assert json.loads(before["figures"])["metrics"]["total"] == counts["inference_spyrow"]

    after = step("new", tmp_path)
    assert {"spy_bench.0001_initial", "inference.0018_spy_moves_out"} <= set(after["applied"])
    assert after["run_id"] == before["run_id"]
    for table, rows in before["rows"].items():
        assert after["rows"][table] == rows, table  # every row, every column, unchanged
    assert after["content_types"] == [[pk, "spy_bench", model] for pk, _, model in before["content_types"]]
    assert after["permissions"] == before["permissions"]
    assert after["figures"] == before["figures"]
