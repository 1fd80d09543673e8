"""Benchmark: the judge-run page at N images, on PostgreSQL, for one or more source trees side by side.

    .venv/bin/python bench/run_page.py [--images 20000] [--database-url postgres://postgres@127.0.0.1:5432/runpage]
                                       [--reuse] [--compare /tmp/old-tree] [--repeat 7] [--profile]

It builds the database with bench/scale.py's set-based setup (N images, 4 annotators, 10 finished judge
runs, scores recomputed; the database of that name is dropped first) unless --reuse finds it built.
Then, per tree (this checkout, then each --compare tree, one after the other, on the same data), a
fresh process serves the first run's page (/scoring/runs/<id>/) through the Django test
client: the first request (cold for this process; the metrics cache as the previous tree left it), then
--repeat warm requests; it prints the median and the range of the warm server time and the queries of
a warm request. --profile adds cProfile's top functions of one warm request. Every tree runs on this
checkout's virtual environment; make an old tree with `git archive <commit> | tar -x -C /tmp/old-tree`.
The database is kept (drop it with `dropdb`).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common  # noqa: F401 - SIGTERM ends the benchmark cleanly

ROOT = Path(__file__).resolve().parent.parent


def _setup_django(tree: Path, database_url: str) -> None:
    sys.path.insert(0, str(tree))
    os.environ.update(DATABASE_URL=database_url, CPRT_DATA_DIR=tempfile.mkdtemp(prefix="run-page-bench-"),
                      DJANGO_SETTINGS_MODULE="cprt_site.settings")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1")
    import django

    django.setup()


def build(images: int, database_url: str, reuse: bool) -> None:
    """The scale bench's world at `images` images (skipped with --reuse when a finished run has results)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import scale

    if reuse:
        import psycopg

        try:
            with psycopg.connect(database_url) as conn:
                if conn.execute("SELECT count(*) FROM inference_runresult").fetchone()[0]:
                    return
        except psycopg.Error:
            pass
    scale.recreate_database(database_url)
    _setup_django(ROOT, database_url)
    import django
    from django.core.management import call_command

    from scoring.models import ScoringProfile
    from scoring.services.scores import recompute_scores

    call_command("migrate", interactive=False, verbosity=0)
    started = time.perf_counter()
    annotators, runs, _ = scale.setup_world()
    scale.build(1, images + 1, annotators, runs)
    scale.finish_runs(runs)
    recompute_scores(ScoringProfile.active())
    with django.db.connection.cursor() as cur:
        cur.execute("ANALYZE")
    print(f"built {images:,} images in {time.perf_counter() - started:.0f} s")


def measure(database_url: str, repeat: int, profile: bool) -> dict:
    """In a child process whose sys.path starts with the tree measured."""
    _setup_django(Path(os.environ["RUN_PAGE_TREE"]), database_url)
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from inference.models import Run

    client = Client()
    client.force_login(get_user_model().objects.get(username="adjudicator"))
    run = Run.objects.filter(task="judge", status="finished").order_by("id").first()
    url = reverse("scoring:run", args=[run.pk])

    def get() -> float:
        started = time.perf_counter()
        response = client.get(url)
        seconds = time.perf_counter() - started
        if response.status_code != 200:
            raise RuntimeError(f"{url}: {response.status_code}")
        return seconds * 1000

    first = get()
    warm = [get() for _ in range(repeat)]
    with CaptureQueriesContext(connection) as ctx:
        get()
    out = {"first_ms": first, "warm_ms": warm, "queries": len(ctx), "results": run.results.count()}
    if profile:
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        prof.runcall(get)
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(25)
        out["profile"] = text.getvalue()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/runpage")
    parser.add_argument("--reuse", action="store_true", help="keep a database already built")
    parser.add_argument("--compare", action="append", default=[], help="another source tree to measure beside this one")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.database_url, args.repeat, args.profile)))
        return
    build(args.images, args.database_url, args.reuse)
    trees = [ROOT] + [Path(t).resolve() for t in args.compare]
    results = {}
    for tree in trees:
        cmd = [sys.executable, __file__, "--child", "--database-url", args.database_url, "--repeat", str(args.repeat)]
        done = subprocess.run(cmd + (["--profile"] if args.profile else []), cwd=tree, env={**os.environ, "RUN_PAGE_TREE": str(tree)},
                              capture_output=True, text=True, check=True)
        results[tree] = json.loads(done.stdout.strip().splitlines()[-1])
    for tree, r in results.items():
        warm = r["warm_ms"]
        print(f"{str(tree):<40} run page, {r['results']:,} results: first {r['first_ms']:.0f} ms, warm median "
              f"{statistics.median(warm):.0f} ms (min {min(warm):.0f}, max {max(warm):.0f}, {len(warm)} requests), {r['queries']} queries")
        if "profile" in r:
            print(r["profile"])


if __name__ == "__main__":
    main()
