"""Benchmark: the pages outside the optimised set at N images (issue 37), on PostgreSQL, for one or more
source trees side by side: the admin's labels (/admin/annotations/label/), the run list (/runs/) and a
judge run's page (/runs/<id>/).

    .venv/bin/python bench/large_pages.py [--images 20000] [--database-url postgres://postgres@127.0.0.1:5432/largepages]
                                          [--reuse] [--compare /tmp/old-tree] [--repeat 7]

The database is bench/run_page.py's (bench/scale.py's set-based world: N images, 4 annotators, 10
finished judge runs), built unless --reuse finds it. Per tree, a fresh process logs in as the admin
and asks each page once (first) and --repeat times more (warm) through the Django test client; it
prints the median and range of the warm times, the queries of a warm request, and how many of them
are a COUNT over the labels not bounded by a LIMIT. Make an old tree with
`git archive <commit> | tar -x -C /tmp/old-tree`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import common  # noqa: F401 - SIGTERM ends the benchmark cleanly
import run_page

ROOT = Path(__file__).resolve().parent.parent


def measure(database_url: str, repeat: int) -> dict:
    """In a child process whose sys.path starts with the tree measured."""
    run_page._setup_django(Path(os.environ["RUN_PAGE_TREE"]), database_url)
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from inference.models import Run

    User = get_user_model()
    admin = User.objects.filter(is_superuser=True).first() or User.objects.create_superuser("bench-admin", password="x")
    if not hasattr(admin, "profile"):
        from core.models import Profile

        Profile.objects.get_or_create(user=admin, defaults={"role": "admin"})
    client = Client()
    client.force_login(admin)
    run = Run.objects.filter(task="judge", status="finished").order_by("id").first()
    pages = {"admin labels": "/admin/annotations/label/", "run list": "/runs/", "run page": f"/runs/{run.pk}/"}
    out = {}
    for name, url in pages.items():
        def get() -> float:
            started = time.perf_counter()
            response = client.get(url)
            if response.status_code != 200:
                raise RuntimeError(f"{url}: {response.status_code}")
            return (time.perf_counter() - started) * 1000

        first = get()
        warm = [get() for _ in range(repeat)]
        with CaptureQueriesContext(connection) as ctx:
            get()
        counts = [q["sql"] for q in ctx.captured_queries
                  if "COUNT(" in q["sql"].upper() and '"annotations_label"' in q["sql"] and " LIMIT " not in q["sql"].upper()]
        out[name] = {"first_ms": first, "warm_ms": warm, "queries": len(ctx), "full_label_counts": len(counts)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/largepages")
    parser.add_argument("--reuse", action="store_true", help="keep a database already built")
    parser.add_argument("--compare", action="append", default=[], help="another source tree to measure beside this one")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.database_url, args.repeat)))
        return
    run_page.build(args.images, args.database_url, args.reuse)
    for tree in [ROOT] + [Path(t).resolve() for t in args.compare]:
        cmd = [sys.executable, __file__, "--child", "--database-url", args.database_url, "--repeat", str(args.repeat)]
        done = subprocess.run(cmd, cwd=tree, env={**os.environ, "RUN_PAGE_TREE": str(tree)}, capture_output=True, text=True)
        if done.returncode:
            print(f"{tree}: failed\n{done.stderr[-3000:]}")
            continue
        for name, r in json.loads(done.stdout.strip().splitlines()[-1]).items():
            warm = r["warm_ms"]
            print(f"{str(tree):<28} {name:<13} first {r['first_ms']:6.0f} ms, warm median {statistics.median(warm):5.0f} ms "
                  f"(min {min(warm):.0f}, max {max(warm):.0f}), {r['queries']} queries, {r['full_label_counts']} full COUNTs of labels")


if __name__ == "__main__":
    main()
