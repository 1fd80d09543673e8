"""Benchmark: `import_vispr` on a generated folder in VISPR's release layout, images/s and records/s.

Run with `.venv/bin/python bench/vispr_import.py [--images 22000] [--size 48x32] [--database-url postgres://...]
[--compare /tmp/old-tree]`. The folder (images/{train,val,test}2017/, annotations/..., attributes.tsv with 68 ids,
the split lists) is written to a temporary folder, split as the 2017 release is (about 45% train, 19% val, 36%
test), every image a distinct small JPEG (noise) with a few random VISPR labels (--size: the pictures' size; issue
37 measured 2,000 of 640x480). A child process (its own session, a throwaway SQLite database under a fresh
CPRT_DATA_DIR, or the PostgreSQL database of --database-url, dropped and created first; DEBUG off) migrates and
runs `import_vispr ROOT --vispr-split ...` for all three splits, then runs it again (idempotent: nothing new). CPU
counts the importing process and its cleaning workers. Records/s counts annotation records (one per image);
labels/s counts the `vispr` annotator's labels written. SIGTERM or Ctrl-C stop the child and remove the temporary
folders. --compare TREE imports the same folder again with another source tree (a fresh database and data folder
each), one after the other, so two versions are measured side by side; make an old tree with `git archive <commit>
| tar -x -C /tmp/old-tree`.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402,F401 - SIGTERM ends the bench like Ctrl-C (its finally blocks run)

SPLITS = (("train2017", 0.45), ("val2017", 0.19), ("test2017", 0.36))
ATTRIBUTE_IDS = [
    "a0_safe", "a1_age_approx", "a2_weight_approx", "a3_height_approx", "a4_gender", "a5_eye_color", "a6_hair_color",
    "a7_fingerprint", "a8_signature", "a9_face_complete", "a10_face_partial", "a11_tattoo", "a12_semi_nudity",
    "a13_full_nudity", "a16_race", "a17_color", "a18_ethnic_clothing", "a19_name_full", "a20_name_first",
    "a21_name_last", "a23_birth_city", "a24_birth_date", "a25_nationality", "a26_handwriting", "a27_marital_status",
    "a29_ausweis", "a30_credit_card", "a31_passport", "a32_drivers_license", "a33_student_id", "a35_mail",
    "a37_receipt", "a38_ticket", "a39_disability_physical", "a41_injury", "a43_medicine", "a46_occupation",
    "a48_occassion_work", "a49_phone", "a55_religion", "a56_sexual_orientation", "a57_culture", "a58_hobbies",
    "a59_sports", "a60_occassion_personal", "a61_opinion_general", "a62_opinion_political", "a64_rel_personal",
    "a65_rel_social", "a66_rel_professional", "a67_rel_competitors", "a68_rel_spectators", "a69_rel_views",
    "a70_education_history", "a73_landmark", "a74_address_current_complete", "a75_address_current_partial",
    "a78_address_home_complete", "a79_address_home_partial", "a82_date_time", "a85_username", "a90_email",
    "a92_email_content", "a97_online_conversation", "a99_legal_involvement", "a102_vehicle_ownership",
    "a103_license_plate_complete", "a104_license_plate_partial",
]


def write_release(root: Path, n_images: int, seed: int = 0, size: tuple[int, int] = (48, 32)) -> dict:
    from PIL import Image as PILImage

    rng = random.Random(seed)
    (root / "attributes.tsv").write_text("".join(f"{i}\t{a}\t{a.split('_', 1)[1]}\n" for i, a in enumerate(ATTRIBUTE_IDS)))
    counts, start = {}, 0
    for k, (split, share) in enumerate(SPLITS):
        n = n_images - start if k == len(SPLITS) - 1 else round(n_images * share)
        counts[split] = n
        images, annotations = root / "images" / split, root / "annotations" / split
        images.mkdir(parents=True)
        annotations.mkdir(parents=True)
        listed = []
        for i in range(start, start + n):
            vispr_id = f"2017_{10000000 + i}"
            buf = io.BytesIO()
            # Noise: distinct pictures even after re-encoding (close flat colours can encode to the same bytes).
            PILImage.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3)).save(buf, format="JPEG", quality=85)
            (images / f"{vispr_id}.jpg").write_bytes(buf.getvalue())
            labels = ["a0_safe"] if rng.random() < 0.3 else rng.sample(ATTRIBUTE_IDS[1:], rng.randint(1, 6))
            record = {"id": vispr_id, "image_path": f"images/{split}/{vispr_id}.jpg", "labels": labels}
            (annotations / f"{vispr_id}.json").write_text(json.dumps(record))
            listed.append(f"annotations/{split}/{vispr_id}.json\n")
        (root / f"{split}.txt").write_text("".join(listed))
        start += n
    return counts


def child(release: str) -> dict:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    args = [release, "--json"] + [a for split, _ in SPLITS for a in ("--vispr-split", split)]
    out = io.StringIO()
    t0, c0, w0 = time.perf_counter(), time.process_time(), children_cpu()
    call_command("import_vispr", *args, stdout=out)
    first = {"s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "workers_cpu_s": children_cpu() - w0,
             **json.loads(out.getvalue())}
    out = io.StringIO()
    t0 = time.perf_counter()
    call_command("import_vispr", *args, stdout=out)
    second = {"s": time.perf_counter() - t0, **json.loads(out.getvalue())}
    keep = ("s", "cpu_s", "workers_cpu_s", "added", "labels_updated", "unchanged", "nothing_new", "vispr_labels")
    return {"first": {k: first.get(k) for k in keep}, "second": {k: second.get(k) for k in keep}}


def children_cpu() -> float:
    """CPU seconds of this process's ended children: the import's cleaning workers, once it has ended them."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=22_000, help="images in the generated release (default 22,000)")
    parser.add_argument("--size", default="48x32", help="width x height of the generated pictures (default 48x32)")
    parser.add_argument("--database-url", help="a PostgreSQL database to import into (dropped and created first); default: SQLite")
    parser.add_argument("--compare", action="append", default=[], help="another source tree to import the same folder with")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    width, height = (int(v) for v in args.size.lower().split("x"))
    with tempfile.TemporaryDirectory(prefix="vispr-release-") as release:
        t0 = time.perf_counter()
        counts = write_release(Path(release), args.images, size=(width, height))
        print(f"generated {args.images:,} images of {width}x{height} ({', '.join(f'{k} {v:,}' for k, v in counts.items())}) "
              f"in {time.perf_counter() - t0:.1f} s", flush=True)
        for tree in [ROOT] + [Path(t).resolve() for t in args.compare]:
            result = run_child(tree, release, args.database_url)
            print(f"{tree}:")
            report(result)
    return 0


def recreate_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{parts.path.lstrip("/")}"')


def run_child(tree: Path, release: str, database_url: str | None) -> dict:
    """One import (and its repeat) by `tree`'s code in a child process, on a fresh database and data folder."""
    from core.processes import stop_process

    if database_url:
        recreate_database(database_url)
    with tempfile.TemporaryDirectory(prefix="vispr-bench-") as data_dir:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")}
        env |= {"CPRT_DATA_DIR": data_dir, "DJANGO_SETTINGS_MODULE": "cprt_site.settings", "LOG_LEVEL": "WARNING",
                "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(48), "ALLOWED_HOSTS": "localhost", "PYTHONPATH": str(tree)}
        if database_url:
            env["DATABASE_URL"] = database_url
        proc = None
        try:
            # SIGTERM is held while the child starts: arriving inside Popen (the child already running, `proc`
            # not yet set), it would leave the child writing into the data folder while it is removed.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            try:
                proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", release], env=env, cwd=tree,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # a held SIGTERM is raised here, proc set
            stdout, stderr = proc.communicate()
        finally:
            if proc is not None:
                stop_process(proc, timeout=10)  # on SIGTERM/Ctrl-C: the child and its group end too
        if proc.returncode != 0:
            raise SystemExit(f"child failed:\n{stderr[-4000:]}")
        return json.loads(stdout.strip().splitlines()[-1])


def report(result: dict) -> None:
    first, second = result["first"], result["second"]
    labels = first["vispr_labels"]["created"]
    workers = first.get("workers_cpu_s") or 0.0
    print(f"first import:  {first['added']:,} images in {first['s']:.1f} s (CPU {first['cpu_s'] + workers:.1f} s: "
          f"importer {first['cpu_s']:.1f} s, cleaning workers {workers:.1f} s): "
          f"{first['added'] / first['s']:,.0f} images/s, {first['added'] / first['s']:,.0f} records/s, {labels / first['s']:,.0f} vispr labels/s")
    print(f"second import: nothing new = {second['nothing_new']}, {second['unchanged']:,} records unchanged in {second['s']:.1f} s: "
          f"{second['unchanged'] / second['s']:,.0f} records/s")


if __name__ == "__main__":
    sys.exit(main())
