"""`bench/run_faults.py --case redis`: a run survives its Redis going away for a while, mid-run.

    .venv/bin/python bench/run_faults.py --case redis --database-url postgres://postgres@127.0.0.1:5432/bench_redis \\
        [--redis-images 300] [--redis-down-s 10] [--redis-kill-at 0.3] [--concurrency 8] [--redis-chunk-target-s 3]

`--redis-chunk-target-s` (CPRT_RUN_CHUNK_TARGET_S, default 3 here): short chunks hand on during the
outage (their messages are lost with Redis and sent again by the reconciler); 600 (the production
default) keeps each lane in one chunk through the outage, which is where the chunk's own pause
decides how soon work resumes.

Starts its own redis-server on a free port (never the shared one; no persistence, so the restarted
server is EMPTY: every message that waited in it is gone, the hardest case), a fresh database
(dropped afterwards; SQLite when --database-url is sqlite:///...), the fake OpenAI server (one
process, so that it can count requests per image), a real Celery worker on `default,api` (as
compose runs it) and Celery beat (the reconciler), all with that Redis as broker, result backend and
rate limiter (`--redis-rpm`). It launches a judge run, SIGKILLs redis-server once --redis-kill-at of
the results are stored, keeps it down --redis-down-s seconds, starts it again on the same port, and
waits for the run. Nothing is resumed by hand.

Printed: results stored, permanent errors (`error` results), provider calls vs images, duplicate
calls (an image asked again), requests in flight when Redis died, the time of each phase, the
seconds from Redis' restart to the first result stored after it (`progress_resumed_after_s`) and
to the first result of each lane that still had work (`lanes_resumed_after_s`; the slowest lane is
what the check reads),
whether the worker and beat are still the processes started, and the worker's reconnect lines.
Checked: the run finished, one `ok` result per image, no permanent error, calls <= images + those
in flight at the kill, worker and beat still up, progress again on every lane within 15 s of Redis' return. Every
child is ended and the data folder (images, logs, SQLite) removed on exit, also on SIGTERM
(bench/common.py; `--keep-data` keeps it).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bench.common import ROOT, log_tail, recreate_database, scratch_folder  # SIGTERM ends the bench through `finally`
from core.processes import stop_processes

RESUME_WITHIN_S = 15.0  # progress again at most this long after Redis is back


def redis_case(args) -> int:
    with scratch_folder("cprt-bench-redis-", keep=args.keep_data) as data_dir:
        return _redis_case(args, data_dir)


def _redis_case(args, data_dir: Path) -> int:
    from tests.support.redis_server import PrivateRedis

    broker = PrivateRedis(data_dir)
    children: list[subprocess.Popen] = []
    sqlite = args.database_url.startswith("sqlite")
    database_url = f"sqlite:///{data_dir}/bench.sqlite3" if sqlite else args.database_url
    try:
        broker.start()
        env = {k: v for k, v in os.environ.items() if k not in ("CPRT_RATE_LIMIT_URL", "CACHE_URL")}  # the limiter: this Redis
        env.update({
            "CPRT_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "cprt_site.settings", "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": broker.url, "CELERY_RESULT_BACKEND": broker.url,
            "OPENAI_API_KEY": "sk-bench-not-a-secret", "OPENAI_BASE_URL": f"http://127.0.0.1:{args.port}/v1",
            "OPENAI_MAX_RPM": str(args.redis_rpm),
            # Several lanes and short chunks, so that lanes hand on (send messages) during the outage.
            "CPRT_RUN_LANE_CONCURRENCY": "4", "CPRT_RUN_CHUNK_TARGET_S": str(args.redis_chunk_target_s), "CPRT_RUN_CHUNK_SIZE": "20",
            "CPRT_RUN_HEARTBEAT_S": "0.5", "CPRT_RUN_STALE_S": "8", "CPRT_RECONCILE_EVERY_S": "2",
            "CPRT_WORKER_HEARTBEAT_S": "2", "PYTHONPATH": str(ROOT), "LOG_LEVEL": "INFO",
        })
        os.environ.clear()
        os.environ.update(env)
        print(f"private redis {broker.url}, database {database_url} (fresh), data dir {data_dir}", flush=True)
        if not sqlite:
            recreate_database(database_url)
        report = _run(args, env, broker, data_dir, children)
    finally:
        # One shared grace period for all of them (core.processes.stop_processes): stopped one after another,
        # a worker in its warm shutdown and then beat could take 30 s each, past a SIGTERM's patience. 10 s: at
        # the bench's end the run is finished and the worker idle; on a SIGTERM mid-run its warm shutdown would
        # wait for requests the fake server holds (--redis-latency), after a database read that may itself have
        # waited out SQLite's 30 s busy timeout (CI: over 90 s in all under a loaded machine).
        stop_processes(list(reversed(children)), 10)
        broker.kill()
        if not sqlite:
            from django.db import connections

            connections.close_all()
            recreate_database(database_url, drop_only=True)
    print(json.dumps(report, indent=2), flush=True)
    if not all(report["checks"].values()):
        print(f"FAILED; the worker's log ends:\n{log_tail(data_dir / 'worker.log')}", file=sys.stderr)
        return 1
    print("PASSED: Redis went away mid-run; the run finished with one result per image, no permanent error")
    return 0


def _run(args, env: dict, broker, data_dir: Path, children: list) -> dict:
    import django

    django.setup()
    from django.core.management import call_command

    from bench.common import make_run_images
    from core.models import AuditEvent
    from inference import launching, prompts
    from django.utils import timezone

    from inference.models import Run, RunLane, RunResult
    from inference.selection import Selection

    call_command("migrate", verbosity=0)
    n = args.redis_images
    make_run_images(0, n)

    def start(cmd: list[str], log: str) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(data_dir / log, "ab"), start_new_session=True)
        children.append(proc)
        return proc

    server = subprocess.Popen([sys.executable, "-m", "tests.fakes.openai_server", "--port", str(args.port), "--delay", str(args.redis_latency)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    children.append(server)
    server.stdout.readline()
    stats_url = f"http://127.0.0.1:{args.port}/_stats"
    worker = start([sys.executable, "-m", "celery", "-A", "cprt_site", "worker", "-Q", "default,api", "--pool", "prefork", "--concurrency", "4",
                    "--loglevel", "INFO", "-n", f"bench-redis-{os.getpid()}@%h"], "worker.log")
    beat = start([sys.executable, "-m", "celery", "-A", "cprt_site", "beat", "--loglevel", "INFO",
                  "--schedule", str(data_dir / "beat-schedule")], "beat.log")
    ready_by = time.monotonic() + 180
    while " ready." not in (data_dir / "worker.log").read_text(errors="replace"):
        if worker.poll() is not None or time.monotonic() > ready_by:
            raise SystemExit(f"the worker did not start; see {data_dir / 'worker.log'}")
        time.sleep(0.2)

    spec = launching.LaunchSpec("judge", "openai", "bench-model", "zero_shot", False, prompts.DEFAULT_VERSION["judge"],
                                Selection(split="test"), args.concurrency)
    t0 = time.monotonic()
    run = launching.launch_run(None, spec)
    results = RunResult.objects.filter(run=run)

    def elapsed() -> float:
        return round(time.monotonic() - t0, 1)

    timeline: dict = {"launched_s": elapsed()}

    while results.count() < args.redis_kill_at * n:
        if time.monotonic() - t0 > args.timeout:
            raise SystemExit(f"timed out before the kill at {results.count()}/{n} results; logs in {data_dir}")
        time.sleep(0.05)
    timeline["redis_killed"] = {"at_s": elapsed(), "results_before": results.count()}
    broker.kill()
    in_flight_at_kill = json.load(urllib.request.urlopen(stats_url))["in_flight"]
    down_until = time.monotonic() + args.redis_down_s
    while time.monotonic() < down_until:
        time.sleep(0.2)
    at_restart = results.count()
    timeline["redis_restarted"] = {"at_s": elapsed(), "results_before": at_restart}
    broker.start()
    restarted, restarted_at = time.monotonic(), timezone.now()
    waiting = {lane.index: set(lane.item_ids) - set(results.values_list("item_id", flat=True)) for lane in RunLane.objects.filter(run=run)}
    timeline["redis_restarted"]["worker_alive"] = worker.poll() is None
    resumed_after = None
    while Run.objects.values_list("status", flat=True).get(pk=run.pk) in Run.ACTIVE_STATUSES:
        if time.monotonic() - t0 > args.timeout:
            break
        if resumed_after is None and results.count() > at_restart:
            resumed_after = round(time.monotonic() - restarted, 1)
        time.sleep(0.1)
    if resumed_after is None and results.count() > at_restart:
        resumed_after = round(time.monotonic() - restarted, 1)
    lanes_resumed = {}  # lane -> seconds from the restart to its first result after it (lanes with work left)
    for index, missing in sorted(waiting.items()):
        if missing:
            after = results.filter(item_id__in=missing, created_at__gte=restarted_at)
            first = after.order_by("created_at").values_list("created_at", flat=True).first()
            lanes_resumed[index] = round((first - restarted_at).total_seconds(), 1) if first else None
    timeline["finished_s"] = elapsed()
    run.refresh_from_db()
    stats = json.load(urllib.request.urlopen(stats_url))
    image_ids = list(results.values_list("image_id", flat=True))
    outcomes = dict(run.outcome_counts or {})
    worker_alive, beat_alive = worker.poll() is None, beat.poll() is None
    log = (data_dir / "worker.log").read_text(errors="replace")
    calls, repeats = stats["count"], stats["repeats"]
    report = {
        "images": n, "concurrency": args.concurrency, "redis_down_s": args.redis_down_s, "status": run.status,
        "results": len(image_ids), "distinct_images": len(set(image_ids)), "permanent_errors": outcomes.get("error", 0),
        "outcomes": outcomes, "provider_calls": calls, "duplicate_calls": repeats, "in_flight_at_kill": in_flight_at_kill,
        "progress_resumed_after_s": resumed_after,
        "lanes_resumed_after_s": lanes_resumed,
        "reconciler_redispatches": AuditEvent.objects.filter(action="run.redispatch", target_id=str(run.pk)).count(),
        "worker_alive": worker_alive, "beat_alive": beat_alive,
        "worker_log": {
            "connection_lost": log.count("Connection to broker lost"), "reconnected": log.count("Connected to redis://"),
            "unrecoverable": log.count("Unrecoverable error"), "nonetype_hostname": log.count("'NoneType' object has no attribute 'hostname'"),
        },
        "timeline": timeline,
    }
    report["checks"] = {
        "killed_mid_run": 0 < timeline["redis_killed"]["results_before"] < n,
        "status_finished": run.status == Run.STATUS_FINISHED,
        "one_result_per_image": len(image_ids) == len(set(image_ids)) == n and sorted(image_ids) == sorted(run.image_ids),
        "no_permanent_error": outcomes == {"ok": n},
        "calls_at_most_images_plus_in_flight": n <= calls <= n + in_flight_at_kill,
        "worker_and_beat_still_up": worker_alive and beat_alive,
        f"every_lane_progressing_within_{RESUME_WITHIN_S:g}_s_of_redis_return": bool(lanes_resumed) and all(
            s is not None and s <= RESUME_WITHIN_S for s in lanes_resumed.values()),
    }
    return report


if __name__ == "__main__":  # pragma: no cover - run through bench/run_faults.py --case redis
    print("run: bench/run_faults.py --case redis", file=sys.stderr)
    raise SystemExit(2)
