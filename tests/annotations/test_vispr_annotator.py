"""The `vispr` annotator: the mapping file, its page, `vispr_labels --rewrite`, the blind rule, a
consensus set with it, and the agreement study naming it."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotations.models import Annotator, Image, Label, Labeling
from core.models import AuditEvent
from scoring.models import ImageScore, ScoringProfile
from scoring.services.scores import recompute_scores
from tests.support.permission_cases.scoring import label_everything, submit
from tests.support.vispr_release import write_release

pytestmark = pytest.mark.django_db

SPLITS = {"test2017": {"2017_10000001": ["a4_gender", "a9_face_complete"], "2017_10000002": ["a0_safe"],
                       "2017_10000003": ["a1_age_approx", "a43_medicine"], "2017_10000004": ["a4_gender"]}}


@pytest.fixture
def imported(tmp_path):
    root = write_release(tmp_path / "vispr", SPLITS)
    call_command("import_vispr", str(root), stdout=io.StringIO(), stderr=io.StringIO())
    return {i.vispr_id: i for i in Image.objects.all()}


def values(vispr_id):
    return {r.attribute.key: r.value for r in Label.objects.filter(image__vispr_id=vispr_id, annotator__name="vispr").select_related("attribute")}


def replaced_mapping(tmp_path, settings, change):
    data = json.loads(open(settings.CPRT_VISPR_MAPPING_FILE).read())
    change(data["mapping"])
    path = tmp_path / "mapping.json"
    path.write_text(json.dumps(data))
    settings.CPRT_VISPR_MAPPING_FILE = path
    return path


def test_rewrite_after_the_mapping_file_is_replaced(imported, tmp_path, settings):
    def change(m):
        m["gender"] = []  # gender: no label any more
        m["emotion_mental_health"] = ["a43_medicine"]  # now covered

    replaced_mapping(tmp_path, settings, change)
    out = io.StringIO()
    call_command("vispr_labels", "--rewrite", stdout=out)
    assert "Rewrote the vispr labels of 4 image(s)" in out.getvalue() and "4 created" in out.getvalue() and "4 removed" in out.getvalue()
    assert "gender" not in values("2017_10000001") and values("2017_10000003")["emotion_mental_health"] == 1.0
    assert values("2017_10000002")["emotion_mental_health"] == 0.0
    assert AuditEvent.objects.filter(action="vispr_labels.rewrite").count() == 1
    again = io.StringIO()
    call_command("vispr_labels", "--rewrite", "--json", stdout=again)
    assert json.loads(again.getvalue())["created"] == 0 and json.loads(again.getvalue())["removed"] == 0


@pytest.mark.parametrize("content, reason", [
    ("{not json", "not valid JSON"),
    ('{"mapping": {"biometric": ["a9_face_complete"]}}', "unknown CPRT attribute(s) biometric"),
    ('{"mapping": {"gender": "a4_gender"}}', "gender must map to a list"),
    ('[1, 2]', 'expected an object with a "mapping" object'),
])
def test_a_bad_mapping_file_is_refused_and_changes_nothing(imported, tmp_path, settings, content, reason):
    path = tmp_path / "bad.json"
    path.write_text(content)
    settings.CPRT_VISPR_MAPPING_FILE = path
    before = sorted(Label.objects.values_list("id", "value"))
    with pytest.raises(CommandError) as exc:
        call_command("vispr_labels", "--rewrite", stdout=io.StringIO())
    assert reason in str(exc.value)
    assert sorted(Label.objects.values_list("id", "value")) == before
    assert not AuditEvent.objects.filter(action="vispr_labels.rewrite").exists()


def test_mapping_page_for_signed_in_users(imported, client_as, reviewer_a, outsider, client):
    url = reverse("annotations:vispr_mapping")
    assert client.get(url).status_code == 302  # anonymous: to the login page
    assert client_as(outsider).get(url).status_code == 403
    response = client_as(reviewer_a).get(url)
    body = response.content.decode()
    assert response.status_code == 200
    assert "a9_face_complete" in body and "Full face" in body  # description from the imported attributes.tsv
    assert "none: no label" in body  # emotion_mental_health
    assert "a2_weight_approx" in body  # imported, maps to nothing
    assert "a29_ausweis" in body and "not in the imported attributes.tsv" in body
    assert f'href="{url}"' in client_as(reviewer_a).get(reverse("home")).content.decode()  # from the Images page
    assert client_as(reviewer_a).post(url).status_code == 405


def test_blind_rule_hides_vispr_labels_until_the_reviewer_submits(imported, client_as, reviewer_a):
    image = imported["2017_10000001"]
    client = client_as(reviewer_a)
    url = reverse("api:image-detail", kwargs={"image_id": image.pk})
    assert all(row["annotator"] != "vispr" and row["annotator_kind"] != "dataset" for row in client.get(url).json()["labels"])
    own = Annotator.for_user(reviewer_a)
    label_everything([image], own, lambda i, k: 0.0)
    Labeling.objects.create(image=image, annotator=own, status=Labeling.STATUS_SUBMITTED)
    kinds = {row["annotator_kind"] for row in client.get(url).json()["labels"]}
    assert "dataset" in kinds


def test_vispr_in_a_consensus_set_scores_and_abstains_where_nothing_maps(imported, model_annotators, make_image):
    gpt, _ = model_annotators
    images = [imported[k] for k in sorted(imported)]
    label_everything(images, gpt, lambda i, k: 1.0 if k in ("biometrics", "gender", "emotion_mental_health") else 0.0)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, Annotator.objects.get(name="vispr")])
    result = recompute_scores(profile)
    assert result["scored"] == 4
    first = ImageScore.objects.get(profile=profile, image=imported["2017_10000001"])
    # biometrics and gender: both say 1; emotion_mental_health: VISPR abstains, the model's 1 stands.
    assert {k for k, v in first.binary_labels.items() if v} == {"biometrics", "gender", "emotion_mental_health"}
    second = ImageScore.objects.get(profile=profile, image=imported["2017_10000002"])
    assert {k for k, v in second.binary_labels.items() if v} == {"emotion_mental_health"}  # VISPR says 0 on the rest
    # VISPR alone covers no image's emotion_mental_health: no consensus (never a silent 0).
    profile.consensus_annotators.set([Annotator.objects.get(name="vispr")])
    assert recompute_scores(profile) == {"scored": 0, "incomplete": 4}


def test_agreement_page_names_model_vs_vispr_and_human_vs_vispr(imported, model_annotators, client_as, adjudicator, reviewer_a, reviewer_b):
    gpt, _ = model_annotators
    images = [imported[k] for k in sorted(imported)]
    label_everything(images, gpt, lambda i, k: 1.0 if k == "gender" else 0.0)
    for user in (reviewer_a, reviewer_b):
        human = Annotator.for_user(user)
        label_everything(images, human, lambda i, k: 1.0 if k == "gender" and i == 0 else 0.0)
        for image in images:
            submit(image, human)
    client = client_as(adjudicator)
    tables = client.get(reverse("scoring:agreement"), {"format": "json"}).json()["tables"]
    rows = tables["vispr"]["rows"]
    groups = {r["group"] for r in rows}
    assert {"model vs VISPR labels", "human vs VISPR labels", "VISPR labels vs human majority"} <= groups
    gender = next(r for r in rows if r["group"] == "model vs VISPR labels" and r["attribute"] == "gender")
    # VISPR: gender on images 1 and 4; the model: on all four -> 2 of 4 agree.
    assert gender["n"] == 4 and gender["agreement"] == pytest.approx(0.5)
    assert not any(r["attribute"] == "emotion_mental_health" for r in rows)  # no VISPR label there
    assert any(r["group"] == "model vs VISPR labels" for r in tables["summary"]["rows"])
    body = client.get(reverse("scoring:agreement")).content.decode()
    assert "Against VISPR&#x27;s own labels" in body or "Against VISPR's own labels" in body


def test_an_annotate_runs_agreement_includes_vispr(imported, model_annotators):
    from scoring.services.agreement import annotate_run_agreement
    from tests.support.permission_cases.scoring import make_run

    gpt, _ = model_annotators
    images = [imported[k] for k in sorted(imported)]
    label_everything(images, gpt, lambda i, k: 1.0 if k == "gender" else 0.0)
    run = make_run(task="annotate", annotator=gpt, image_ids=[i.pk for i in images])
    comparison = next(c for c in annotate_run_agreement(run)["comparisons"] if c["against"] == "vispr")
    assert comparison["attributes"]["gender"]["n"] == 4 and comparison["attributes"]["gender"]["agreement"] == pytest.approx(0.5)
    assert comparison["attributes"]["emotion_mental_health"]["n"] == 0  # VISPR gives no label there
