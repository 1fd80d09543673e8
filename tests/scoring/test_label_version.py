"""The label fingerprint of the agreement and disagreements pages is an integer version, one read of a tiny
table (annotations.label_version): every path that writes labels, submitted labelings or adjudications
changes it, one test per path, so a path that forgets to bump fails its own test; reading (the pages,
the label loader) changes nothing."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from annotations import label_version, taxonomy
from annotations.models import Annotator, Attribute, Image, Label
from annotations.services import labels as label_api
from annotations.services.editing import save_draft, submit
from annotations.services.labeling_queue import claim_next
from annotations.services.vispr_labels import read_mapping, write_vispr_labels
from inference import execution, launching, prompts
from inference.selection import Selection
from scoring import queries
from scoring.cprt_bench import importing
from scoring.services.adjudication import adjudicate
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.bench_rows import make_rows, write_jsonl
from tests.support.permission_cases.scoring import make_images
from tests.support.vispr_release import write_release

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(model_annotators):
    """Four images with one model's labels, so there is something to read and change."""
    images = make_images(4, prefix="2017_7")
    ids = taxonomy.attribute_ids()
    label_api.write_label_sets(
        [label_api.LabelSet(image.pk, model_annotators[0].pk, {pk: (0.0, "") for pk in ids.values()}) for image in images])
    return images


def changes(write) -> bool:
    """Whether `write()` changes the label fingerprint of every split (committed or not, the version is read
    in the same transaction, as the bump is made in the writer's)."""
    before = [queries.label_fingerprint(split) for split in ("", "test")]
    write()
    return all(queries.label_fingerprint(split) != b for split, b in zip(("", "test"), before))


def test_the_fingerprint_is_an_integer_read_not_an_aggregate_over_labels(world, django_assert_num_queries):
    with django_assert_num_queries(1) as captured:
        queries.label_fingerprint()
    sql = captured.captured_queries[0]["sql"]
    tables = {t for t in (Label._meta.db_table, "annotations_labeling", "annotations_adjudication", "annotations_labelwrites")
              if f'"{t}"' in sql}
    assert tables == {"annotations_labelwrites"}, sql
    assert isinstance(label_version.current(), int) and label_version.current() > 0


def test_reading_changes_nothing(world, client_as, adjudicator, model_annotators):
    staff = client_as(adjudicator)
    before = queries.label_fingerprint()
    for _ in range(2):
        assert staff.get(reverse("scoring:agreement")).status_code == 200
        assert staff.get(reverse("scoring:disagreements")).status_code == 200
    queries.load_labels()
    queries.image_labels(world[0])
    # the same labels written again: nothing changes, so neither does the fingerprint
    ids = taxonomy.attribute_ids()
    label_api.write_labels(world[0].pk, model_annotators[0].pk, {pk: (0.0, "") for pk in ids.values()})
    assert queries.label_fingerprint() == before


def test_a_reviewers_submission(world, reviewer_a, make_image):
    make_image("2017_00000001")
    labeling = claim_next(reviewer_a)
    keys = taxonomy.active().keys
    # a draft is not a counted label: saving one leaves the fingerprint alone
    assert not changes(lambda: save_draft(labeling, reviewer_a, version=labeling.version, values={keys[0]: 1.0}, rationales={}))
    labeling.refresh_from_db()
    assert changes(lambda: submit(labeling, reviewer_a, version=labeling.version, values={k: 1.0 for k in keys}, rationales={}))


def test_a_submission_over_http(world, client_as, reviewer_a, make_image):
    from tests.support.labeling import claim, form_data

    make_image("2017_00000001")
    client = client_as(reviewer_a)
    labeling = claim(reviewer_a)

    def post():
        response = client.post(reverse("annotations:labeling_submit", args=[labeling.pk]), form_data(labeling, "1"))
        assert response.status_code in (200, 302), response.content[:300]

    assert changes(post)


def test_a_label_value_changed_through_the_api(world, model_annotators):
    attribute = next(iter(taxonomy.attribute_ids().values()))
    assert changes(lambda: label_api.write_labels(world[1].pk, model_annotators[0].pk, {attribute: (1.0, "")}))
    assert changes(lambda: label_api.write_labels(world[1].pk, model_annotators[0].pk, {attribute: (1.0, "now a reason")}))


def test_labels_written_earlier_then_submitted(world, reviewer_a, make_image):
    """Only the labeling's status changes (its labels are unchanged): the labels start to count."""
    image = make_image("2017_00000001")
    annotator = Annotator.for_user(reviewer_a)
    values = {pk: (1.0, "") for pk in taxonomy.attribute_ids().values()}
    label_api.write_labels(image.pk, annotator.pk, values)
    assert changes(lambda: label_api.write_labels(image.pk, annotator.pk, values, submit=True))


def test_an_annotate_run(world, openai_server, images, django_capture_on_commit_callbacks):
    spec = launching.LaunchSpec(task="annotate", provider="openai", model_name="gpt-5.1", strategy="", counterfactual_faces=False,
                                prompt_version=prompts.DEFAULT_VERSION["annotate"], selection=Selection(), concurrency=2)
    with django_capture_on_commit_callbacks(execute=False):
        run = launching.launch_run(None, spec)
    assert changes(lambda: execution.run_chunk(run.pk, run.image_ids))


def test_an_adjudication(world, adjudicator):
    gov_ids = Attribute.objects.get(pk=taxonomy.attribute_ids()["gov_ids"])
    assert changes(lambda: adjudicate(adjudicator, world[0], gov_ids, 1.0, "a passport"))
    assert changes(lambda: adjudicate(adjudicator, world[0], gov_ids, 0.0, "not a passport"))


@pytest.mark.parametrize("use_copy", [pytest.param(True, id="COPY path"), pytest.param(False, id="bulk path")])
def test_the_cprt_bench_import(world, tmp_path, monkeypatch, use_copy):
    if use_copy and connection.vendor != "postgresql":
        pytest.skip("the COPY path runs on PostgreSQL only")
    monkeypatch.setattr(importing, "USE_COPY", use_copy)
    rows = make_rows(12)
    path = write_jsonl(tmp_path / "bench.jsonl", rows)
    assert changes(lambda: call_command("import_cprt", path, "--split", "test", stdout=io.StringIO()))
    rows[0]["binary_labels"]["level4"] = {k: 1 - v for k, v in rows[0]["binary_labels"]["level4"].items()}
    path = write_jsonl(tmp_path / "bench.jsonl", rows)
    assert changes(lambda: call_command("import_cprt", path, "--split", "test", stdout=io.StringIO()))


def test_the_vispr_release_import_and_the_label_rewrite(world, tmp_path, settings):
    root = write_release(tmp_path / "vispr", {"test2017": {"2017_10000001": ["a4_gender"], "2017_10000002": ["a0_safe"]}})
    assert changes(lambda: call_command("import_vispr", str(root), stdout=io.StringIO(), stderr=io.StringIO()))
    image = Image.objects.get(vispr_id="2017_10000002")
    assert changes(lambda: write_vispr_labels([(image.pk, ["a4_gender"])], read_mapping(), notify=False))
    # A mapping that no longer covers gender: the rewrite only removes labels, and that is a change too.
    data = json.loads(open(settings.CPRT_VISPR_MAPPING_FILE).read())
    data["mapping"]["gender"] = []
    (tmp_path / "mapping.json").write_text(json.dumps(data))
    settings.CPRT_VISPR_MAPPING_FILE = tmp_path / "mapping.json"
    out = io.StringIO()
    assert changes(lambda: call_command("vispr_labels", "--rewrite", stdout=out))
    assert "0 created" in out.getvalue() and " 0 removed" not in out.getvalue(), out.getvalue()


def test_admin_edits(world, client_as, admin_user, model_annotators):
    admin = client_as(admin_user)
    image = world[2]

    def change_split():
        url = reverse("admin:annotations_image_change", args=[image.pk])
        form = admin.get(url).context["adminform"].form
        data = {name: ("" if form[name].value() is None else form[name].value()) for name in form.fields}
        data = {k: v for k, v in data.items() if v is not False and k != "file"}
        data["split"] = "train"
        response = admin.post(url, data)
        assert response.status_code == 302, response.context["adminform"].form.errors
        assert Image.objects.get(pk=image.pk).split == "train"

    assert changes(change_split)

    def rename_annotator():
        annotator = model_annotators[0]
        url = reverse("admin:annotations_annotator_change", args=[annotator.pk])
        form = admin.get(url).context["adminform"].form
        data = {name: ("" if form[name].value() is None else form[name].value()) for name in form.fields}
        data = {k: v for k, v in data.items() if v is not False}
        data["name"] = "renamed model"
        response = admin.post(url, data)
        assert response.status_code == 302, response.context["adminform"].form.errors
        assert Annotator.objects.get(pk=annotator.pk).name == "renamed model"

    assert changes(rename_annotator)



def test_a_deletion_cascading_to_labels(world, model_annotators, reviewer_a):
    """The admin refuses to delete labelled images (labels are read-only there); a deletion elsewhere (the
    shell, a data fix) takes the labels with it and must count as a change."""
    assert changes(lambda: world[3].delete())
    assert changes(lambda: model_annotators[0].delete())
