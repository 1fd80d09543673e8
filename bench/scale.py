"""Benchmark at scale: the scoring and labeling pages at 1,000 images and at N, on PostgreSQL.

    .venv/bin/python bench/scale.py [--images 100000] [--small 1000] [--database-url postgres://postgres@127.0.0.1:5432/scalebench]
                                    [--keep] [--skip-pages] [--skip-evaluate] [--skip-agreement] [--adjudications-only]

It creates the database named in --database-url (dropping one of that name), migrates it, and
builds the data in set-based SQL (INSERT ... SELECT over generate_series): images with published
ground truth, 4 annotators (2 reviewers who submitted 90% of the images, 2 model annotators) with a
label per attribute, and 10 finished judge runs with a continuous score per image. Scores are
computed by `recompute_scores` (the service the app uses). Then, per scale (--small, then N):
- every page's server time (the scoring pages, the admin's images and labels, the run list and a run's admin page,
  the reviewer's pages) through the Django test client (in process): cold (the metrics cache
  emptied; at scale the page answers 202 "being computed" and sends refresh jobs: the first answer), the
  jobs' time (run one after the other in a worker process of their own, bench/scale_worker.py, as one
  Celery worker process would) and that worker's peak memory (VmHWM, reset before each page's jobs),
  warm (the next request, with the figures), the time until the figures show (cold + jobs + warm), and
  each one's query count; the leaderboard's evaluate() calls on the warm request (0 when its cache hits);
- one adjudication (issue 37): the top disputed image's first disputed attribute decided through the
  adjudication service, then `/api/metrics/` asked (and the jobs it sends run by the worker) until every
  run's figures are current again, then the disagreement queue's page asked until it is current too (its
  seconds counted from there); once for an image whose published ground truth wins, once for one scored by
  its consensus (its published values cleared first, and the figures and the queue brought current); where runs'
  figures were slow, also the seconds until every run's point estimates were current (their first jobs ended,
  scoring.services.run_metrics.points_first), before the intervals; --adjudications-only measures these alone;
- the process's peak RSS after the pages (what a web worker that served them holds).
And the CPRT-Bench import of --import-rows rows beside a bare COPY of the same rows, committed, with
each one's peak RSS (bench/import_copy.py, in databases of its own).
Also, on synthetic arrays (no database): evaluate() at N with few (101) and many distinct
predicted values, and the agreement study at 20k x 4 and 100k x 4 annotators. And `django.setup()`
time and RSS in a fresh process (bench/startup.py's probe). The database is dropped at the end
unless --keep.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit


import common  # noqa: F401 - SIGTERM ends the benchmark cleanly
import import_copy
from scale_report import print_adjudications, print_pages
from scale_worker import Worker
from synthetic import bench_agreement, bench_evaluate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUNS = 10


def recreate_database(url: str, drop_only: bool = False) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            conn.execute(f'CREATE DATABASE "{name}"')


# ---------------------------------------------------------------------------------------------
# Pure parts: evaluate() and the agreement study on synthetic arrays


# ---------------------------------------------------------------------------------------------
# The database: set-based building


def build(first: int, last: int, annotators: dict, runs: list[int]) -> None:
    """Images first..last-1 (ids in vispr_id), their labels, labelings and judge results, in SQL."""
    from django.db import connection, transaction

    from annotations import taxonomy
    from annotations.models import Image, Label, Labeling
    from inference.models import RunResult

    attribute_ids = list(taxonomy.attribute_ids().values())
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {Image._meta.db_table} (vispr_id, split, file, sha256, source, vispr_split, vispr_labels, "
            "published_level, published_score, unsuitable, created_at) "
            "SELECT '2017_' || lpad(g::text, 9, '0'), CASE WHEN g %% 5 = 0 THEN 'train' ELSE 'test' END, '', '', 'scale-bench', '', '[]'::jsonb, "
            "1 + g %% 4, ((3 - g %% 4) + (g %% 97) / 97.0) / 4.0, false, now() FROM generate_series(%s, %s) g",
            [first, last - 1],
        )
        cur.execute(f"SELECT min(id), max(id) FROM {Image._meta.db_table} WHERE source = 'scale-bench' AND vispr_id >= %s",
                    ["2017_" + str(first).rjust(9, "0")])
        lo, hi = cur.fetchone()
        for name, (annotator_id, share) in annotators.items():
            # Each annotator labels `share` of the images: a value per attribute from a hash of the ids.
            cur.execute(
                f"INSERT INTO {Label._meta.db_table} (image_id, annotator_id, attribute_id, value, rationale, created_at, updated_at) "
                "SELECT i.id, %s, a, (abs(hashtext(i.id::text || ':' || a::text || ':' || %s::text)) %% 3) / 2.0, '', now(), now() "
                f"FROM {Image._meta.db_table} i, unnest(%s::int[]) a "
                "WHERE i.id BETWEEN %s AND %s AND abs(hashtext(i.id::text || %s)) %% 100 < %s",
                [annotator_id, annotator_id, attribute_ids, lo, hi, name, int(share * 100)],
            )
            if name.startswith("human"):
                cur.execute(
                    f"INSERT INTO {Labeling._meta.db_table} (image_id, annotator_id, status, version, note, flag, created_at, updated_at, "
                    "submitted_at, draft_values, draft_rationales, assisted, suggestions_seen, suggested_values) "
                    "SELECT DISTINCT image_id, annotator_id, 'submitted', 1, '', '', now(), now(), now(), '{}'::jsonb, '{}'::jsonb, "
                    "false, '[]'::jsonb, '{}'::jsonb "
                    f"FROM {Label._meta.db_table} "
                    "WHERE annotator_id = %s AND image_id BETWEEN %s AND %s",
                    [annotator_id, lo, hi],
                )
        for k, run_id in enumerate(runs):
            cur.execute(
                f"INSERT INTO {RunResult._meta.db_table} (run_id, item_id, image_id, outcome, score, reasoning, raw, error, "
                "tokens_in, tokens_out, latency_ms, created_at) "
                "SELECT %s, i.id, i.id, CASE WHEN abs(hashtext(i.id::text || %s)) %% 50 = 0 THEN 'refused' ELSE 'ok' END, "
                "CASE WHEN abs(hashtext(i.id::text || %s)) %% 50 = 0 THEN NULL "
                "ELSE least(1, greatest(0, i.published_score + (abs(hashtext(i.id::text || 'n' || %s)) %% 10007) / 10007.0 * 0.3 - 0.15)) END, "
                "'', '{}'::jsonb, '', 0, 0, 0, now() "
                f"FROM {Image._meta.db_table} i WHERE i.id BETWEEN %s AND %s",
                [run_id, k, k, k, lo, hi],
            )
    from annotations import label_version

    label_version.bump(a for a, _ in annotators.values())  # written past the label-writing API: counted as it would
    for run_id in runs:
        n = RunResult.objects.filter(run_id=run_id).count()
        from inference.models import Run

        Run.objects.filter(pk=run_id).update(total=n, done=n)


def setup_world() -> tuple[dict, list[int], object]:
    from django.contrib.auth import get_user_model

    from annotations.models import Annotator
    from core.models import Profile
    from inference.models import Run
    from scoring.models import ScoringProfile

    User = get_user_model()
    annotators = {}
    for name in ("human-a", "human-b"):
        user = User.objects.create_user(username=name, password="scale-bench-password-1")
        Profile.objects.create(user=user, role="reviewer")
        annotators[name] = (Annotator.for_user(user).pk, 0.9)
    for provider, model in (("openai", "gpt-5.1"), ("gemini", "gemini-3-flash")):
        annotators[f"model-{model}"] = (Annotator.for_model(provider, model, "annotate-v1").pk, 1.0)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([a for a, _ in annotators.values()])
    runs = [Run.objects.create(task="judge", provider="openai", model_name=f"judge-{k}", strategy=("zero_shot", "taxonomy")[k % 2],
                               prompt_version="judge-v1", status="finished", prompt_text={"system": "bench"}).pk for k in range(RUNS)]
    staff = User.objects.create_user(username="adjudicator", password="scale-bench-password-1", is_staff=True, is_superuser=True)
    Profile.objects.create(user=staff, role="admin")
    return annotators, runs, staff


def finish_runs(runs: list[int]) -> None:
    from django.utils import timezone

    from inference.models import Run, RunResult

    for run_id in runs:
        ids = list(RunResult.objects.filter(run_id=run_id).order_by("image_id").values_list("image_id", flat=True))
        Run.objects.filter(pk=run_id).update(image_ids=ids, item_ids=ids, total=len(ids), done=len(ids), finished_at=timezone.now())


def pages(runs: list[int], reviewer_id: int) -> dict[str, str]:
    """The staff pages, then (names starting "reviewer") the reviewer's queue and one of their labelings."""
    from django.urls import reverse

    from annotations.models import Labeling

    from scoring.models import DisputedImage

    labeling = Labeling.objects.filter(annotator_id=reviewer_id).order_by("-id").first()

    def top_disputed() -> str:  # where an adjudicator arrives from the disagreements page (its rows exist by then)
        return reverse("scoring:review", args=[DisputedImage.objects.order_by("-impact", "image_id").values_list("image_id", flat=True)[0]])

    return {
        "home": reverse("home"),
        "leaderboard": reverse("scoring:leaderboard"),
        "run": reverse("scoring:run", args=[runs[0]]),
        "compare": reverse("scoring:compare") + f"?a={runs[0]}&b={runs[1]}",
        "agreement": reverse("scoring:agreement"),
        "disagreements": reverse("scoring:disagreements"),
        "admin images": "/admin/annotations/image/",
        "admin labels": "/admin/annotations/label/",
        "run list": reverse("inference:run_list"),
        "run admin page": reverse("inference:run_detail", args=[runs[0]]),
        "review image": top_disputed,
        "reviewer queue": reverse("annotations:queue"),
        "reviewer labeling": reverse("annotations:labeling", args=[labeling.pk]),
    }


class SentJobs:
    """While open: the refresh jobs the requests send are recorded (for the worker), not sent."""

    def __enter__(self) -> list[str]:
        from core import dispatch

        self.jobs: list[str] = []
        self.original = dispatch._send
        dispatch._send = lambda task_name, args, kwargs, queue, rid: self.jobs.append(args[0])
        return self.jobs

    def __exit__(self, *exc) -> None:
        from core import dispatch

        dispatch._send = self.original


def measure_pages(client, urls: dict, worker: Worker, reviewer_client=None) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from scoring import metrics
    from scoring.models import ComputedMetrics

    ComputedMetrics.objects.all().delete()
    out = {}
    original = metrics.evaluate
    calls = {"n": 0}

    def counting(*args, **kwargs):
        calls["n"] += 1
        return original(*args, **kwargs)

    metrics.evaluate = counting
    try:
        with SentJobs() as jobs:
            for name, url in urls.items():
                url = url() if callable(url) else url
                row = {}
                for phase in ("cold", "warm"):
                    calls["n"] = 0
                    with CaptureQueriesContext(connection) as ctx:
                        started = time.perf_counter()
                        response = (reviewer_client if name.startswith("reviewer") else client).get(url)
                        seconds = time.perf_counter() - started
                    if response.status_code != 200 and not (phase == "cold" and response.status_code == 202):
                        raise RuntimeError(f"{url}: {response.status_code} {response.content[:300]!r}")
                    row[phase] = {"ms": seconds * 1000, "queries": len(ctx), "evaluate_calls": calls["n"], "status": response.status_code}
                    if phase == "cold":  # the refresh jobs the page sent, as a worker runs them
                        row["jobs"] = worker.run(list(jobs))
                        jobs.clear()
                        row["jobs_s"] = row["jobs"]["seconds"]
                cold_s = row["cold"]["ms"] / 1000
                row["figures_s"] = cold_s if row["cold"]["status"] == 200 else cold_s + row["jobs_s"] + row["warm"]["ms"] / 1000
                out[name] = row
    finally:
        metrics.evaluate = original
    return out


def _until_current(client, jobs: list[str], worker: Worker, url: str, params: dict, updating) -> dict:
    """Ask `url` until it answers with current figures (200, `updating(response)` false) and sent no job, the
    worker running the jobs each answer sends; returns the seconds, the requests, the jobs and the worker's time."""
    started, asked, ran, worker_s, cpu_s, parts_s = time.perf_counter(), 0, 0, 0.0, 0.0, None
    while True:
        asked += 1
        response = client.get(url, params)
        if response.status_code not in (200, 202):
            raise RuntimeError(f"{url}: {response.status_code} {response.content[:300]!r}")
        if response.status_code == 200 and not updating(response) and not jobs:
            return {"seconds": time.perf_counter() - started, "requests": asked, "jobs": ran, "worker_s": worker_s, "worker_cpu_s": cpu_s,
                    "parts_s": parts_s}
        sent_at = time.perf_counter() - started
        done = worker.run(list(jobs))
        if parts_s is None and done.get("parts_s") is not None:  # every entry's first job ended, some with part of the figures
            parts_s = sent_at + done["parts_s"]
        jobs.clear()
        ran, worker_s, cpu_s = ran + done["jobs"], worker_s + done["seconds"], cpu_s + done["cpu_s"]
        if asked > 20:
            raise RuntimeError(f"{url} did not become current after 20 requests")


def measure_adjudication(client, worker: Worker, staff, published: bool) -> dict:
    """One adjudication of the queue's top image (see the module's docstring): seconds until every run's figures
    in /api/metrics/ are current again, then until the disagreement queue is."""
    from django.urls import reverse

    from annotations.models import Image
    from scoring.models import DisputedImage, ImageScore, ScoringProfile
    from scoring.services.adjudication import active_attributes, adjudicate

    profile = ScoringProfile.active()
    with SentJobs() as jobs:
        def metrics():
            return _until_current(client, jobs, worker, "/api/metrics/", {"page_size": 100},
                                  lambda response: any(r["updating"] for r in response.json()["results"]))

        def queue():  # the page an adjudicator returns to (its first page of rows; its message says "Updating" when stale)
            return _until_current(client, jobs, worker, reverse("scoring:disagreements"), {},
                                  lambda response: b"Updating: some figures" in response.content)

        queue()  # the queue current (--adjudications-only: no page computed it)
        row = DisputedImage.objects.exclude(image__adjudications__isnull=False).order_by("-impact", "image_id").first()
        image = Image.objects.get(pk=row.image_id)
        if not published:
            Image.objects.filter(pk=image.pk).update(published_score=None, published_level=None)
        metrics(), queue()  # every run's figures and the queue current before the decision
        key = row.disputed[0]
        consensus = (ImageScore.objects.filter(image=image, profile=profile).values_list("binary_labels", flat=True).first() or {})
        value = 0.0 if _label_of(consensus, key) == 1 else 1.0  # the other side of the dispute: the consensus moves
        started = time.perf_counter()
        adjudicate(staff, image, active_attributes()[key], value, "scale bench")
        decided = time.perf_counter() - started
        then = metrics()
        seconds = time.perf_counter() - started
        after = queue()
        parts_s = None if then["parts_s"] is None else decided + then["parts_s"]  # from the decision too, as "seconds"
        return {**then, "seconds": seconds, "parts_s": parts_s, "adjudicate_s": decided, "queue_s": after["seconds"],
                "queue_requests": after["requests"], "queue_jobs": after["jobs"]}


def _label_of(binary_labels: dict, key: str):
    """The value of `key` in an ImageScore's binary labels ({level: {key: value}} or {key: value})."""
    if key in binary_labels:
        return binary_labels[key]
    return next((v[key] for v in binary_labels.values() if isinstance(v, dict) and key in v), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/scalebench")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--skip-pages", action="store_true")
    parser.add_argument("--build-only", action="store_true", help="build the data (both scales), keep the database, measure nothing")
    parser.add_argument("--adjudications-only", action="store_true", help="measure the adjudications, not the pages")
    parser.add_argument("--skip-evaluate", action="store_true")
    parser.add_argument("--skip-agreement", action="store_true")
    parser.add_argument("--import-rows", type=int, default=20_000, help="rows of the CPRT-Bench file imported (0: skip)")
    args = parser.parse_args()

    from startup import probe

    data_dir = Path(tempfile.mkdtemp(prefix="scale-bench-"))
    started = probe(ROOT, data_dir / "probe")
    print(f"django.setup(): {started['setup_s']:.2f} s, RSS {started['setup_rss_mb']:.0f} MB; "
          f"every URL loaded: {started['ready_s']:.2f} s, RSS {started['ready_rss_mb']:.0f} MB; heavy modules: {started['heavy'] or 'none'}")

    os.environ.update(DATABASE_URL=args.database_url, CPRT_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="cprt_site.settings")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from scoring.models import ScoringProfile
    from scoring.services.scores import recompute_scores

    recreate_database(args.database_url)
    worker = None
    try:
        call_command("migrate", interactive=False, verbosity=0)
        if not args.skip_evaluate:
            e = bench_evaluate(args.images)
            print(f"evaluate() at {args.images:,}: few distinct ({e['few']['distinct']}) {e['few']['seconds']:.2f} s, "
                  f"many distinct ({e['many']['distinct']:,}) {e['many']['seconds']:.2f} s, ratio {e['many']['seconds'] / e['few']['seconds']:.2f}")
        if not args.skip_agreement:
            a = bench_agreement()
            (k1, t1), (k2, t2) = a.items()
            print(f"agreement study: {k1} {t1:.2f} s, {k2} {t2:.2f} s, ratio {t2 / t1:.2f}")
        if args.import_rows:
            # In databases of their own (<name>_import, from a migrated template), each run in a fresh process.
            name = urlsplit(args.database_url).path.lstrip("/")
            import_url = urlsplit(args.database_url)._replace(path=f"/{name}_import").geturl()
            print(import_copy.report(args.import_rows, import_copy.compare(args.import_rows, import_url, data_dir)))
        if args.skip_pages:
            return
        annotators, runs, staff = setup_world()
        client, reviewer_client = Client(), Client()
        client.force_login(staff)
        from django.contrib.auth import get_user_model

        reviewer_client.force_login(get_user_model().objects.get(username="human-a"))
        by_scale, adjudications = {}, {}
        done = 1
        for scale in (args.small, args.images):
            t0 = time.perf_counter()
            build(done, scale + 1, annotators, runs)
            finish_runs(runs)
            recompute_scores(ScoringProfile.active())
            with django.db.connection.cursor() as cur:
                cur.execute("ANALYZE")
            print(f"built {scale:,} images in {time.perf_counter() - t0:.0f} s")
            done = scale + 1
            if args.build_only:
                continue
            worker = worker or Worker()
            if not args.adjudications_only:
                by_scale[scale] = measure_pages(client, pages(runs, annotators["human-a"][0]), worker, reviewer_client)
            adjudications[scale] = {case: measure_adjudication(client, worker, staff, published)
                                    for case, published in (("published ground truth", True), ("consensus-scored image", False))}
        if args.build_only:
            print(f"built; the database is kept: {args.database_url}")
            return
        if by_scale:
            print_pages(by_scale)
        print_adjudications(adjudications)
        print(f"peak RSS of this process after serving the pages: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        print(f"the worker process: {worker.started_mb:.0f} MB after start-up, peak {worker.peak_mb:.0f} MB")
    finally:
        if worker is not None:
            worker.close()
        django.db.connections.close_all()
        if not (args.keep or args.build_only):
            recreate_database(args.database_url, drop_only=True)
        shutil.rmtree(data_dir, ignore_errors=True)  # its data folder goes, also when it ends on SIGTERM (bench/common.py)


if __name__ == "__main__":
    main()
