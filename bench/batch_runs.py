"""Building and ingesting a batch run's files: requests per second, file sizes, peak memory.

    .venv/bin/python bench/batch_runs.py [--images 6736] [--data-dir /tmp/cprt-bench-batch]

In one process, no network: a judge run in batch mode over --images stored images (64x48 PNGs,
made once), then
  1. build: the OpenAI request file(s) of every image (image bytes read, base64 data URL, JSON line),
     through the same code the poller uses (inference.batch.requests.write_parts);
  2. record: the ProviderBatch and BatchRequest rows, in one transaction (what submission stores);
  3. ingest: an output file in the Batch API's format (answers made by the fake server's model,
     before the timing) parsed and stored through inference.batch.ingest, exactly as the poller does.
Peak Python memory (tracemalloc) is measured for each phase at a quarter of the images and at all
of them: flat memory means the peak does not grow with the number of images. Ends on SIGTERM.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measured(fn):
    tracemalloc.start()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return result, seconds, peak / 2**20


def one(n: int, directory: str) -> dict:
    from django.db import transaction

    from inference import launching, prompts
    from inference.batch import lifecycle
    from inference.batch.clients import client_for
    from inference.batch.ingest import ingest_lines
    from inference.batch.requests import model_requests, write_parts
    from inference.providers.openai.batch import parse_lines
    from inference.selection import Selection
    from tests.fakes.openai_server import FakeOpenAIServer

    spec = launching.LaunchSpec("judge", "openai", "gpt-5.1", "zero_shot", False, prompts.DEFAULT_VERSION["judge"],
                               Selection(split="test", sample_size=n, seed=1), 8, mode="batch")
    run = launching.launch_run(None, spec)
    client = client_for("openai", "gpt-5.1")
    parts, build_s, build_mib = measured(lambda: write_parts(run, "judge", model_requests(run, "judge", run.image_ids), client.line, directory))

    def record():
        with transaction.atomic():
            return [lifecycle.record(run, "judge", 0, i, part, False) for i, part in enumerate(parts)]

    batches, record_s, record_mib = measured(record)
    model = FakeOpenAIServer()
    output = os.path.join(directory, f"out-{run.pk}.jsonl")
    with open(output, "w") as out:
        for part in parts:
            with open(part.path) as fh:
                for k, text in enumerate(fh):
                    line = json.loads(text)
                    body = model.default_reply(line["url"], line["body"]).body
                    response = {"status_code": 200, "request_id": f"q{k}", "body": body}
                    out.write(json.dumps({"id": f"r{k}", "custom_id": line["custom_id"], "response": response, "error": None}) + "\n")

    def ingest():
        with open(output, "rb") as fh:
            return ingest_lines(batches[0], parse_lines(fh)) if len(batches) == 1 else None

    report, ingest_s, ingest_mib = measured(ingest)
    assert report is not None and report.stored == len(run.image_ids) and run.results.count() == len(run.image_ids), report
    sizes = [p.bytes for p in parts]
    for p in parts:
        os.unlink(p.path)
    out_bytes = os.path.getsize(output)
    os.unlink(output)
    return {
        "images": len(run.image_ids), "files": len(parts), "request_file_mib": round(sum(sizes) / 2**20, 2),
        "bytes_per_request": round(sum(sizes) / len(run.image_ids)), "output_file_mib": round(out_bytes / 2**20, 2),
        "build_req_per_s": round(len(run.image_ids) / build_s), "build_peak_mib": round(build_mib, 1),
        "record_req_per_s": round(len(run.image_ids) / record_s), "record_peak_mib": round(record_mib, 1),
        "ingest_req_per_s": round(len(run.image_ids) / ingest_s), "ingest_peak_mib": round(ingest_mib, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=6736)
    parser.add_argument("--data-dir", default="/tmp/cprt-bench-batch")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))  # no children; end cleanly
    Path(args.data_dir).mkdir(parents=True, exist_ok=True)
    os.environ.update({
        "CPRT_DATA_DIR": args.data_dir, "DJANGO_SETTINGS_MODULE": "cprt_site.settings",
        "DATABASE_URL": os.environ.get("BENCH_DATABASE_URL", f"sqlite:///{args.data_dir}/cprt.sqlite3"),
        "OPENAI_API_KEY": "sk-bench-not-a-secret", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "LOG_LEVEL": "WARNING",
        "DEBUG": "false",  # as in production: no query log growing with the run
        "SECRET_KEY": os.environ.get("SECRET_KEY") or os.urandom(24).hex(), "ALLOWED_HOSTS": "localhost",
    })
    import django

    django.setup()
    from django.core.management import call_command

    from annotations.models import Image
    from bench.common import make_run_images
    from inference import dispatching

    dispatching.start_batch = lambda run_id: None  # this bench drives the phases itself; nothing is sent anywhere
    call_command("migrate", verbosity=0)
    have = Image.objects.count()
    if have < args.images:
        print(f"generating {args.images - have} images ...", flush=True)
        make_run_images(have, args.images)
    with tempfile.TemporaryDirectory(dir=args.data_dir) as directory:
        rows = [one(max(1, args.images // 4), directory), one(args.images, directory)]
    print(json.dumps(rows, indent=1))
    small, big = rows
    print(f"peak memory at {big['images']} vs {small['images']} images: build {big['build_peak_mib']} vs {small['build_peak_mib']} MiB, "
          f"ingest {big['ingest_peak_mib']} vs {small['ingest_peak_mib']} MiB")


if __name__ == "__main__":
    main()
