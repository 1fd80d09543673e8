"""A judge run survives a PostgreSQL restart and a SIGKILLed worker, and ends with one result per image.

    .venv/bin/python bench/run_faults.py [--images 600] [--concurrency 8]

Needs root (or the postgres user) on a machine whose PostgreSQL cluster is managed by
`pg_ctlcluster` (Debian), and Redis on 127.0.0.1:6379. It restarts THE WHOLE PostgreSQL SERVER
(`--cluster`, default `main`): do not run it while anything else uses that server, or give it a
cluster of its own (`pg_createcluster 15 bench -p 5439 -- --auth=trust`, then `--cluster bench
--database-url postgres://postgres@127.0.0.1:5439/bench_faults`).

The production setup, in miniature: a fresh PostgreSQL database (dropped afterwards), Redis as
broker and rate limiter, a real Celery worker (prefork) and Celery beat running the reconciler,
and a fake OpenAI-compatible server that answers after --latency seconds. Sequence:

  1. launch a run through the normal service (inference.launching.launch_run);
  2. at --restart-at of the images done: `pg_ctlcluster <version> <cluster> restart` (every open
     connection, the worker's included, is cut mid-chunk);
  3. at --kill-at: SIGKILL the worker's whole process group (no warm shutdown, unacked tasks);
     start a new worker;
  4. wait until the run finishes. Nothing is resumed by hand: the beat reconciler re-dispatches the
     images whose chunks died.

Checked: the run is `finished`, the results are exactly the run's images, once each (no missing,
no duplicate), every outcome is `ok`. Printed: the time of each phase, provider calls made (more
than the images: work lost with the killed chunks is redone), reconciler re-dispatches.

A second case (`--case queued`, part of the default `all`; it does not restart PostgreSQL): a run
launched while no worker serves its queue stays queued for three times (CPRT_RUN_STALE_S + a
reconciler period) while the reconciler runs (beat + a worker on `default` only), then a worker on
`api` starts. Checked: no re-dispatch of queued work, one message in the
broker queue on every tick, and provider calls == images (no image paid twice).

`--case postgres` and `--case worker` are the two halves of `faults`: only the PostgreSQL restart
(at --restart-at), or only the worker's SIGKILL (at --kill-at). Both print, besides the above, the
seconds from the fault's end to the next result stored (`progress_resumed_after_s`).

A third case (`--case redis`, not part of `all`; bench/redis_outage.py): its own redis-server on a
free port (never the shared one) is the broker, result backend and rate limiter of a real worker
and beat; it is SIGKILLed mid-run for --redis-down-s (10) seconds and started again EMPTY. Printed:
results stored, permanent errors, provider calls vs images, duplicate calls, time, the seconds to
progress after Redis is back; checked: one `ok` result per image, calls <= images + those in flight
at the kill, worker and beat still up, progress again within 15 s.

Broken providers (`--case provider-html`, `provider-5xx`, `provider-401`, `provider-404`, or
`providers` for all four; no PostgreSQL or Redis needed, a fresh SQLite database each): the fake
OpenAI server answers every request with an HTML page (HTTP 200), a 500, a 401 or a 404, and
`manage.py launch_run --kind judge ... --sample 6 --here --json` runs against it with the default
retry settings. Printed: seconds until the command returned, the run's status, stop reason and
error, provider calls. Checked: returned within 240 s, the run not running, a stop reason stored,
at most 60 provider calls (401 and 404: 12).

Every case removes its data folder (private images, logs, SQLite files) and its database when it
ends, also when it fails or is terminated (SIGTERM, Ctrl-C); `--keep-data` keeps the folder.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import environment, log_tail, recreate_database, scratch_folder, start, stop  # noqa: E402 - after the path

PROVIDER_CASES = {"provider-html": "html", "provider-5xx": "500", "provider-401": "401", "provider-404": "404"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", type=int, default=600)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--latency", type=float, default=0.1, help="fake provider latency in seconds")
    p.add_argument("--restart-at", type=float, default=0.25, help="fraction of results at which PostgreSQL restarts")
    p.add_argument("--kill-at", type=float, default=0.55, help="fraction of results at which the worker is killed")
    p.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_faults")
    p.add_argument("--cluster", default="main", help="the pg_ctlcluster cluster to restart (the one --database-url names)")
    p.add_argument("--broker-url", default="redis://127.0.0.1:6379/9")
    p.add_argument("--port", type=int, default=8931)
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--case", choices=("all", "faults", "postgres", "worker", "queued", "redis", "providers", *PROVIDER_CASES), default="all",
                   help="faults: restart + kill (restarts PostgreSQL); postgres / worker: one of the two; queued: a run queued "
                        "with no worker, then workers; redis: a private redis-server killed for --redis-down-s mid-run (not part "
                        "of all); provider-html/-5xx/-401/-404 (providers: all four): launch_run --here against a broken provider")
    p.add_argument("--keep-data", action="store_true", help="keep the data folder (logs) instead of removing it")
    p.add_argument("--provider-deadline-s", type=float, default=240.0, help="provider cases: launch_run must return within this")
    p.add_argument("--queued-images", type=int, default=200)
    p.add_argument("--redis-images", type=int, default=300)
    p.add_argument("--redis-down-s", type=float, default=10.0, help="how long the private Redis stays down")
    p.add_argument("--redis-kill-at", type=float, default=0.3, help="fraction of results at which Redis is killed")
    p.add_argument("--redis-latency", type=float, default=0.25, help="fake provider latency in the redis case")
    p.add_argument("--redis-rpm", type=int, default=1200, help="OpenAI rate limit in the redis case (kept in Redis; 0: none)")
    p.add_argument("--redis-chunk-target-s", type=float, default=3.0,
                   help="CPRT_RUN_CHUNK_TARGET_S in the redis case (3: lanes hand on during the outage; 600: one chunk per lane throughout)")
    return p.parse_args()


def restart_postgres(url: str, cluster: str = "main") -> float:
    """Restart the server; return the seconds until it accepts connections again."""
    import psycopg

    versions = sorted(os.listdir("/etc/postgresql"))
    if not versions:
        raise SystemExit("no /etc/postgresql/<version>: this script restarts PostgreSQL with pg_ctlcluster")
    start = time.monotonic()
    subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], cluster, "restart", "-m", "fast"], check=True)
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return time.monotonic() - start
        except psycopg.OperationalError:
            if time.monotonic() - start > 120:
                raise SystemExit("PostgreSQL did not come back within 120 s") from None
            time.sleep(0.2)


def main() -> None:
    args = parse_args()
    if args.case == "redis":
        from bench.redis_outage import redis_case

        raise SystemExit(redis_case(args))
    if args.case == "providers" or args.case in PROVIDER_CASES:
        cases = list(PROVIDER_CASES) if args.case == "providers" else [args.case]
        raise SystemExit(max(provider_case(args, PROVIDER_CASES[case]) for case in cases))
    with scratch_folder("cprt-bench-faults-", keep=args.keep_data) as data_dir:
        faults_main(args, str(data_dir))


def faults_main(args, data_dir: str) -> None:
    restart = args.case in ("all", "faults", "postgres")
    kill = args.case in ("all", "faults", "worker")
    env = dict(os.environ)
    env.update({
        "CPRT_DATA_DIR": data_dir, "DJANGO_SETTINGS_MODULE": "cprt_site.settings", "DATABASE_URL": args.database_url,
        "CELERY_BROKER_URL": args.broker_url, "CELERY_RESULT_BACKEND": args.broker_url,
        "OPENAI_API_KEY": "sk-bench-not-a-secret", "OPENAI_BASE_URL": f"http://127.0.0.1:{args.port}/v1", "OPENAI_MAX_RPM": "0",
        "CPRT_RUN_CHUNK_SIZE": "20", "CPRT_RUN_HEARTBEAT_S": "0.5", "CPRT_RUN_STALE_S": "8", "CPRT_RECONCILE_EVERY_S": "2",
        "PYTHONPATH": str(ROOT), "LOG_LEVEL": "WARNING",
    })
    os.environ.update(env)
    print(f"database {args.database_url} (fresh), broker {args.broker_url}, data dir {data_dir}", flush=True)
    recreate_database(args.database_url)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import DatabaseError, connections

    from bench.common import make_run_images
    from cprt_site.celery import app

    call_command("migrate", verbosity=0)
    make_run_images(0, args.images)
    app.control.purge()

    def db(fn):
        """Call fn, reconnecting while PostgreSQL is away (this process is cut off by the restart too)."""
        while True:
            try:
                return fn()
            except DatabaseError:
                connections.close_all()
                time.sleep(0.2)

    logs = Path(data_dir)
    procs: list = []  # every child, stopped (and the database dropped) however this ends
    try:
        code = _faults(args, env, logs, procs, db, restart, kill)
    finally:
        for proc in reversed(procs):
            stop(proc)
        connections.close_all()
        recreate_database(args.database_url, drop_only=True)
    if code:
        for log in sorted(logs.glob("*.log")):
            print(f"--- {log.name} ends:\n{log_tail(log)}", file=sys.stderr)
        raise SystemExit(code)


def _faults(args, env: dict, logs: Path, procs: list, db, restart: bool, kill: bool) -> int:
    from core.models import AuditEvent
    from inference import launching, prompts
    from inference.models import Run, RunResult
    from inference.selection import Selection

    server = subprocess.Popen([sys.executable, "-m", "tests.fakes.openai_server", "--port", str(args.port), "--delay", str(args.latency),
                               "--processes", "4"],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    procs.append(server)
    server.stdout.readline()

    def worker(name: str, queues: str = "api,default") -> subprocess.Popen:
        proc = start([sys.executable, "-m", "celery", "-A", "cprt_site", "worker", "-Q", queues, "--pool", "prefork", "--concurrency", "2",
                      "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "-n", f"{name}-{os.getpid()}@%h"], env, logs / f"{name}.log")
        procs.append(proc)
        return proc

    procs.append(start([sys.executable, "-m", "celery", "-A", "cprt_site", "beat", "--loglevel", "WARNING",
                        "--schedule", str(logs / "beat-schedule")], env, logs / "beat.log"))
    if args.case in ("all", "queued"):
        queued = queued_case(args, env, worker, db)
        print(json.dumps({"queued_case": queued}, indent=2), flush=True)
        if not all(queued["checks"].values()):
            print("FAILED (queued case)", file=sys.stderr)
            return 1
        if args.case == "queued":
            print("PASSED: queued work was dispatched once and every image was paid for once")
            return 0
    first = worker("worker-a")
    timeline: dict = {}
    time.sleep(3)
    spec = launching.LaunchSpec("judge", "openai", "bench-model", "zero_shot", False, prompts.DEFAULT_VERSION["judge"],
                                Selection(split="test"), args.concurrency)
    t0 = time.monotonic()
    run = launching.launch_run(None, spec)
    results = RunResult.objects.filter(run=run)
    n = args.images

    def wait_until(fraction: float) -> int:
        while True:
            done = db(results.count)
            if done >= fraction * n:
                return done
            if time.monotonic() - t0 > args.timeout:
                raise SystemExit(f"timed out at {done}/{n} results")
            time.sleep(0.1)

    def resumed_after(since: float, before: int) -> float | None:
        """Seconds from `since` until a result beyond `before` is stored (None: the run ended first)."""
        while db(results.count) <= before:
            if db(lambda: Run.objects.values_list("status", flat=True).get(pk=run.pk)) not in Run.ACTIVE_STATUSES:
                return None
            if time.monotonic() - t0 > args.timeout:
                raise SystemExit("timed out waiting for progress")
            time.sleep(0.1)
        return round(time.monotonic() - since, 1)

    if restart:
        done = wait_until(args.restart_at)
        timeline["postgres_restart"] = {"at_s": round(time.monotonic() - t0, 1), "results_before": done}
        timeline["postgres_restart"]["down_s"] = round(restart_postgres(args.database_url, args.cluster), 2)
        connections_close()
        back = time.monotonic()
        timeline["postgres_restart"]["progress_resumed_after_s"] = resumed_after(back, db(results.count))
    if kill:
        done = wait_until(args.kill_at)
        timeline["worker_kill"] = {"at_s": round(time.monotonic() - t0, 1), "results_before": done}
        stop(first, signal.SIGKILL)
        worker("worker-b")
        timeline["worker_kill"]["progress_resumed_after_s"] = resumed_after(time.monotonic(), db(results.count))

    while True:
        status = db(lambda: Run.objects.values_list("status", flat=True).get(pk=run.pk))
        if status not in Run.ACTIVE_STATUSES:
            break
        if time.monotonic() - t0 > args.timeout:
            raise SystemExit(f"timed out with status {status}")
        time.sleep(0.25)
    timeline["finished_s"] = round(time.monotonic() - t0, 1)
    run.refresh_from_db()
    image_ids = list(results.values_list("image_id", flat=True))
    outcomes = run.outcome_counts
    redispatches = AuditEvent.objects.filter(action="run.redispatch", target_id=str(run.pk)).count()
    calls = json.load(urllib.request.urlopen(f"http://127.0.0.1:{args.port}/_stats"))["count"]
    checks = {
        "status_finished": run.status == Run.STATUS_FINISHED,
        "one_result_per_image": len(image_ids) == len(set(image_ids)) == n,
        "results_are_the_runs_images": sorted(image_ids) == sorted(run.image_ids),
        "all_ok": outcomes == {"ok": n},
    }
    report = {
        "case": args.case, "images": n, "concurrency": args.concurrency, "status": run.status, "results": len(image_ids),
        "distinct_images": len(set(image_ids)), "outcomes": outcomes, "provider_calls": calls,
        "reconciler_redispatches": redispatches, "timeline": timeline, "checks": checks,
    }
    print(json.dumps(report, indent=2), flush=True)
    if not all(checks.values()):
        print("FAILED", file=sys.stderr)
        return 1
    print("PASSED: the run finished with exactly one result per image")
    return 0


def connections_close() -> None:
    from django.db import connections

    connections.close_all()


def provider_case(args, answer: str) -> int:
    """`launch_run --kind judge --sample 6 --here --json` against a provider that answers every
    request with `answer` (html: an HTML page with HTTP 200; 500; 401; 404), default retry settings,
    a fresh SQLite database in a scratch folder."""
    limit = 12 if answer in ("401", "404") else 60
    with scratch_folder(f"cprt-bench-provider-{answer}-", keep=args.keep_data) as data_dir:
        env = environment(
            CPRT_DATA_DIR=str(data_dir), DATABASE_URL=f"sqlite:///{data_dir}/bench.sqlite3",
            OPENAI_API_KEY="sk-bench-not-a-secret", OPENAI_MAX_RPM="0", LOG_LEVEL="WARNING",
        )
        for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):  # the embedded broker under the scratch folder
            env.pop(name, None)
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "--verbosity", "0"], cwd=ROOT, env=env, check=True)
        subprocess.run([*manage, "shell", "-c", "from bench.common import make_run_images; make_run_images(0, 12)"], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        server = subprocess.Popen([sys.executable, "-m", "tests.fakes.openai_server", "--port", "0", "--answer", answer],
                                  cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            url = server.stdout.readline().strip()
            env["OPENAI_BASE_URL"] = f"{url}/v1"
            started = time.monotonic()
            try:
                done = subprocess.run([*manage, "launch_run", "--kind", "judge", "--provider", "openai", "--model", "bench-model",
                                       "--strategy", "zero_shot", "--sample", "6", "--seed", "1", "--here", "--json"],
                                      cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.provider_deadline_s + 60)
                out, err = done.stdout, done.stderr
            except subprocess.TimeoutExpired as exc:
                out, err = exc.stdout or "", exc.stderr or ""
                if isinstance(out, bytes):
                    out, err = out.decode(errors="replace"), (err or b"").decode(errors="replace")
            seconds = round(time.monotonic() - started, 1)
            calls = json.load(urllib.request.urlopen(f"{url}/_stats"))["count"]
        finally:
            stop(server)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    run = json.loads(lines[-1]) if lines else {}
    report = {
        "case": f"provider-{'5xx' if answer == '500' else answer}", "answer": answer, "seconds": seconds, "status": run.get("status"),
        "stop_reason": run.get("stop_reason"), "error": (run.get("error") or "")[:300], "results": run.get("results"),
        "provider_calls": calls,
    }
    report["checks"] = {
        f"returned_within_{args.provider_deadline_s:g}_s": seconds <= args.provider_deadline_s,
        "run_not_running": run.get("status") not in (None, "queued", "running"),
        "reason_stored": bool(run.get("stop_reason")),
        f"at_most_{limit}_provider_calls": calls <= limit,
    }
    print(json.dumps(report, indent=2), flush=True)
    if not all(report["checks"].values()):
        print(f"FAILED; launch_run's stderr ends:\n{err[-3000:]}", file=sys.stderr)
        return 1
    return 0


def queued_case(args, env: dict, worker, db) -> dict:
    """A run queued with no worker on its queue (`api`) through CPRT_RUN_STALE_S + 3 reconciler periods
    while the reconciler runs (beat + a worker on `default` only), then a worker on `api` starts."""
    import redis

    from core.models import AuditEvent
    from bench.common import make_run_images
    from inference import launching, prompts
    from inference.models import Run, RunResult
    from inference.selection import Selection

    from annotations.models import Image

    first = 50_000_000
    make_run_images(first, first + args.queued_images)  # split "test"; moved aside so the faults case never selects them
    Image.objects.filter(vispr_id__in=[f"2017_{i:08d}" for i in range(first, first + args.queued_images)]).update(split="train")
    stats_url = f"http://127.0.0.1:{args.port}/_stats"
    calls_before = json.load(urllib.request.urlopen(stats_url))["count"]
    broker = redis.Redis.from_url(args.broker_url)
    stale_results = broker.keys("celery-task-meta-*")  # from an earlier run of this bench
    if stale_results:
        broker.delete(*stale_results)
    spec = launching.LaunchSpec("judge", "openai", "bench-model", "zero_shot", False, prompts.DEFAULT_VERSION["judge"],
                               Selection(split="train"), args.concurrency)
    housekeeping = worker("worker-default", queues="default")  # runs the reconciler, not the run's chunks
    procs = [housekeeping]
    try:
        # The reconciler runs once a tick's result is stored (a worker and beat take seconds to start).
        wait_s = time.monotonic()
        while not broker.keys("celery-task-meta-*"):
            if time.monotonic() - wait_s > 120:
                raise SystemExit("the reconciler did not run within 120 s")
            time.sleep(0.2)
        run = launching.launch_run(None, spec)
        period, stale = float(env["CPRT_RECONCILE_EVERY_S"]), float(env["CPRT_RUN_STALE_S"])
        held_s = 3 * (stale + period)  # the old reconciler sent the queued work again once per stale period
        t0 = time.monotonic()
        queue_lengths = []
        while time.monotonic() - t0 < held_s + 0.5:
            time.sleep(period)
            queue_lengths.append(broker.llen("api"))
        redispatched_while_queued = db(lambda: AuditEvent.objects.filter(action="run.redispatch", target_id=str(run.pk)).count())
        status_while_queued = db(lambda: Run.objects.values_list("status", flat=True).get(pk=run.pk))
        started = time.monotonic()
        procs.append(worker("worker-q", queues="api"))
        while db(lambda: Run.objects.values_list("status", flat=True).get(pk=run.pk)) in Run.ACTIVE_STATUSES:
            if time.monotonic() - started > args.timeout:
                raise SystemExit("timed out waiting for the queued run")
            time.sleep(0.25)
        finished_s = time.monotonic() - started
    finally:
        for proc in reversed(procs):
            stop(proc)
    run.refresh_from_db()
    calls = json.load(urllib.request.urlopen(stats_url))["count"] - calls_before
    results = list(RunResult.objects.filter(run=run).values_list("image_id", flat=True))
    n = args.queued_images
    return {
        "images": n, "held_queued_s": round(held_s, 1), "broker_queue_length_per_tick": queue_lengths,
        "redispatches_while_queued": redispatched_while_queued, "status_while_queued": status_while_queued,
        "finished_s_after_worker_start": round(finished_s, 1), "status": run.status, "results": len(results),
        "provider_calls": calls,
        "checks": {
            "status_finished": run.status == Run.STATUS_FINISHED,
            "stayed_queued": status_while_queued == Run.STATUS_QUEUED,
            "no_redispatch_of_queued_work": redispatched_while_queued == 0 and max(queue_lengths) <= 1,
            "one_result_per_image": len(results) == len(set(results)) == n,
            "provider_calls_equal_images": calls == n,
        },
    }


if __name__ == "__main__":
    main()
