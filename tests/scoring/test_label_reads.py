"""Every counted label is read, once, whatever the size of the spans the labels are read in (issue 37: on
PostgreSQL `load_labels` reads LABEL_ID_SPAN image ids at a time, each span packed by the database); a run's
results read packed equal its rows in (run, image) order; and the disagreement queue's rows are written whole
also when two refreshes of one queue overlap."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from django.db import connection

from annotations import taxonomy
from annotations.models import Label
from scoring import queries
from scoring.models import DisputedImage, ScoringProfile
from scoring.services import disagreements
from tests.support.permission_cases.scoring import add_results, label_everything, make_images, make_run, submit


def _value(i: int, k: str) -> float:
    return float((i * 7 + sum(map(ord, k))) % 3) / 2


@pytest.fixture
def labelled(model_annotators, reviewer_a, reviewer_b):
    from annotations.models import Annotator

    images = make_images(11, prefix="2017_66")
    gpt, gem = model_annotators
    label_everything(images, gpt, _value)
    label_everything(images[3:], gem, lambda i, k: 1.0 - _value(i, k))
    human_a, human_b = Annotator.for_user(reviewer_a), Annotator.for_user(reviewer_b)
    label_everything(images[:6], human_a, lambda i, k: _value(i + 1, k))
    for image in images[:4]:
        submit(image, human_a)  # the other two images: a labeling never submitted, so its labels do not count
    label_everything(images[5:], human_b, lambda i, k: _value(i + 2, k))  # no labeling submitted: none counts
    return images


def _expected(image_ids=None):
    """The counted labels straight from the rows: models' always, humans' where their labeling was submitted."""
    from annotations.models import Annotator, Labeling

    submitted = set(Labeling.objects.filter(status=Labeling.STATUS_SUBMITTED).values_list("annotator_id", "image_id"))
    rows = [(a, i, t, v) for a, i, t, v, kind in Label.objects.values_list("annotator_id", "image_id", "attribute_id", "value",
                                                                          "annotator__kind")
            if kind != Annotator.KIND_HUMAN or (a, i) in submitted]
    if image_ids is not None:
        rows = [r for r in rows if r[1] in image_ids]
    key_of = {pk: k for k, pk in taxonomy.attribute_ids().items()}
    return {(a, i, key_of[t]): v for a, i, t, v in rows}


def _read(data) -> dict:
    out = {}
    for a, annotator in enumerate(data.annotator_ids):
        for i, image in enumerate(data.image_ids):
            for j, key in enumerate(data.keys):
                if not np.isnan(data.values[a, i, j]):
                    out[(annotator, image, key)] = data.values[a, i, j]
    return out


@pytest.mark.parametrize("span", [1, 3, 4, 1000])
def test_load_labels_reads_every_counted_label_once_whatever_the_span(labelled, monkeypatch, span):
    monkeypatch.setattr(queries, "LABEL_ID_SPAN", span)
    data = queries.load_labels()
    assert _read(data) == _expected()
    assert data.image_ids == sorted({i for _, i, _ in _expected()})
    some = [labelled[0].pk, labelled[4].pk, labelled[9].pk]
    assert _read(queries.load_labels(image_ids=some)) == _expected(set(some))
    assert _read(queries.load_labels(image_ids=[])) == {}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the COPY and its lock are PostgreSQL's")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_overlapping_writes_of_one_queue_leave_one_whole_queue(labelled):
    profile = ScoringProfile.active()
    queue = disagreements.disagreement_queue(profile)
    rows = [(queue["key"], r.image_id, r.impact, r.n_disputed, r.level_changes, r.score_lo, r.score_hi, r.level_lo, r.level_hi,
             '["age"]', "[]", r.attribute_mask, r.pair_mask)
            for r in DisputedImage.objects.filter(queue=queue["key"])]
    assert rows
    errors, start = [], threading.Barrier(2)

    def write():
        try:
            start.wait()
            disagreements._store(queue["key"], rows)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert DisputedImage.objects.filter(queue=queue["key"]).count() == len(rows)


def test_judge_results_equal_the_rows_in_run_and_image_order(db):
    from inference.models import RunResult

    images = make_images(9, prefix="2017_67")
    outcomes = ("ok", "refused", "ok", "unparseable", "error", "ok", "ok", "refused", "ok")
    runs = [make_run(model=f"m{k}") for k in range(3)]
    for k, run in enumerate(runs):
        rows = [(image, outcomes[(i + k) % 9], None if outcomes[(i + k) % 9] != "ok" else round(((i * 5 + k) % 9) / 8, 3))
                for i, image in enumerate(images) if (i + k) % 4]
        add_results(run, rows[::-1])  # stored in reverse: the read orders them
    RunResult.objects.filter(run=runs[2], image=images[1]).update(outcome="timeout")  # not among the choices: kept as it is
    ids = [runs[2].pk, runs[0].pk, runs[1].pk]
    read = queries.judge_results(ids)
    assert sorted(read) == sorted(ids)
    for run in runs:
        expected = list(RunResult.objects.filter(run=run).order_by("image_id").values_list("image_id", "outcome", "score"))
        got = read[run.pk]
        assert got["image_id"].tolist() == [e[0] for e in expected]
        assert got["outcome"].tolist() == [e[1] for e in expected]
        assert [None if np.isnan(s) else s for s in got["score"].tolist()] == [e[2] for e in expected]
    assert "timeout" in read[runs[2].pk]["outcome"].tolist()
    assert queries.judge_results([]) == {}
