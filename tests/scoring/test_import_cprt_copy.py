"""The CPRT-Bench import's COPY path (PostgreSQL) writes exactly what the bulk path writes: the same
file imported both ways from the same starting state (new images, existing ones in another split,
labels new, changed and unchanged) leaves the same images, labels, history and scores."""
from __future__ import annotations

import json

import pytest
from django.db import connection, transaction

from annotations import taxonomy
from annotations.models import Annotator, Image, Label
from scoring.cprt_bench import BenchFileError, importing
from scoring.cprt_bench.copying import store_file_with_copy as copy_path
from scoring.models import ImageScore
from tests.support.bench_rows import make_rows, write_jsonl

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY is PostgreSQL's")


class Rollback(Exception):
    pass


def _state() -> dict:
    history = Label.history.model
    return {
        "images": sorted(Image.objects.values_list("vispr_id", "split", "source", "published_level", "published_score")),
        "labels": sorted(Label.objects.values_list("image__vispr_id", "annotator__name", "attribute_id", "value", "rationale")),
        "history": sorted(history.objects.values_list("image__vispr_id", "attribute_id", "value", "rationale", "history_type",
                                                      "history_user_id")),
        "scores": sorted(ImageScore.objects.values_list("image__vispr_id", "profile__name", "level", "score")),
    }


def _import_and_look(path, monkeypatch, use_copy: bool, actor) -> tuple[dict, dict]:
    monkeypatch.setattr(importing, "USE_COPY", use_copy)
    copy_calls = []
    monkeypatch.setattr(importing, "store_file_with_copy", lambda *a, **k: copy_calls.append(1) or copy_path(*a, **k))
    try:
        with transaction.atomic():
            result = importing.import_bench_file(path, "test", actor=actor)
            seen = _state(), {"rows": result.rows, "created": result.images_created, "updated": result.images_updated,
                              "split_differs": result.split_differs, "scored": result.scored}
            raise Rollback
    except Rollback:
        pass
    assert copy_calls == ([1] if use_copy else [])  # the path asked for is the path taken
    return seen


@pytest.mark.django_db
def test_copy_and_bulk_paths_write_the_same_rows(tmp_path, monkeypatch, admin_user):
    rows = make_rows(400, seed=4)
    path = write_jsonl(tmp_path / "bench.jsonl", rows)
    # Starting state: 50 of the images exist already (10 in another split), with some ground-truth labels
    # that differ from the file's, some equal and some with a rationale.
    gt = Annotator.ground_truth("cprt-bench")
    ids = taxonomy.attribute_ids()
    first_key = taxonomy.active().keys[0]
    for k, row in enumerate(rows[:50]):
        image = Image.objects.create(vispr_id=row["id"], split="train" if k < 10 else "test", source="before")
        value = row["binary_labels"]["level1"][first_key]
        Label.objects.create(image=image, annotator=gt, attribute_id=ids[first_key],
                             value=value if k % 3 else 1 - value, rationale="seen" if k % 5 == 0 else "")
    bulk, bulk_result = _import_and_look(path, monkeypatch, False, admin_user)
    copied, copy_result = _import_and_look(path, monkeypatch, True, admin_user)
    assert copy_result == bulk_result
    assert bulk_result["created"] == 350 and bulk_result["updated"] == 50 and len(bulk_result["split_differs"]) == 10
    for part in ("images", "labels", "history", "scores"):
        assert copied[part] == bulk[part], part
    assert len(bulk["labels"]) == 400 * 22 and len(bulk["history"]) > 400 * 21


@pytest.mark.django_db
def test_a_refused_file_leaves_nothing_on_the_copy_path(tmp_path, monkeypatch):
    monkeypatch.setattr(importing, "USE_COPY", True)
    rows = make_rows(30, seed=5)
    rows[7]["level"] = 9
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(ValueError, match="level"):
        importing.import_bench_file(path, "test")
    assert Image.objects.count() == 0 and Label.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_the_copy_path_refuses_a_bad_file_with_the_same_problems_in_the_same_order(tmp_path, monkeypatch, fmt):
    # The COPY path checks rows while it copies them and leaves duplicate ids to the database; scan_file
    # keeps them in memory. Duplicates of a valid row, of a refused row and of a duplicate, mixed with
    # other problems, are listed alike, each at its row.
    rows = make_rows(40, seed=6)
    rows[3]["level"] = 9  # refused row whose id is repeated later
    rows[5]["id"] = rows[3]["id"]  # duplicate of a refused row
    rows[8]["id"] = rows[0]["id"]  # duplicate of a valid row
    rows[9]["id"] = rows[0]["id"]  # and again: first at the first
    rows[12]["score"] = 2
    rows[12]["id"] = rows[1]["id"]  # a refused duplicate: its own problem only
    rows[20]["id"] = "../bad"
    rows[21]["id"] = "../bad"  # two bad ids: not VISPR ids, so no duplicate either
    rows[30]["id"] = rows[3]["id"]
    if fmt == "jsonl":
        path = write_jsonl(tmp_path / "bad.jsonl", rows)
    else:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(rows), encoding="utf-8")
    refusals = {}
    for use_copy in (False, True):
        monkeypatch.setattr(importing, "USE_COPY", use_copy)
        with pytest.raises(BenchFileError) as exc:
            importing.import_bench_file(path, "test")
        refusals[use_copy] = exc.value.problems
    assert refusals[True] == refusals[False]
    where = "line" if fmt == "jsonl" else "row"
    assert f"{where} 6: duplicate id '{rows[3]['id']}' (first at {where} 4)" in refusals[True]
    assert f"{where} 10: duplicate id '{rows[0]['id']}' (first at {where} 1)" in refusals[True]
    assert len(refusals[True]) == 8
    assert Image.objects.count() == 0 and Label.objects.count() == 0 and not Annotator.objects.filter(name__contains="cprt").exists()


@pytest.mark.django_db
def test_copy_path_keeps_the_imported_ids_in_the_database(tmp_path):
    """The imported images' ids are read back a sorted chunk at a time for the rescoring (issue 29: no array of
    every id), and they are exactly the file's images (not an image that was there before)."""
    rows = make_rows(50, seed=6)
    Image.objects.create(vispr_id="2017_not_in_the_file", split="test", source="before")
    tax = taxonomy.active()
    attribute_pks = [taxonomy.attribute_ids()[key] for key in tax.keys]
    with transaction.atomic():
        n, ids, *_ = copy_path(write_jsonl(tmp_path / "bench.jsonl", rows), tax, attribute_pks, "test",
                               Annotator.ground_truth("cprt-bench").pk, "test source", None)
        want = sorted(Image.objects.filter(vispr_id__in=[r["id"] for r in rows]).values_list("id", flat=True))
        chunks = list(ids.sorted_chunks(7))
        assert n == len(ids) == 50 and [i for chunk in chunks for i in chunk] == want == list(ids)
        assert [len(chunk) for chunk in chunks] == [7] * 7 + [1]
