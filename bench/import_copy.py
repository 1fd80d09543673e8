"""Benchmark: the CPRT-Bench import on PostgreSQL beside a bare COPY of the same rows: rows/s, ratio, peak RSS.

    .venv/bin/python bench/import_copy.py [--rows 50000] [--repeat 1] [--skip-bare]
                                          [--database-url postgres://postgres@127.0.0.1:5432/importbench]

It writes a JSON Lines file of N CPRT-Bench rows (22 labels each; bench/import_export.write_bench_file),
migrates a template database (<name>_template), and then, for each run, recreates <name> from the
template (empty tables) and measures in a fresh child process:
- bare COPY: the same images and their 22 labels per row COPYed straight into the real tables (their
  indexes, their constraints, the deferred foreign-key checks at COMMIT), from COPY text prepared before
  the clock starts: only the database's own work; no parsing, no validation, no history, no scores;
- import: `import_bench_file` as `import_cprt --split test` runs it (validation pass, COPY into staging,
  set-based merges with label history, the profile fit, rescoring, audit), up to and including COMMIT;
  with its phases (store: the one pass that checks and COPYs every row, then the merges; fit; rescore;
  commit). scipy.optimize is imported before the clock.
Each child's peak RSS (ru_maxrss) is printed beside its rate. Runs alternate (bare, import, bare, ...)
so a busy machine weighs on both alike; the best of --repeat is printed. Both databases are dropped
at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import common  # noqa: F401 - SIGTERM ends the benchmark cleanly

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent


def _admin(url: str, *statements: str) -> None:
    import psycopg

    parts = urlsplit(url)
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True) as conn:
        for sql in statements:
            conn.execute(sql)


def _with_name(url: str, name: str) -> str:
    return urlsplit(url)._replace(path=f"/{name}").geturl()


def _child_env(url: str, data_dir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")}
    # Production settings: with DEBUG on, Django keeps the SQL of recent queries, which is not what we measure.
    return env | {"DATABASE_URL": url, "CPRT_DATA_DIR": data_dir, "DJANGO_SETTINGS_MODULE": "cprt_site.settings",
                  "LOG_LEVEL": "WARNING", "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(48), "ALLOWED_HOSTS": "localhost"}


def _run_child(url: str, data_dir: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", *args], env=_child_env(url, data_dir), cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"child {args[0]} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# Children (one process each, so that ru_maxrss is the peak of that run alone)


def child_migrate(path: Path, n_rows: int) -> dict:
    """Migrate the template database and write the file of rows (once)."""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)
    if not path.exists():
        sys.path.insert(0, str(HERE))
        from import_export import write_bench_file

        write_bench_file(path, n_rows)
    return {}


def child_bare(path: Path) -> dict:
    """COPY text for the images (explicit ids) and their labels written to files, then timed: both COPYs and COMMIT."""
    import django
    import psycopg

    django.setup()
    from annotations import taxonomy
    from annotations.models import Annotator, Image, Label

    tax = taxonomy.active()
    attribute_ids = [taxonomy.attribute_ids()[k] for k in tax.keys]
    gt_id = Annotator.ground_truth("bare-copy").pk
    first = (Image.objects.order_by("-id").values_list("id", flat=True).first() or 0) + 1
    images, labels = path.with_suffix(".images.copy"), path.with_suffix(".labels.copy")
    with path.open("rb") as src, images.open("w") as img_out, labels.open("w") as lab_out:
        for n, line in enumerate(src):
            row = json.loads(line)
            flat = {k: v for group in row["binary_labels"].values() for k, v in group.items()}
            img_out.write(f"{first + n}\t{row['id']}\ttest\t\t\tbare\t\t[]\t{row['level']}\t{row['score']!r}\tf\tnow\n")
            lab_out.write("".join(f"{first + n}\t{gt_id}\t{a}\t{flat[k]}\t\tnow\tnow\n" for a, k in zip(attribute_ids, tax.keys)))
    dsn = os.environ["DATABASE_URL"]
    with psycopg.connect(dsn) as conn:
        started = time.perf_counter()
        with conn.cursor() as cur:
            for table, columns, source in (
                (Image._meta.db_table, "id, vispr_id, split, file, sha256, source, vispr_split, vispr_labels, published_level, "
                 "published_score, unsuitable, created_at", images),
                (Label._meta.db_table, "image_id, annotator_id, attribute_id, value, rationale, created_at, updated_at", labels),
            ):
                with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy, source.open("rb") as fh:
                    while block := fh.read(1 << 20):
                        copy.write(block)
        conn.commit()
        seconds = time.perf_counter() - started
    return {"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def child_import(path: Path) -> dict:
    import django

    django.setup()
    import scipy.optimize  # noqa: F401 - the fit's solver, imported before the clock

    from scoring.cprt_bench import importing, refit

    phases: dict[str, float] = {}
    peaks: dict[str, float] = {"start": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}

    def timed(module, name, phase):
        inner = getattr(module, name)

        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - t0
                peaks[phase] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the peak so far
        setattr(module, name, wrapper)

    timed(importing, "scan_file", "validate")  # the SQLite path only; on PostgreSQL checking is part of "store"
    timed(importing, "_store_rows", "store")
    timed(refit, "stored_published_rows", "fit")
    timed(refit, "fit_stored", "fit")
    timed(importing.profiles, "record_change", "rescore")
    timed(importing, "recompute_scores", "rescore")
    from django.db import transaction

    started = time.perf_counter()
    with transaction.atomic():  # the import's own atomic block is then a savepoint: COMMIT is timed apart
        result = importing.import_bench_file(path, "test")
        before_commit = time.perf_counter()
    seconds = time.perf_counter() - started
    phases["commit"] = time.perf_counter() - before_commit
    phases["other"] = seconds - sum(phases.values())
    return {"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "phases": phases, "peaks": peaks, "created": result.images_created, "scored": result.scored}


# ---------------------------------------------------------------------------------------------


def compare(n_rows: int, url: str, work: Path, repeat: int = 1, skip_bare: bool = False) -> dict:
    """{"bare": best run, "import": best run}, each {"seconds", "rss_mb", "rows_s", ...}; databases dropped after."""
    name = urlsplit(url).path.lstrip("/")
    template = f"{name}_template"
    path = work / f"bench-{n_rows}.jsonl"
    best: dict[str, dict] = {}
    try:
        _admin(url, f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)', f'CREATE DATABASE "{template}"')
        _run_child(_with_name(url, template), str(work), "migrate", str(path), str(n_rows))
        for _ in range(repeat):
            for kind in ("import",) if skip_bare else ("bare", "import"):
                _admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                run = _run_child(url, str(work), kind, str(path))
                run["rows_s"] = n_rows / run["seconds"]
                if kind not in best or run["seconds"] < best[kind]["seconds"]:
                    best[kind] = run
    finally:
        _admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')
    return best


def report(n_rows: int, best: dict) -> str:
    imp = best["import"]
    lines = [f"import of {n_rows:,} CPRT-Bench rows (22 labels each), committed, on PostgreSQL:"]
    if "bare" in best:
        bare = best["bare"]
        lines.append(f"  bare COPY      {bare['rows_s']:>9,.0f} rows/s  {bare['seconds']:8.1f} s  peak RSS {bare['rss_mb']:6.0f} MB")
    lines.append(f"  import_cprt    {imp['rows_s']:>9,.0f} rows/s  {imp['seconds']:8.1f} s  peak RSS {imp['rss_mb']:6.0f} MB")
    if "bare" in best:
        lines.append(f"  ratio import / bare COPY: {imp['rows_s'] / best['bare']['rows_s']:.2f}")
    lines.append("  import phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in imp["phases"].items()))
    lines.append("  import peak RSS by the end of: " + ", ".join(f"{k} {v:.0f} MB" for k, v in imp["peaks"].items()))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--skip-bare", action="store_true", help="time the import alone (e.g. at 1M rows)")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/importbench")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child:
        kind, *rest = args.child
        children = {"migrate": lambda: child_migrate(Path(rest[0]), int(rest[1])),
                    "bare": lambda: child_bare(Path(rest[0])), "import": lambda: child_import(Path(rest[0]))}
        out = children[kind]()
        print(json.dumps(out))
        return 0
    with tempfile.TemporaryDirectory(prefix="import-bench-") as work:
        best = compare(args.rows, args.database_url, Path(work), args.repeat, args.skip_bare)
    print(report(args.rows, best))
    return 0


if __name__ == "__main__":
    sys.exit(main())
