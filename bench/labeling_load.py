"""Load test of reviewer labeling: N concurrent reviewers against gunicorn on PostgreSQL.

Run with `.venv/bin/python bench/labeling_load.py [--duration 60] [--clients 20] [--workers W]`.
Production-like: PostgreSQL, and Redis as the cache that sessions are read through (--cache-url).
The script creates a fresh database (dropping one of the same name), migrates it, creates images
(with real stored PNG files) and reviewer accounts, starts gunicorn on a free 127.0.0.1 port and
logs in one HTTP client per reviewer. Each client loops: POST "next image", GET the labeling page,
GET the image bytes, POST a complete labeling (22 answers) - the "save". Before the load, one client
alone measures the unloaded save latency. Reported: requests/s, p50/p95/p99 latency per request
kind and overall, errors, whether the database holds exactly successful saves x 22 labels, whether
any image got more than k human labelings, and p95(save under load) / median(save unloaded).

With --queue, every reviewer submits one labeling before the load and the disagreement queue is stored
current, so each save also updates its image's row of the queue under the queue entry's row lock
(scoring.services.disagreements.follow_image, issue 37): the figure to compare with a run without it.
The run then reports whether the queue was still current at the end (every save followed it).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import requests

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "bench-reviewer-password-1"
VALUES = ("0", "0.5", "1")
VERSION_RE = re.compile(r'name="version" value="(\d+)"')
IMAGE_RE = re.compile(r'src="(/images/\d+/bytes)"')


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    p.add_argument("--clients", type=int, default=20, help="concurrent reviewers (default 20)")
    p.add_argument("--workers", type=int, default=min(2 * (os.cpu_count() or 1) + 1, 9), help="gunicorn workers")
    p.add_argument("--images", type=int, default=20000, help="images to create (default 20000)")
    p.add_argument("--baseline-saves", type=int, default=30, help="unloaded saves for the median (default 30)")
    p.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_labeling")
    p.add_argument("--cache-url", default="redis://127.0.0.1:6379/3",
                   help="CACHE_URL of the server, as in docker-compose.yml (sessions read through it); 'locmemcache://' for none")
    p.add_argument("--queue", action="store_true",
                   help="store the disagreement queue current before the load (each save then follows it)")
    p.add_argument("--keep-db", action="store_true", help="leave the database in place afterwards")
    p.add_argument("--json-out", type=Path, help="also write the summary as JSON here")
    return p.parse_args()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    k = (len(values) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recreate_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise SystemExit(f"refusing odd database name {name!r}")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


def server_env(args, data_dir: str) -> dict:
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": args.database_url,
            "CPRT_DATA_DIR": data_dir,
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(48),
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "0",
            "SESSION_COOKIE_SECURE": "0",
            "CSRF_COOKIE_SECURE": "0",
            "SECURE_HSTS_SECONDS": "0",
            "CONN_MAX_AGE": "60",
            "LOG_LEVEL": "WARNING",
            "CELERY_BROKER_URL": "filesystem://",
            "CPRT_LABELINGS_PER_IMAGE": "2",
            "CACHE_URL": args.cache_url,
        }
    )
    return env


def seed(n_images: int, n_users: int) -> None:
    """Images with stored PNG files, and reviewer accounts (runs in this process against the bench DB)."""
    import io

    import django
    from PIL import Image as PILImage

    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.db import connections

    from annotations.images import attach, clean_image
    from annotations.models import Image
    from core.models import Profile

    files = []
    for i in range(16):
        buf = io.BytesIO()
        PILImage.new("RGB", (320, 240), (i * 15, 100, 255 - i * 15)).save(buf, format="PNG")
        holder = Image(vispr_id=f"file_{i}")
        attach(holder, clean_image(buf.getvalue()))
        files.append((holder.file.name, holder.width, holder.height, holder.sha256))
    Image.objects.bulk_create(
        [
            Image(vispr_id=f"bench_{i:06d}", split="test", source="bench", file=f[0], width=f[1], height=f[2], sha256=f[3])
            for i, f in ((i, files[i % len(files)]) for i in range(n_images))
        ],
        batch_size=5000,
    )
    User = get_user_model()
    hashed = make_password(PASSWORD)
    users = User.objects.bulk_create([User(username=f"bench_r{i:02d}", password=hashed) for i in range(n_users)])
    Profile.objects.bulk_create([Profile(user=u, role="reviewer") for u in users])
    connections.close_all()


def store_queue() -> None:
    """Every reviewer's first labeling submitted (a reviewer new to the queue is not followed), then the
    disagreement queue of the active profile computed and stored current."""
    from annotations import taxonomy
    from django.contrib.auth import get_user_model

    from annotations.models import Labeling
    from annotations.services import editing, labeling_queue
    from scoring.models import ScoringProfile
    from scoring.services.disagreements import disagreement_queue

    keys = taxonomy.active().keys
    rng = random.Random(7)
    for user in get_user_model().objects.filter(username__startswith="bench_r").order_by("username"):
        labeling = labeling_queue.claim_next(user)
        editing.submit(labeling, user, version=labeling.version, values={k: float(rng.choice(VALUES)) for k in keys},
                       rationales={})
    queue = disagreement_queue(ScoringProfile.active())
    print(f"queue stored: {queue['count']} disputed images, {len(queue['annotators'])} annotators, "
          f"{Labeling.objects.filter(status=Labeling.STATUS_SUBMITTED).count()} labelings", flush=True)


def queue_current() -> bool:
    from scoring.models import ComputedMetrics, ScoringProfile
    from scoring.services.disagreements import queue_fingerprint, queue_key

    profile = ScoringProfile.active()
    entry = ComputedMetrics.objects.get(key=queue_key(profile))
    return entry.fingerprint == queue_fingerprint(profile)


class Reviewer:
    def __init__(self, base: str, username: str, stats, lock):
        self.base, self.username = base, username
        self.session = requests.Session()
        self.stats, self.lock = stats, lock
        self.saves = 0
        self.queue_empty = False

    def record(self, kind: str, seconds: float, ok: bool, detail: str = ""):
        with self.lock:
            self.stats["latency"][kind].append(seconds)
            if not ok:
                self.stats["errors"][kind].append(detail)

    def timed(self, kind: str, method: str, path: str, expect: int, **kw):
        start = time.perf_counter()
        try:
            response = self.session.request(method, self.base + path, allow_redirects=False, timeout=60, **kw)
        except requests.RequestException as exc:
            self.record(kind, time.perf_counter() - start, False, repr(exc))
            return None
        elapsed = time.perf_counter() - start
        ok = response.status_code == expect
        self.record(kind, elapsed, ok, f"HTTP {response.status_code}")
        return response if ok else None

    def login(self):
        self.session.get(self.base + "/accounts/login/", timeout=30)
        token = self.session.cookies["csrftoken"]
        r = self.session.post(
            self.base + "/accounts/login/",
            data={"username": self.username, "password": PASSWORD, "csrfmiddlewaretoken": token},
            allow_redirects=False,
            timeout=30,
        )
        if r.status_code != 302:
            raise SystemExit(f"login of {self.username} failed: HTTP {r.status_code}")

    def cycle(self, keys: list[str], rng: random.Random) -> bool:
        token = self.session.cookies["csrftoken"]
        r = self.timed("next", "POST", "/label/next", 302, data={"csrfmiddlewaretoken": token})
        if r is None:
            return True
        location = r.headers["Location"]
        if not re.search(r"/labelings/\d+/$", location):
            self.queue_empty = True
            return False
        path = urlsplit(location).path
        page = self.timed("page", "GET", path, 200)
        if page is None:
            return True
        image = IMAGE_RE.search(page.text)
        if image:
            self.timed("image", "GET", image.group(1), 200)
        version = VERSION_RE.search(page.text).group(1)
        data = {f"value-{k}": rng.choice(VALUES) for k in keys}
        data.update({"version": version, "csrfmiddlewaretoken": token, "note": "", "flag": ""})
        if self.timed("save", "POST", path + "submit", 302, data=data) is not None:
            self.saves += 1
        return True


def main():
    args = parse_args()
    sys.path.insert(0, str(ROOT))
    import bench.common  # noqa: F401  (SIGTERM ends gunicorn too: see bench/common.py)
    data_dir = tempfile.mkdtemp(prefix="cprt-bench-labeling-")
    env = server_env(args, data_dir)
    os.environ.update({k: env[k] for k in env if k not in ("PATH",)})
    os.environ["DJANGO_SETTINGS_MODULE"] = "cprt_site.settings"
    print(f"database {args.database_url} (fresh), data dir {data_dir}", flush=True)
    recreate_database(args.database_url)
    if args.cache_url.startswith("redis"):
        import redis

        redis.Redis.from_url(args.cache_url).flushdb()  # sessions and counts of an earlier run
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run(manage + ["migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    subprocess.run(manage + ["collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    t = time.perf_counter()
    seed(args.images, args.clients + 1)
    if args.queue:
        store_queue()
    print(f"seeded {args.images} images and {args.clients + 1} reviewers in {time.perf_counter() - t:.1f}s", flush=True)
    from annotations import taxonomy

    keys = list(taxonomy.from_file().keys)

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(Path(data_dir) / "gunicorn.log", "wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "cprt_site.wsgi", "--workers", str(args.workers), "--bind", f"127.0.0.1:{port}", "--timeout", "120"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180  # a busy machine needs a while for the workers' first request
        last = None
        while True:
            try:
                last = requests.get(base + "/accounts/login/", timeout=15).status_code
                if last == 200:
                    break
            except requests.RequestException as exc:
                last = repr(exc)
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"gunicorn did not start ({last}); see {log.name}")
            time.sleep(0.3)
        summary = run_load(args, base, keys)
    finally:
        from core.processes import stop_process

        stop_process(server, 20)
        log.close()
    summary["seeded_saves"] = args.clients + 1 if args.queue else 0
    summary.update(db_checks(summary))
    if args.queue:
        summary["queue_current_at_end"] = queue_current()
    if not args.keep_db:
        from django.db import connections

        connections.close_all()
        drop_database(args.database_url)
    report(summary, args)


def run_load(args, base: str, keys: list[str]) -> dict:
    lock = threading.Lock()
    # Unloaded: one reviewer alone, save latency median.
    baseline_stats = {"latency": defaultdict(list), "errors": defaultdict(list)}
    solo = Reviewer(base, f"bench_r{args.clients:02d}", baseline_stats, lock)
    solo.login()
    rng = random.Random(1)
    for _ in range(3):  # warm up every worker's connection and caches
        solo.cycle(keys, rng)
    baseline_stats["latency"].clear()
    for _ in range(args.baseline_saves):
        solo.cycle(keys, rng)
    baseline_saves = solo.saves

    stats = {"latency": defaultdict(list), "errors": defaultdict(list)}
    reviewers = [Reviewer(base, f"bench_r{i:02d}", stats, lock) for i in range(args.clients)]
    for r in reviewers:
        r.login()
    barrier = threading.Barrier(len(reviewers) + 1)
    stop_at = [0.0]

    def work(reviewer: Reviewer, seed_value: int):
        local = random.Random(seed_value)
        barrier.wait()
        while time.monotonic() < stop_at[0]:
            if not reviewer.cycle(keys, local):
                break

    threads = [threading.Thread(target=work, args=(r, i)) for i, r in enumerate(reviewers)]
    for th in threads:
        th.start()
    stop_at[0] = time.monotonic() + args.duration
    started = time.perf_counter()
    barrier.wait()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - started
    all_latencies = [x for values in stats["latency"].values() for x in values]
    return {
        "clients": args.clients,
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "duration_s": round(elapsed, 1),
        "requests": len(all_latencies),
        "requests_per_s": round(len(all_latencies) / elapsed, 1),
        "saves_ok": sum(r.saves for r in reviewers),
        "saves_per_s": round(sum(r.saves for r in reviewers) / elapsed, 1),
        "baseline_saves_ok": baseline_saves,
        "queue_ran_empty": any(r.queue_empty for r in reviewers),
        "latency_ms": {
            kind: {"n": len(v), "p50": round(pct(v, 50) * 1000, 1), "p95": round(pct(v, 95) * 1000, 1), "p99": round(pct(v, 99) * 1000, 1)}
            for kind, v in sorted(stats["latency"].items())
        }
        | {"all": {"n": len(all_latencies), "p50": round(pct(all_latencies, 50) * 1000, 1),
                   "p95": round(pct(all_latencies, 95) * 1000, 1), "p99": round(pct(all_latencies, 99) * 1000, 1)}},
        "errors": {kind: {"count": len(v), "examples": sorted(set(v))[:5]} for kind, v in stats["errors"].items() if v},
        "unloaded_save_median_ms": round(statistics.median(baseline_stats["latency"]["save"]) * 1000, 1),
        "unloaded_median_ms": {kind: round(statistics.median(v) * 1000, 1) for kind, v in sorted(baseline_stats["latency"].items())},
    }


def db_checks(summary: dict) -> dict:
    from django.db import connections
    from django.db.models import Count

    from annotations.models import Annotator, Label, Labeling

    connections.close_all()
    human_labels = Label.objects.filter(annotator__kind=Annotator.KIND_HUMAN).count()
    submitted = Labeling.objects.filter(status=Labeling.STATUS_SUBMITTED).count()
    expected = (summary["saves_ok"] + summary["baseline_saves_ok"] + summary["seeded_saves"]) * 22
    overfilled = (
        Labeling.objects.filter(annotator__kind=Annotator.KIND_HUMAN).exclude(status="skipped")
        .values("image").annotate(n=Count("pk")).filter(n__gt=2).count()
    )
    p95_save = summary["latency_ms"].get("save", {}).get("p95", float("nan"))
    return {
        "db_human_labels": human_labels,
        "db_submitted_labelings": submitted,
        "expected_labels": expected,
        "labels_match_saves_x22": human_labels == expected and submitted * 22 == expected,
        "images_over_k": overfilled,
        "save_p95_over_unloaded_median": round(p95_save / summary["unloaded_save_median_ms"], 2),
    }


def report(s: dict, args) -> None:
    print(f"\n{s['clients']} reviewers, {s['workers']} gunicorn workers, {s['cpus']} CPUs, {s['duration_s']} s")
    print(f"requests: {s['requests']} ({s['requests_per_s']}/s); saves: {s['saves_ok']} ({s['saves_per_s']}/s)")
    for kind, v in s["latency_ms"].items():
        print(f"  {kind:6s} n={v['n']:6d}  p50={v['p50']:7.1f} ms  p95={v['p95']:7.1f} ms  p99={v['p99']:7.1f} ms")
    print("unloaded medians (one reviewer alone): " + ", ".join(f"{k} {v} ms" for k, v in s["unloaded_median_ms"].items()))
    print(f"errors: {s['errors'] or 'none'}")
    print(f"labels in DB: {s['db_human_labels']} = (saves {s['saves_ok']} + baseline {s['baseline_saves_ok']}"
          f" + seeded {s['seeded_saves']}) x 22"
          f" = {s['expected_labels']}: {s['labels_match_saves_x22']}")
    print(f"images with more than k=2 human labelings: {s['images_over_k']}")
    print(f"save: unloaded median {s['unloaded_save_median_ms']} ms, p95 under load {s['latency_ms'].get('save', {}).get('p95')} ms, "
          f"ratio {s['save_p95_over_unloaded_median']}x (the target, at 20 clients, is < 10x)")
    if "queue_current_at_end" in s:
        print(f"disagreement queue stored before the load still current at the end (every save followed it): "
              f"{s['queue_current_at_end']}")
    if s["queue_ran_empty"]:
        print("WARNING: the queue ran empty during the run; use more --images")
    if args.json_out:
        args.json_out.write_text(json.dumps(s, indent=2))


if __name__ == "__main__":
    main()
