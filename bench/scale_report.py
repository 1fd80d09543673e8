"""bench/scale.py's tables: the pages at each scale, and the adjudications."""
from __future__ import annotations


def print_pages(by_scale: dict) -> None:
    scales = list(by_scale)
    print("\ncold: the first request with the metrics cache emptied (its status: 202 while jobs compute); jobs: their time in the "
          "worker process, run one after the other, their CPU time, and its peak RSS (VmHWM); warm: the next request; figures: cold + jobs + warm")
    print(f"{'page':<16}" + "".join(f"{f'{s:,} cold ms':>18}{'jobs s':>8}{'CPU s':>7}{'worker MB':>10}{'figures s':>10}{f'{s:,} warm ms':>16}"
                                   f"{'queries c/w':>14}" for s in scales) + f"{'warm evaluate() calls':>24}")
    for name in by_scale[scales[0]]:
        line = f"{name:<16}"
        for s in scales:
            r = by_scale[s][name]
            worker_mb = f"{r['jobs']['hwm_mb']:.0f}" if r["jobs"]["jobs"] else "-"
            line += (f"{r['cold']['ms']:>12.0f} ({r['cold']['status']}){r['jobs_s']:>8.1f}{r['jobs']['cpu_s']:>7.1f}{worker_mb:>10}"
                     f"{r['figures_s']:>10.1f}{r['warm']['ms']:>16.0f}{r['cold']['queries']:>8}/{r['warm']['queries']:<5}")
        line += f"{'/'.join(str(by_scale[s][name]['warm']['evaluate_calls']) for s in scales):>24}"
        print(line)


def print_adjudications(by_scale: dict) -> None:
    print("\none adjudication: seconds until every run's figures in /api/metrics/ are current again "
          "(the decision itself; the requests and the worker's jobs after it; slow figures show their point estimates first)")
    for scale, cases in by_scale.items():
        for case, r in cases.items():
            print(f"{scale:>9,} {case:<28} {r['seconds']:>7.2f} s  (decision {r['adjudicate_s']:.2f} s, {r['requests']} requests, "
                  f"{r['jobs']} jobs, worker {r['worker_s']:.2f} s, its CPU {r['worker_cpu_s']:.2f} s); "
                  + (f"every run's point estimates current after {r['parts_s']:.2f} s (some runs' intervals after); "
                     if r.get("parts_s") is not None else "")
                  + f"then the disagreement queue current in {r['queue_s']:.2f} s ({r['queue_requests']} requests, {r['queue_jobs']} jobs)")
