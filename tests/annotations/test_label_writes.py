"""The one label-writing API (annotations/services/labels.py) and every caller that writes through it:
a reviewer's submission, an annotate run's results, the CPRT-Bench import and an adjudication, each with
the history rows the project promises (who, when, created or changed)."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotations import taxonomy
from annotations.models import Adjudication, Annotator, Attribute, Label, Labeling
from annotations.services import labels as label_api
from annotations.services.editing import submit
from annotations.services.labeling_queue import claim_next
from annotations.signals import labels_changed
from inference import execution, launching, prompts
from inference.selection import Selection
from scoring.services.adjudication import adjudicate
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.bench_rows import make_rows, write_jsonl

pytestmark = pytest.mark.django_db


def history(**where) -> list[tuple]:
    """(attribute id, value, history type, user id) of every HistoricalLabel row matching `where`, oldest first."""
    rows = Label.history.filter(**where).order_by("history_id")
    return list(rows.values_list("attribute_id", "value", "history_type", "history_user_id"))


def test_write_labels_creates_changes_and_leaves_unchanged_labels_alone(make_image, reviewer_a):
    image = make_image("2017_00000001")
    annotator = Annotator.for_user(reviewer_a)
    ids = list(taxonomy.attribute_ids().values())[:3]
    written = label_api.write_labels(image.pk, annotator.pk, {ids[0]: (1.0, "a"), ids[1]: (0.0, ""), ids[2]: (0.5, "")}, user=reviewer_a)
    assert (written.created, written.changed, written.unchanged) == (3, 0, 0)
    assert history(image_id=image.pk) == [(ids[0], 1.0, "+", reviewer_a.pk), (ids[1], 0.0, "+", reviewer_a.pk), (ids[2], 0.5, "+", reviewer_a.pk)]

    written = label_api.write_labels(image.pk, annotator.pk, {ids[0]: (1.0, "a"), ids[1]: (1.0, ""), ids[2]: (0.5, "why")}, user=None)
    assert (written.created, written.changed, written.unchanged) == (0, 2, 1)
    stored = {a: (v, r) for a, v, r in Label.objects.filter(image=image).values_list("attribute_id", "value", "rationale")}
    assert stored == {ids[0]: (1.0, "a"), ids[1]: (1.0, ""), ids[2]: (0.5, "why")}
    assert history(image_id=image.pk)[3:] == [(ids[1], 1.0, "~", None), (ids[2], 0.5, "~", None)]
    # Each history row is a copy of the label as written, with its id.
    latest = Label.history.filter(image_id=image.pk, attribute_id=ids[2]).order_by("-history_id").first()
    label = Label.objects.get(image=image, attribute_id=ids[2])
    assert (latest.id, latest.rationale, latest.updated_at) == (label.pk, "why", label.updated_at)


def test_a_bad_value_is_refused_and_nothing_is_written(make_image, model_annotators):
    image = make_image("2017_00000001")
    ids = list(taxonomy.attribute_ids().values())
    sets = [label_api.LabelSet(image.pk, model_annotators[0].pk, {ids[0]: (1.0, "")}),
            label_api.LabelSet(image.pk, model_annotators[1].pk, {ids[1]: (0.7, "")})]
    with pytest.raises(ValueError, match=r"Label 0.7 for image .* is not 0, 0.5 or 1; nothing was written"):
        label_api.write_label_sets(sets)
    assert not Label.objects.exists() and not Label.history.exists()


def test_bulk_writes_many_sets_across_chunks_with_history(make_image, model_annotators, monkeypatch):
    monkeypatch.setattr(label_api, "IMAGES_PER_STATEMENT", 2)  # several statements per call
    images = [make_image(f"2017_{i:08d}", with_file=False) for i in range(5)]
    ids = list(taxonomy.attribute_ids().values())
    gpt, gemini = model_annotators
    sets = [label_api.LabelSet(image.pk, annotator.pk, {a: (1.0 if (image.pk + a) % 2 else 0.0, "") for a in ids})
            for image in images for annotator in (gpt, gemini)]
    written = label_api.write_label_sets(sets)
    assert (written.created, written.changed) == (5 * 2 * len(ids), 0)
    assert Label.objects.count() == Label.history.filter(history_type="+").count() == 5 * 2 * len(ids)
    # Again, with one value changed for one annotator: one "~" row, nothing else rewritten.
    changed = dict(sets[3].values) | {ids[0]: (0.5, "")}
    sets[3] = label_api.LabelSet(sets[3].image_id, sets[3].annotator_id, changed)
    written = label_api.write_label_sets(sets)
    assert (written.created, written.changed, written.unchanged) == (0, 1, 5 * 2 * len(ids) - 1)
    assert history(history_type="~") == [(ids[0], 0.5, "~", None)]
    assert Label.history.get(history_type="~").annotator_id == sets[3].annotator_id


def test_submit_writes_through_the_api_with_history_and_signal(reviewer_a, make_image, django_capture_on_commit_callbacks):
    image = make_image("2017_00000001")
    labeling = claim_next(reviewer_a)
    keys = taxonomy.active().keys
    sent = []
    labels_changed.connect(lambda sender, image_ids, **kw: sent.append(image_ids), dispatch_uid="test-label-writes", weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            submit(labeling, reviewer_a, version=labeling.version, values={k: 1.0 for k in keys}, rationales={keys[0]: "seen"})
    finally:
        labels_changed.disconnect(dispatch_uid="test-label-writes")
    assert sent == [[image.pk]]
    rows = history(image_id=image.pk)
    assert len(rows) == len(keys) and {(t, u) for _, _, t, u in rows} == {("+", reviewer_a.pk)}
    labeling.refresh_from_db()
    assert labeling.status == Labeling.STATUS_SUBMITTED and labeling.submitted_at is not None
    assert labeling.history.filter(status="submitted", history_user=reviewer_a).exists()


def test_annotate_run_results_write_labels_with_history(openai_server, images, django_capture_on_commit_callbacks):
    run_spec = launching.LaunchSpec(task="annotate", provider="openai", model_name="gpt-5.1", strategy="", counterfactual_faces=False,
                                    prompt_version=prompts.DEFAULT_VERSION["annotate"], selection=Selection(), concurrency=2)
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, run_spec)
    execution.run_chunk(run.pk, run.image_ids)
    n_keys = len(taxonomy.active().keys)
    for image in images:
        labels = Label.objects.filter(image=image, annotator=run.annotator)
        assert labels.count() == n_keys
        rows = Label.history.filter(image_id=image.pk, annotator_id=run.annotator_id)
        assert sorted(rows.values_list("id", flat=True)) == sorted(labels.values_list("pk", flat=True))
        assert set(rows.values_list("history_type", flat=True)) == {"+"}
        labeling = Labeling.objects.get(image=image, annotator=run.annotator)
        assert labeling.status == Labeling.STATUS_SUBMITTED and labeling.history.count() == 1


def test_import_writes_labels_with_history_and_reimport_records_only_changes(tmp_path):
    rows = make_rows(40)
    path = write_jsonl(tmp_path / "bench.jsonl", rows)
    call_command("import_cprt", path, "--split", "test", stdout=io.StringIO())
    gt = Annotator.objects.get(name="ground-truth:cprt-bench")
    n_keys = len(taxonomy.active().keys)
    assert Label.objects.filter(annotator=gt).count() == 40 * n_keys
    assert history(annotator_id=gt.pk) and {(t, u) for _, _, t, u in history(annotator_id=gt.pk)} == {("+", None)}
    assert Label.history.count() == 40 * n_keys

    call_command("import_cprt", path, "--split", "test", stdout=io.StringIO())  # the same file: nothing changes
    assert Label.history.count() == 40 * n_keys

    flipped = {k: 1 - v for k, v in rows[0]["binary_labels"]["level4"].items()}
    rows[0]["binary_labels"]["level4"] = flipped
    call_command("import_cprt", write_jsonl(tmp_path / "bench.jsonl", rows), "--split", "test", stdout=io.StringIO())
    ids = taxonomy.attribute_ids()
    changes = Label.history.filter(history_type="~")
    assert sorted(changes.values_list("attribute_id", "value")) == sorted((ids[k], float(v)) for k, v in flipped.items())
    first = Label.objects.filter(image__vispr_id=rows[0]["id"], annotator=gt)
    assert {ids[k]: float(v) for k, v in flipped.items()}.items() <= dict(first.values_list("attribute_id", "value")).items()


def test_adjudication_writes_the_final_label_with_history(adjudicator, make_image):
    image = make_image("2017_00000001")
    gov_ids = Attribute.objects.get(pk=taxonomy.attribute_ids()["gov_ids"])
    adjudicate(adjudicator, image, gov_ids, 1.0, "a passport")
    adjudicate(adjudicator, image, gov_ids, 0.0, "not a passport")
    rows = list(Adjudication.history.filter(image_id=image.pk).order_by("history_id").values_list("value", "history_type", "history_user_id"))
    assert rows == [(1.0, "+", adjudicator.pk), (0.0, "~", adjudicator.pk)]
    with pytest.raises(ValueError, match="not a valid label"):
        adjudicate(adjudicator, image, gov_ids, 0.3, "")
    assert Adjudication.objects.get(image=image).value == 0.0
