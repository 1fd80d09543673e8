"""Benchmark: SPY-Bench metrics (`manage.py spy_metrics`) against upstream's `cal_metrics`, for one or more
source trees side by side on the same evaluated file.

    .venv/bin/python bench/spy_metrics.py [--rows 100000] [--repeat 7] [--compare /tmp/old-tree] [--full] [--full-compare] [--floor]

The rows are tests/support/spy_upstream.py's `evaluated_rows` (upstream's row format, items of 2 to 6
rows, one row in fifty neither respond nor reject), written once as JSONL. Per tree (this checkout,
then each --compare tree, each in a fresh process whose imports come from that tree):
- in process: upstream's `cal_metrics` (verbatim, from this checkout's tests/support/spy_upstream.py)
  and the tree's `metrics.cal_metrics` on the same rows, interleaved --repeat times; CPU seconds
  (time.process_time), best and median, and the ratio of the best; the two results must be equal (on a
  shared machine under load, CPU seconds are the telling figure; the wall ones are printed beside);
- --floor: a third function interleaved with those two, `fetch_only`: every field the checks read
  fetched from every row and dropped (the pass is bound by memory: each row's dicts and values are cache
  misses); upstream's time over it is the most any reader of these dicts could reach;
- as a command: `call_command("spy_metrics", FILE)` in that process (reading, checking, computing and
  printing: the command's own time), then `manage.py spy_metrics FILE` as a child process (wall and
  CPU seconds, Django's start included);
- --full: `spy_metrics FILE --full` in process (per-label and per-scenario tables, 1,000 bootstrap
  resamples of every interval), with the process's peak memory (VmHWM); for --compare trees only with
  --full-compare (the code before issue 37 holds resamples x items x counts at once: GBs at 100k).
Every tree runs on this checkout's virtual environment; make an old tree with
`git archive <commit> | tar -x -C /tmp/old-tree`.
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections import deque
from itertools import chain, repeat
from operator import itemgetter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402 - SIGTERM ends the bench like Ctrl-C: its scratch folder is removed

ROOT = Path(__file__).resolve().parent.parent


def upstream_module():
    """tests/support/spy_upstream.py of this checkout, whatever tree is measured."""
    spec = importlib.util.spec_from_file_location("spy_upstream", ROOT / "tests" / "support" / "spy_upstream.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_rows(n_rows: int, path: Path) -> int:
    sys.path.insert(0, str(ROOT))
    _setup_django()
    up = upstream_module()
    rows = up.evaluated_rows(max(1, n_rows * 10 // 40))  # about 4 rows an item
    with path.open("w") as f:
        for row in rows[:n_rows]:
            f.write(json.dumps(row) + "\n")
    return min(n_rows, len(rows))


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cprt_site.settings")
    if "CPRT_DATA_DIR" not in os.environ:  # the parent names one inside its scratch folder
        raise SystemExit("run bench/spy_metrics.py without --child: the child's data folder comes from it")
    import django

    django.setup()


def _cpu(fn) -> tuple[float, object]:
    """CPU seconds of fn(), started from an emptied garbage collector: upstream's cal_metrics allocates about
    200,000 lists and tuples a call, so whether a full collection of what came before falls inside a call
    swung its time between 0.18 and 0.40 s; collected first, both calls start in the same state."""
    gc.collect()
    started = time.process_time()
    result = fn()
    return time.process_time() - started, result


def vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def fetch_only(rows: list[dict], k: str = "eval_resp") -> None:
    """The fields the checks read (label, verdict, is_privacy, benchmark_id; the scenario's id and
    is_privacy), fetched from every row by C-level getters and dropped: the floor of any reader."""
    fields = chain.from_iterable(map(itemgetter("label", k, "is_privacy", "benchmark_id"), rows))
    no_scenario = {"id": None, "is_privacy": 0}
    scene = chain.from_iterable(map(itemgetter("id", "is_privacy"), map(dict.get, rows, repeat("scenario"), repeat(no_scenario))))
    deque(zip(fields, fields, fields, fields, scene, scene), maxlen=0)


def measure(path: str, repeats: int, full: bool, floor: bool) -> dict:
    """In a child process whose sys.path starts with the tree measured."""
    sys.path.insert(0, os.getcwd())
    _setup_django()
    from django.core.management import call_command

    from benchmarks.spy_bench import files, metrics

    up = upstream_module()
    rows = files.read_rows(Path(path).read_bytes(), path)
    upstream, ours, fetch = [], [], []
    for _ in range(repeats):
        seconds, expected = _cpu(lambda: up.cal_metrics(rows))
        upstream.append(seconds)
        seconds, got = _cpu(lambda: metrics.cal_metrics(rows))
        ours.append(seconds)
        if got != expected:
            raise SystemExit("the tree's cal_metrics differs from upstream's")
        if floor:
            fetch.append(_cpu(lambda: fetch_only(rows))[0])
    command, command_cpu = [], []
    for _ in range(3):
        started = time.perf_counter()
        cpu, _ = _cpu(lambda: call_command("spy_metrics", path, stdout=io.StringIO()))
        command.append(time.perf_counter() - started)
        command_cpu.append(cpu)
    out = {"rows": len(rows), "upstream_s": upstream, "ours_s": ours, "fetch_s": fetch, "command_in_process_s": command, "command_cpu_s": command_cpu}
    if full:
        hwm_before = vm_hwm_mb()
        started = time.perf_counter()
        cpu, _ = _cpu(lambda: call_command("spy_metrics", path, "--full", stdout=io.StringIO()))
        out.update(full_s=time.perf_counter() - started, full_cpu_s=cpu, full_hwm_mb=vm_hwm_mb(), hwm_before_mb=hwm_before)
    return out


def command_as_child(tree: Path, path: str) -> tuple[float, float]:
    """`manage.py spy_metrics FILE` in a fresh process: wall and CPU seconds (Django's start included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", "spy_metrics", path], cwd=tree, check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(tree)})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--compare", action="append", default=[], help="another source tree to measure beside this one")
    parser.add_argument("--full", action="store_true", help="also time --full (bootstrap intervals) in this checkout")
    parser.add_argument("--full-compare", action="store_true", help="and in the --compare trees (GBs of memory before issue 37)")
    parser.add_argument("--floor", action="store_true", help="also time fetching the fields alone (the floor), beside upstream's")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.repeat, args.full, args.floor)))
        return
    with common.scratch_folder("spy-metrics-bench-") as folder:
        os.environ["CPRT_DATA_DIR"] = str(folder / "data")  # the children's data folder: removed with the rest
        run_trees(args, folder / "evaluated.jsonl")


def run_trees(args, path: Path) -> None:
    n = write_rows(args.rows, path)
    print(f"{n:,} evaluated rows, {path.stat().st_size / 2**20:.1f} MiB: {path}")
    trees = [ROOT] + [Path(t).resolve() for t in args.compare]
    for tree in trees:
        full = args.full and (tree == ROOT or args.full_compare)
        cmd = [sys.executable, str(ROOT / "bench" / "spy_metrics.py"), "--child", str(path), "--repeat", str(args.repeat)]
        done = subprocess.run(cmd + (["--full"] if full else []) + (["--floor"] if args.floor else []), cwd=tree, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(tree)})
        if done.returncode:
            print(f"{tree}: failed\n{done.stderr[-3000:]}")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        wall, cpu = command_as_child(tree, str(path))
        up, ours = r["upstream_s"], r["ours_s"]
        print(f"{str(tree)}\n  in process, CPU s: upstream cal_metrics best {min(up):.3f} (median {statistics.median(up):.3f}), "
              f"this tree's best {min(ours):.3f} (median {statistics.median(ours):.3f}): {min(up) / min(ours):.2f}x upstream's speed")
        if r["fetch_s"]:
            fetch = r["fetch_s"]
            print(f"  floor: fetching the fields alone, best {min(fetch):.3f} (median {statistics.median(fetch):.3f}): "
                  f"{min(up) / min(fetch):.2f}x upstream's speed, the most any reader of these rows could reach")
        print(f"  command in process (read, check, compute, print): best {min(r['command_in_process_s']):.3f} s wall, "
              f"{min(r['command_cpu_s']):.3f} s CPU; "
              f"`manage.py spy_metrics` as a process: {wall:.2f} s wall, {cpu:.2f} s CPU")
        if "full_s" in r:
            print(f"  --full (1,000 resamples): {r['full_s']:.2f} s wall, {r['full_cpu_s']:.2f} s CPU, peak memory {r['full_hwm_mb']:.0f} MB "
                  f"(before it {r['hwm_before_mb']:.0f} MB)")


if __name__ == "__main__":
    main()
