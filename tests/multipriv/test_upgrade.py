"""MultiPriv moved into benchmarks/multipriv (issue 35) with every row kept: upgraded as an operator upgrades.

A temporary SQLite database is migrated to the migrations main had before the move, given MultiPriv rows
(persons, images, pairs, a finished run of each kind with results and frozen truth, an admin log entry),
and its figures JSON is computed; then `manage.py migrate` runs with the new code, and every row, the
content types (their ids, permissions and admin history) and the figures must be as they were. Each side
runs in its own process (tests/support/multipriv_upgrade.py); the shared test database is never touched.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str], env: dict) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _state(out: str) -> dict:
    line = next(line for line in out.splitlines() if line.startswith("STATE "))
    return json.loads(line[len("STATE "):])


@pytest.mark.slow
def test_a_database_from_before_the_move_keeps_every_row_and_figure(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "CPRT_DATA_DIR"))}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'upgrade.sqlite3'}", CPRT_DATA_DIR=str(tmp_path / "data"),
               PYTHONPATH=str(ROOT), DJANGO_SETTINGS_MODULE="cprt_site.settings")

    before = _state(_run(["-m", "tests.support.multipriv_upgrade", "seed"], env))
    plan = _run(["manage.py", "showmigrations", "--plan"], env)
    assert "[ ]  annotations.0013_multipriv_moves_out" in plan and "[ ]  multipriv.0001_initial" in plan
    _run(["manage.py", "migrate", "--no-input"], env)
    after = _state(_run(["-m", "tests.support.multipriv_upgrade", "dump"], env))

    # what was seeded is there before the move: 3 persons, 9 images, 6 pairs, 2 runs of 6 + 3 results
    assert [len(before["rows"][t]) for t in ("annotations_person", "annotations_personimage", "annotations_personpair",
                                            "inference_run", "inference_runresult")] == [3, 9, 6, 2, 9]
    assert after["rows"] == before["rows"]
    # the content types moved (same ids), so their permissions and the admin's history follow them
    assert sorted(m for _, app, m in before["content_types"] if app == "annotations") == ["person", "personimage", "personpair"]
    assert [[pk, "multipriv", model] for pk, _, model in before["content_types"]] == after["content_types"]
    assert len(before["permissions"]) == 12 and after["permissions"] == before["permissions"]
    assert after["log_entries"] == before["log_entries"] and len(before["log_entries"]) == 1
    # the figures JSON of each run is byte for byte the one computed before the upgrade
    assert len(before["figures"]) == 2 and after["figures"] == before["figures"]
    reid = [json.loads(f) for f in before["figures"].values() if json.loads(f)["task"] == "multipriv-reid"][0]
    assert reid["metrics"]["metrics"]["accuracy"]["value"] is not None and reid["release_changes"] == []
