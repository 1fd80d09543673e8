"""The two sides of MultiPriv's upgrade test (tests/multipriv/test_upgrade.py), each run in its own process
on a temporary SQLite file (DATABASE_URL and CPRT_DATA_DIR come from the environment):

    python -m tests.support.multipriv_upgrade seed   migrate to the migrations main had before MultiPriv moved
                                                     into benchmarks/multipriv, write MultiPriv rows, print the state
    python -m tests.support.multipriv_upgrade dump   print the same state (after `manage.py migrate`)

The state printed (one JSON object): every row of MultiPriv's three tables and of its runs and results, read
with SQL; the content types of the three models with their permissions and admin log entries; and the
figures JSON of each run (the figures page's `?format=json`). The tables did not change in the move, so the
current models write and read them on both sides.
"""
from __future__ import annotations

import json
import sys

import django

# Each app's last migration on main before the move (annotations 0013 and multipriv 0001 came with it).
PRE_MOVE = {"core": "0004_idempotency_key", "annotations": "0012_labeling_assisted",
            "inference": "0017_run_result_outcome_item_index", "scoring": "0017_profile_exclude_assisted"}
LIBRARY_APPS = ("contenttypes", "auth", "admin", "sessions", "authtoken", "axes")  # to their own last migrations
TABLES = ("annotations_person", "annotations_personimage", "annotations_personpair")
MODELS = ("person", "personimage", "personpair")


def _rows(cursor, table: str, where: str = "", params=()) -> list[list]:
    cursor.execute(f"SELECT * FROM {table} {where} ORDER BY id", params)  # noqa: S608 - fixed names
    return [[str(v) if not isinstance(v, (int, float, type(None))) else v for v in row] for row in cursor.fetchall()]


def migrate_to_pre_move() -> None:
    from django.core.management import call_command

    for app in LIBRARY_APPS:
        call_command("migrate", app, verbosity=0)
    for app, name in PRE_MOVE.items():
        call_command("migrate", app, name, verbosity=0)


def seed() -> None:
    """Persons, images, pairs, a finished re-identification run and a finished profile run (results and
    their frozen truth), and an admin log entry about a person, in the database as main had it."""
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.auth import get_user_model
    from django.contrib.contenttypes.models import ContentType
    from django.utils import timezone

    from benchmarks.multipriv.kinds import MultiprivProfileKind, MultiprivReidKind
    from benchmarks.multipriv.models import Person, PersonImage, PersonPair
    from inference.models import Run, RunResult

    migrate_to_pre_move()
    persons = [Person.objects.create(name=f"person_{i}", profile={"Name": name, "Gender": gender, "Address": None},
                                     raw_profile={"Name": name, "Gender": gender, "Address": "None"},
                                     profile_file=f"person_{i}.json", profile_sha256=f"{i:064d}")
               for i, (name, gender) in enumerate((("Ada Quill", "Female"), ("Bram Oakes", "Male"), ("Cleo Varga", "Female")), 1)]
    images = [PersonImage.objects.create(person=p, category=c, index=1, file=f"multipriv/{p.name}/{c}1.png", width=32, height=24,
                                         sha256=f"{p.pk}{c}".ljust(64, "0")) for p in persons for c in "ABE"]
    pairs = [PersonPair.objects.create(first=a, second=b, same_person=a.person_id == b.person_id)
             for a, b in ((images[0], images[1]), (images[0], images[2]), (images[3], images[4]), (images[0], images[3]),
                          (images[1], images[5]), (images[2], images[7]))]
    now = timezone.now()
    for kind, ids, answers in (
        (MultiprivReidKind, [p.pk for p in pairs],
         [({"same_person": s, "declined": False}, sc) for s, sc in ((True, 0.9), (False, 0.4), (True, 0.7), (True, 0.6), (False, 0.1))]
         + [({"same_person": False, "declined": True}, None)]),
        (MultiprivProfileKind, [p.pk for p in persons],
         [({"declined": False, "profile": {"Name": "Ada Quill", "Gender": "female"}}, None),
          ({"declined": False, "profile": {"Name": "B. Oakes", "Gender": "Male"}}, None), (None, None)]),
    ):
        run = Run.objects.create(task=kind.key, provider="openai", model_name="gpt-5.1", prompt_version=kind.versions[-1],
                                 item_ids=ids, total=len(ids), truth=kind.freeze_truth(ids), status=Run.STATUS_FINISHED,
                                 started_at=now, finished_at=now, heartbeat_at=now)
        for item_id, (answer, score) in zip(ids, answers):
            if answer is None:
                RunResult.objects.create(run=run, item_id=item_id, outcome=RunResult.OUTCOME_REFUSED, error="refused: no")
            else:
                RunResult.objects.create(run=run, item_id=item_id, outcome=RunResult.OUTCOME_OK, score=score,
                                         reasoning="seeded", raw={"answer": answer})
    admin = get_user_model().objects.create(username="upgrade-admin", is_staff=True, is_superuser=True)
    LogEntry.objects.create(user=admin, content_type=ContentType.objects.get(app_label="annotations", model="person"),
                            object_id=str(persons[0].pk), object_repr=persons[0].name, action_flag=CHANGE, change_message="seeded")
    dump()


def dump() -> None:
    from django.contrib.admin.models import LogEntry
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType
    from django.db import connection

    from inference import benchmarks
    from inference.models import Run

    declaration = benchmarks.get("multipriv")
    runs = list(Run.objects.filter(task__in=[k.key for k in declaration.kinds]).order_by("pk"))
    with connection.cursor() as cursor:
        rows = {table: _rows(cursor, table) for table in TABLES}
        ids = [r.pk for r in runs]
        marks = ", ".join(["%s"] * len(ids))
        rows["inference_run"] = _rows(cursor, "inference_run", f"WHERE id IN ({marks})", ids)
        rows["inference_runresult"] = _rows(cursor, "inference_runresult", f"WHERE run_id IN ({marks})", ids)
    types = ContentType.objects.filter(model__in=MODELS, app_label__in=("annotations", "multipriv")).order_by("pk")
    state = {
        "rows": rows,
        "content_types": [[ct.pk, ct.app_label, ct.model] for ct in types],
        "permissions": sorted([p.pk, p.codename, p.content_type_id] for p in Permission.objects.filter(content_type__in=types)),
        "log_entries": [[e.pk, e.content_type_id, e.object_id] for e in LogEntry.objects.order_by("pk")],
        "figures": {str(run.pk): json.dumps(declaration.report(run), sort_keys=True) for run in runs},
    }
    sys.stdout.write("STATE " + json.dumps(state, sort_keys=True) + "\n")


if __name__ == "__main__":
    django.setup()
    {"seed": seed, "dump": dump}[sys.argv[1]]()
