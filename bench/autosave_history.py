"""Benchmark: growth of the labeling history table over 200 draft autosaves, one row per save (the
old behaviour, CPRT_HISTORY_COALESCE_S=0) against coalesced bursts (the default window).

Run with `.venv/bin/python bench/autosave_history.py [--saves 200]`. Each case runs in a fresh SQLite
database under a temporary folder; the saves are what the labeling page sends while a reviewer types
(all 22 answers, a rationale each, a note), back to back. Table size comes from SQLite's dbstat.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(saves: int) -> dict:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection

    from annotations import taxonomy
    from annotations.services import editing, labeling_queue
    from annotations.models import Labeling, Profile
    from bench.common import make_run_images

    call_command("migrate", verbosity=0)
    make_run_images(1, 2)
    user = User.objects.create_user("bench-reviewer", password="bench-reviewer-password")
    Profile.objects.create(user=user, role="reviewer")
    labeling = labeling_queue.claim_next(user)
    keys = taxonomy.active().keys
    table = Labeling.history.model._meta.db_table

    def size() -> tuple[int, int]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT sum(pgsize) FROM dbstat WHERE name = %s", [table])
            pages = cursor.fetchone()[0] or 0
            cursor.execute(f"SELECT count(*) FROM {table}")
            return cursor.fetchone()[0], pages

    rows0, bytes0 = size()
    started = time.perf_counter()
    for i in range(saves):
        values = {k: (0.0, 0.5, 1.0)[(i + n) % 3] for n, k in enumerate(keys)}
        rationales = {k: f"rationale for {k}, typed up to keystroke {i}. " * 6 for k in keys}
        labeling = editing.save_draft(labeling, user, version=labeling.version, values=values, rationales=rationales, note=f"note {i}")
    elapsed = time.perf_counter() - started
    rows1, bytes1 = size()
    return {"window_s": settings.CPRT_HISTORY_COALESCE_S, "saves": saves, "rows_added": rows1 - rows0,
            "bytes_added": bytes1 - bytes0, "ms_per_save": round(1000 * elapsed / saves, 2)}


def run_case(saves: int, window: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="cprt-bench-history-") as data_dir:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")}
        env |= {"CPRT_DATA_DIR": data_dir, "DJANGO_SETTINGS_MODULE": "cprt_site.settings", "LOG_LEVEL": "WARNING",
                "CPRT_HISTORY_COALESCE_S": window, "PYTHONPATH": str(ROOT)}
        # SIGTERM raises SystemExit here (bench/common.py); subprocess.run then kills the child.
        done = subprocess.run([sys.executable, __file__, "--child", str(saves)], env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise SystemExit(f"child failed with exit {done.returncode}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--saves", type=int, default=200)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child:
        print(json.dumps(child(args.child)))
        return
    import bench.common  # noqa: F401  (SIGTERM ends the child too)
    for window in ("0", "60"):
        result = run_case(args.saves, window)
        label = "one row per save (old)" if window == "0" else f"coalesced, {window} s window"
        print(f"{label:28s} saves={result['saves']} history rows added={result['rows_added']} "
              f"table growth={result['bytes_added'] / 1e6:.2f} MB  {result['ms_per_save']} ms/save")


if __name__ == "__main__":
    main()
