"""Throughput of a judge run against a fake OpenAI server that answers after 200 ms.

    .venv/bin/python bench/run_throughput.py [--images 6736] [--c1-sample 200] [--data-dir /tmp/cprt-bench]

    # production-like: PostgreSQL + Redis (broker and shared rate limiter)
    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/h4bench BENCH_BROKER_URL=redis://127.0.0.1:6379/7 \
    CELERY_RESULT_BACKEND=redis://127.0.0.1:6379/7 .venv/bin/python bench/run_throughput.py --worker-processes 4

Builds its own SQLite database under --data-dir (never the project's), generates the images once,
starts the fake server in its own process and one real Celery worker (prefork, --worker-processes
pool processes: a run is split into lanes of at most CPRT_RUN_LANE_CONCURRENCY requests, one lane
per pool process), then launches judge runs through the normal service
at concurrency 1 (on a sample, by default: 6,736 images at 5 per second would take 22 minutes) and
64 (all images). Reports images/s, efficiency = throughput / (concurrency / latency), the peak
number of requests the server saw in flight, the worker's RSS at start, middle and end, and CPU
milliseconds per image of the worker (with its pool processes), of the fake server and of the whole
machine, with the machine's busy share during the run (near 1: the run was CPU-bound, its throughput
then says more about the machine's load than about the code).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of a live process and its live descendants, from /proc: the worker
    with its pool processes, or the fake server with its processes."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (every process, this bench's and others'), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait


def worker_rss(pid: int) -> dict:
    """RSS of the worker's main process and of each pool process (where the chunks run)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return {"main": round(rss_mib(pid), 1), "pool": [round(rss_mib(int(c)), 1) for c in children]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=6736)
    parser.add_argument("--c1-sample", type=int, default=200, help="images for the concurrency-1 run (0: all)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--rpm", type=int, default=60000, help="shared rate limit in force during the run (0: none)")
    parser.add_argument("--data-dir", default="/tmp/cprt-bench")
    parser.add_argument("--port", type=int, default=8917)
    parser.add_argument("--worker-processes", type=int, default=4)
    parser.add_argument("--server-processes", type=int, default=8)
    args = parser.parse_args()

    env = dict(os.environ)
    env.update({
        "CPRT_DATA_DIR": args.data_dir, "DJANGO_SETTINGS_MODULE": "cprt_site.settings", "DATABASE_URL": env.get("BENCH_DATABASE_URL", f"sqlite:///{args.data_dir}/cprt.sqlite3"),
        "CELERY_BROKER_URL": env.get("BENCH_BROKER_URL", "filesystem://"), "OPENAI_API_KEY": "sk-bench-not-a-secret",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{args.port}/v1", "OPENAI_MAX_RPM": str(args.rpm), "PYTHONPATH": str(ROOT),
        "LOG_LEVEL": "WARNING",
    })
    if env["CELERY_BROKER_URL"] == "filesystem://":
        env.pop("CELERY_RESULT_BACKEND", None)
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    from bench.common import make_run_images
    from annotations.models import Image
    from cprt_site.celery import app
    from inference import launching, leases, prompts
    from inference.models import Run
    from inference.selection import Selection

    call_command("migrate", verbosity=0)
    have = Image.objects.count()
    if have < args.images:
        print(f"generating {args.images - have} images ...", flush=True)
        make_run_images(have, args.images)
    app.control.purge()

    server = subprocess.Popen([sys.executable, "-m", "tests.fakes.openai_server", "--port", str(args.port), "--delay", str(args.latency),
                               "--processes", str(args.server_processes)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    server.stdout.readline()
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "cprt_site", "worker", "-Q", "api", "--pool", "prefork",
                               "--concurrency", str(args.worker_processes), "--loglevel", "WARNING",
                               "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"bench-{os.getpid()}@%h"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(Path(args.data_dir) / "bench-worker.log", "wb"),
                              start_new_session=True)
    report = {"latency_s": args.latency, "rpm_limit": args.rpm, "runs": []}
    try:
        time.sleep(3)
        for concurrency in args.concurrency:
            n = args.c1_sample if concurrency == 1 and args.c1_sample else args.images
            before = json.load(urllib.request.urlopen(f"http://127.0.0.1:{args.port}/_stats"))
            spec = launching.LaunchSpec("judge", "openai", "bench-model", "zero_shot", False, prompts.DEFAULT_VERSION["judge"],
                                       Selection(split="test", sample_size=n if n < args.images else None, seed=1), concurrency)
            cpu0 = {"worker": tree_cpu_s(worker.pid), "server": tree_cpu_s(server.pid), "machine": machine_busy_s()}
            t0 = time.monotonic()
            run = launching.launch_run(None, spec)
            rss = {}
            while True:
                run.refresh_from_db()
                done = run.results.count()
                if "start" not in rss and done > 0:
                    rss["start"] = worker_rss(worker.pid)
                if "middle" not in rss and done >= n // 2:
                    rss["middle"] = worker_rss(worker.pid)
                if run.status not in Run.ACTIVE_STATUSES:
                    break
                if worker.poll() is not None:
                    raise SystemExit("the worker died; see bench-worker.log")
                time.sleep(0.25)
            rss["end"] = worker_rss(worker.pid)
            wall = time.monotonic() - t0
            busy = (run.finished_at - run.started_at).total_seconds()
            after = json.load(urllib.request.urlopen(f"http://127.0.0.1:{args.port}/_stats"))
            cpu = {"worker": tree_cpu_s(worker.pid) - cpu0["worker"], "server": tree_cpu_s(server.pid) - cpu0["server"],
                   "machine": machine_busy_s() - cpu0["machine"]}
            throughput = done / busy
            entry = {
                "concurrency": concurrency, "images": done, "status": run.status, "outcomes": run.outcome_counts,
                "seconds_started_to_finished": round(busy, 2), "seconds_wall_incl_dispatch": round(wall, 2),
                "images_per_s": round(throughput, 1), "ideal_images_per_s": round(concurrency / args.latency, 1),
                "efficiency": round(throughput / (concurrency / args.latency), 3),
                "server_requests": after["count"] - before["count"], "server_peak_in_flight": after["peak_in_flight"],
                "lanes": len(leases.lane_widths(concurrency)), "worker_rss_mib": rss,
                "cpu_ms_per_image": {k: round(1000 * v / max(done, 1), 2) for k, v in cpu.items()},
                "machine_busy_share": round(cpu["machine"] / (wall * (os.cpu_count() or 1)), 2),
            }
            report["runs"].append(entry)
            print(json.dumps(entry), flush=True)
    finally:
        from core.processes import stop_processes

        started = time.monotonic()
        stop_processes([worker, server], 15)
        print(f"worker and fake server stopped in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
