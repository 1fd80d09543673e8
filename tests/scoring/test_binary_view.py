"""The binary private/public view (issue 26): its metrics against hand-computed values and sklearn, a
local classifier run over images end to end (registered, run, scored), shown beside judge runs on the
local-classifier benchmark's page (benchmarks/classifiers/, issue 35), never on the severity leaderboard;
CPRT's own binary view lists the judge runs only, and the old addresses answer 301."""
from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from sklearn.metrics import roc_auc_score

from inference import launching
from inference.execution import run_chunk
from inference.models import RunResult
from inference.selection import Selection
from scoring import binary
from tests.support.classifiers import expected_p_private, tiny_classifier
from tests.support.permission_cases.scoring import add_results, make_run

pytestmark = pytest.mark.django_db


# --- pure ---------------------------------------------------------------------------------------

def test_decision_metrics_and_auc_match_hand_computed_values():
    truth = np.array([1, 0, 1, 1, 0, 0], dtype=bool)
    score = np.array([0.9, 0.8, 0.7, 0.4, 0.3, 0.1])
    guess = score >= 0.5  # tp 2 (0.9, 0.7), fp 1 (0.8), fn 1 (0.4), tn 2
    report = binary.evaluate(truth, guess, score, n_boot=200)
    m = {k: v["value"] for k, v in report["metrics"].items()}
    assert report["confusion"] == {"tp": 2, "fp": 1, "fn": 1, "tn": 2}
    assert m["precision_private"] == pytest.approx(2 / 3) and m["recall_private"] == pytest.approx(2 / 3)
    assert m["f1_private"] == pytest.approx(2 / 3) and m["balanced_accuracy"] == pytest.approx(2 / 3)
    assert m["accuracy"] == pytest.approx(4 / 6)
    # AUC by hand: positives 0.9, 0.7, 0.4 against negatives 0.8, 0.3, 0.1: 3 + 2 + 2 = 7 of 9 pairs.
    assert m["auc"] == pytest.approx(7 / 9)
    for name, entry in report["metrics"].items():
        assert entry["lo"] <= entry["value"] <= entry["hi"], name
        assert 0 < entry["defined"] <= 200


def test_auc_counts_ties_as_half_like_sklearn_and_is_undefined_with_one_class():
    rng = np.random.default_rng(3)
    truth = rng.random(300) < 0.4
    score = np.round(rng.random(300), 1)  # many ties
    assert binary.auc(truth, score) == pytest.approx(roc_auc_score(truth, score))
    assert binary.auc(np.array([1, 0], dtype=bool), np.array([0.5, 0.5])) == pytest.approx(0.5)
    assert np.isnan(binary.auc(np.ones(4, dtype=bool), np.arange(4.0)))
    empty = binary.evaluate(np.array([], dtype=bool), np.array([], dtype=bool), np.array([]))
    assert empty["n"] == 0 and empty["metrics"]["auc"]["value"] is None and empty["metrics"]["accuracy"]["value"] is None


# --- a classifier run, end to end ------------------------------------------------------------------

# Colour -> published level. The tiny model's P(private) rises with red and falls with blue, so the
# order is R250 > R249 > R248 > 0.5 > B248 > B249 > B250 (checked below).
IMAGES = [((250, 10, 10), 1), ((249, 10, 10), 4), ((248, 10, 10), 2), ((10, 10, 248), 2), ((10, 10, 249), 4), ((10, 10, 250), 4)]
# By hand. Threshold 2 (levels 1-2 private): truth T F T T F F, guess T T T F F F: tp 2, fp 1, fn 1, tn 2;
# AUC: positives rank 6, 4, 3 of 6 -> (13 - 6) / 9. Threshold 1: truth T F F F F F: tp 1, fp 2, tn 3.
EXPECTED = {
    2: {"precision_private": 2 / 3, "recall_private": 2 / 3, "f1_private": 2 / 3, "balanced_accuracy": 2 / 3, "auc": 7 / 9, "accuracy": 4 / 6},
    1: {"precision_private": 1 / 3, "recall_private": 1.0, "f1_private": 0.5, "balanced_accuracy": (1 + 3 / 5) / 2, "auc": 1.0, "accuracy": 4 / 6},
}


@pytest.fixture
def classifier_run(settings, tmp_path, make_image, admin_user):
    settings.DATA_DIR = tmp_path
    call_command("register_classifier", "tiny-s2p", str(tiny_classifier(tmp_path / "tiny.onnx")), "--classes", "private,public", stdout=StringIO())
    images = []
    for k, (colour, level) in enumerate(IMAGES):
        image = make_image(f"2017_2600{k:04d}", color=colour)
        image.published_level, image.published_score = level, {1: 0.9, 2: 0.6, 4: 0.05}[level]
        image.save()
        images.append(image)
    p = []
    for image in images:
        with image.file.open("rb") as fh:
            p.append(expected_p_private(fh.read()))
    assert p[0] > p[1] > p[2] > 0.5 > p[3] > p[4] > p[5]
    run = launching.launch_run(admin_user, launching.LaunchSpec("binary", "onnx", "tiny-s2p", "", False, "binary-v1", Selection(), 3), send=False)
    run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.status == run.STATUS_FINISHED and RunResult.objects.filter(run=run, outcome="ok").count() == 6
    return run, images


@pytest.mark.parametrize("threshold", [2, 1])
def test_a_classifier_runs_metrics_page_shows_the_hand_computed_values(classifier_run, admin_user, client_as, threshold):
    run, _ = classifier_run
    client = client_as(admin_user)
    data = client.get(f"/benchmarks/local-classifiers/runs/{run.pk}/?format=json&threshold={threshold}").json()
    rows = {row["metric"]: row["estimate"] for row in data["tables"]["binary"]["rows"]}
    for name, value in EXPECTED[threshold].items():
        assert rows[binary.LABELS[name]]["value"] == pytest.approx(value), name
    page = client.get(f"/scoring/runs/{run.pk}/", follow=True)  # the run page's "Metrics of this run" link
    assert page.redirect_chain[-1][0].endswith(f"/benchmarks/local-classifiers/runs/{run.pk}/")
    assert "P(private) per ground-truth level" in page.content.decode()


def test_the_binary_view_shows_classifiers_beside_judge_runs_and_the_leaderboard_ranks_neither_as_judge(classifier_run, admin_user, client_as):
    run, images = classifier_run
    judge = make_run(model="judge-x")
    add_results(judge, [(image, "ok", score) for image, score in zip(images, (0.9, 0.1, 0.7, 0.2, 0.6, 0.05))])
    judge.save()
    client = client_as(admin_user)
    data = client.get("/benchmarks/local-classifiers/?format=json&threshold=2").json()
    classifiers, judges = data["tables"]["classifiers"]["rows"], data["tables"]["judges"]["rows"]
    assert [r["model"] for r in classifiers] == ["onnx/tiny-s2p"] and [r["model"] for r in judges] == ["openai/judge-x · zero_shot"]
    assert classifiers[0]["auc"]["value"] == pytest.approx(7 / 9)
    # The judge's decisions are its judge page's binary table, point for point.
    judge_page = client.get(f"/scoring/runs/{judge.pk}/?format=json&threshold=2").json()
    judge_table = {row["metric"]: row["estimate"] for row in judge_page["tables"]["binary"]["rows"]}
    for name in ("precision_private", "recall_private", "f1_private", "balanced_accuracy", "accuracy"):
        assert judges[0][name]["value"] == pytest.approx(judge_table[binary.LABELS[name]]["value"]), name
    cprt = client.get("/scoring/binary/?format=json&threshold=2").json()["tables"]  # CPRT's own view: the judge runs
    assert list(cprt) == ["judges"] and cprt["judges"]["rows"][0]["auc"] == judges[0]["auc"]
    leaderboard = client.get("/scoring/?format=json").content.decode()
    assert "tiny-s2p" not in leaderboard and "judge-x" in leaderboard


def test_bad_thresholds_are_refused_with_a_message(classifier_run, admin_user, client_as):
    run, _ = classifier_run
    client = client_as(admin_user)
    for url in ("/scoring/binary/?threshold=4", "/benchmarks/local-classifiers/?threshold=4",
                f"/benchmarks/local-classifiers/runs/{run.pk}/?threshold=x"):
        response = client.get(url)
        assert response.status_code == 400 and "threshold must be" in response.content.decode()


def test_the_old_addresses_answer_301_to_the_benchmarks_pages(classifier_run, admin_user, client_as):
    run, _ = classifier_run
    client = client_as(admin_user)
    moved = {f"/scoring/runs/{run.pk}/binary/?threshold=1": f"/benchmarks/local-classifiers/runs/{run.pk}/?threshold=1",
             "/runs/classifiers/": "/benchmarks/local-classifiers/classifiers/"}
    for old, new in moved.items():
        response = client.get(old)
        assert response.status_code == 301 and response["Location"] == new, old
        assert client.get(new).status_code == 200
