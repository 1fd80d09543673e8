"""Run by test_upgrade.py in a subprocess on a temporary SQLite file (its own CPRT_DATA_DIR): the
operator's upgrade across SPY-Bench's move into benchmarks/spy_bench/.

    python -m tests.benchmarks.spy_bench.upgrade_steps old OUT.json   # migrate to main before the move, seed, record
    python -m tests.benchmarks.spy_bench.upgrade_steps new OUT.json   # migrate to the end, record

Each step writes what it saw as JSON: every row of the four SPY-Bench tables (read by SQL), the
content types of their models, the applied migrations of interest and the run's figures."""
from __future__ import annotations

import io
import json
import sys

import django

# The last migration of each app at the commit before the move (inference's 0018 moves SPY-Bench out).
OLD_LEAVES = {"core": "0004_idempotency_key", "annotations": "0012_labeling_assisted",
              "scoring": "0017_profile_exclude_assisted", "inference": "0017_run_result_outcome_item_index"}
TABLES = ("inference_spyset", "inference_spyitem", "inference_spyrow", "inference_spyimport")
MODELS = ("spyset", "spyitem", "spyrow", "spyimport")


def migrate_to_before_the_move() -> None:
    from django.apps import apps
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    for app, name in OLD_LEAVES.items():
        call_command("migrate", app, name, verbosity=0)
    leaves = MigrationLoader(connection).graph.leaf_nodes()
    for app in sorted({app for app, _ in leaves} - set(OLD_LEAVES)):
        if not apps.get_app_config(app).name.startswith("benchmarks."):  # the benchmark folders came later
            call_command("migrate", app, verbosity=0)


def seed() -> int:
    from PIL import Image as PILImage

    from annotations.images import attach, clean_image
    from annotations.models import Image
    from benchmarks.spy_bench import demo, files, importing
    from benchmarks.spy_bench.models import SpySet
    from django.contrib.auth import get_user_model
    from inference.models import Run

    user = get_user_model().objects.create_user("upgrader", password="x")
    for n in range(1, 6):
        buf = io.BytesIO()
        PILImage.new("RGB", (32, 24), (40 * n, 200 - 30 * n, 11 * n)).save(buf, format="PNG")
        image = Image(vispr_id=f"2017_{n:08d}", split="test", source="upgrade")
        attach(image, clean_image(buf.getvalue()))
        image.save()
    (run_id,) = demo.seed_spy_bench("upgrade")  # a set, its items and rows, a finished spy-bench run with results
    run = Run.objects.get(pk=run_id)
    importing.import_results(user, "computed elsewhere", "qwen-vl", files.write_rows(importing.run_rows(run)).encode(),
                             "gpt-judge", False, SpySet.objects.get(), "evaluated.jsonl")
    return run_id


def record(run_id: int) -> dict:
    from django.db import connection
    from django.db.migrations.recorder import MigrationRecorder

    from inference import benchmarks
    from inference.models import Run

    with connection.cursor() as cursor:
        rows = {}
        for table in TABLES:
            cursor.execute(f"SELECT * FROM {table} ORDER BY id")  # noqa: S608 - our own table names
            names = [c[0] for c in cursor.description]
            rows[table] = [dict(zip(names, map(str, row))) for row in cursor.fetchall()]
        cursor.execute("SELECT id, app_label, model FROM django_content_type WHERE model IN (%s, %s, %s, %s) ORDER BY id", MODELS)
        content_types = [list(row) for row in cursor.fetchall()]
        cursor.execute("SELECT content_type_id, codename FROM auth_permission WHERE codename LIKE %s ORDER BY id", ["%_spy%"])
        permissions = [list(row) for row in cursor.fetchall()]
    applied = {f"{app}.{name}" for app, name in MigrationRecorder(connection).applied_migrations()}
    report = benchmarks.get("spy-bench").report(Run.objects.get(pk=run_id))
    return {"run_id": run_id, "rows": rows, "content_types": content_types, "permissions": permissions,
            "applied": sorted(m for m in applied if m.startswith(("spy_bench.", "inference.001"))),
            "figures": json.dumps(report, sort_keys=True)}


def main(step: str, out: str) -> None:
    django.setup()
    from django.core.management import call_command

    if step == "old":
        migrate_to_before_the_move()
        run_id = seed()
    else:
        call_command("migrate", verbosity=0)
        from inference.models import Run

        run_id = Run.objects.get(task="spy-bench").pk
    with open(out, "w") as fh:
        json.dump(record(run_id), fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
