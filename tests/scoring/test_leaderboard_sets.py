"""The leaderboard ranks on a stated comparison set (issue 27): sample and filtered runs are listed with
their coverage of it, not ranked; a dataset version or split fixes the set; ablation runs have their own
section; runs over images an SFT export trained on carry a warning; intervals and rank stability are
checked against scipy."""
from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats

from annotations.datasets.models import DatasetVersion
from scoring import metrics
from scoring.models import ExportJob, ScoringProfile
from tests.support.permission_cases.scoring import add_results, make_images, make_run


@pytest.fixture
def staff(client_as, adjudicator):
    return client_as(adjudicator)


def noisy_run(images, model, sd, seed, **extra):
    rng = np.random.default_rng(seed)
    run = make_run(strategy="taxonomy", model=model, **extra)
    add_results(run, [(i, "ok", float(np.clip(i.published_score + rng.normal(0, sd), 0, 1))) for i in images])
    return run


def board(staff, **params):
    response = staff.get(reverse("scoring:leaderboard"), {"format": "json", **params})
    assert response.status_code == 200, response.content[:500]
    return response.json()


def test_sample_and_filtered_runs_are_listed_not_ranked_and_do_not_shrink_the_set(staff):
    images = make_images(30, prefix="2017_61")
    full = [noisy_run(images, f"full-{k}", 0.1 + 0.05 * k, k) for k in range(3)]
    sample = noisy_run(images[:10], "sample", 0.0, 9)
    filtered = noisy_run(images[3:8], "filtered", 0.0, 10)
    data = board(staff)
    ranked = data["tables"]["leaderboard"]["rows"]
    assert sorted(r["run"] for r in ranked) == sorted(f"#{r.pk}" for r in full)
    assert data["meta"]["comparison_set_size"] == 30 and data["meta"]["common_set_size"] == 30
    listed = {r["run"]: r for r in data["tables"]["not_ranked"]["rows"]}
    assert listed[f"#{sample.pk}"]["coverage"] == pytest.approx(10 / 30) and listed[f"#{sample.pk}"]["answered"] == 10
    assert listed[f"#{filtered.pk}"]["coverage"] == pytest.approx(5 / 30)
    assert listed[f"#{sample.pk}"]["own_coverage"] == pytest.approx(1.0)
    for row in ranked:  # intervals always shown
        assert row["pearson"]["lo"] is not None and row["pearson"]["lo"] <= row["pearson"]["value"] <= row["pearson"]["hi"]
    page = staff.get(reverse("scoring:leaderboard")).content.decode()
    assert "Comparison set:" in page and "the 30 ground-truth images of the test split" in page and 'class="ci"' in page


def test_a_dataset_version_and_split_fix_the_comparison_set(staff):
    images = make_images(24, prefix="2017_62")
    train = make_images(12, prefix="2017_63", split="train")  # the minimum common set is 10 images
    everything = noisy_run(images + train, "everything", 0.1, 1)
    subset = noisy_run(images[:12], "subset", 0.1, 2)
    version = DatasetVersion.objects.create(name="first-twelve")
    version.members.set(images[:12] + train[:3])
    data = board(staff, version=version.pk, split="test")
    assert data["meta"]["comparison_set_size"] == 12 and data["meta"]["dataset_version"] == "first-twelve"
    assert sorted(r["run"] for r in data["tables"]["leaderboard"]["rows"]) == sorted([f"#{everything.pk}", f"#{subset.pk}"])
    data = board(staff, version=version.pk)  # both splits of the version: 15 images, the subset run covers 12
    assert data["meta"]["comparison_set_size"] == 15
    assert [r["run"] for r in data["tables"]["not_ranked"]["rows"]] == [f"#{subset.pk}"]
    assert data["tables"]["not_ranked"]["rows"][0]["coverage"] == pytest.approx(12 / 15)
    data = board(staff, split="train")
    assert data["meta"]["comparison_set_size"] == 12
    assert [r["run"] for r in data["tables"]["leaderboard"]["rows"]] == [f"#{everything.pk}"]


@pytest.mark.parametrize("params, message", [
    ({"version": "abc"}, "version must be the id of a dataset version."),
    ({"version": "999999"}, "version must be the id of a dataset version."),
    ({"split": "holdout"}, "Unknown split holdout."),
])
def test_bad_scope_is_refused_with_a_message(staff, params, message):
    from scoring.models import ComputedMetrics

    response = staff.get(reverse("scoring:leaderboard"), params)
    assert response.status_code == 400 and message in response.content.decode()
    assert not ComputedMetrics.objects.exists()


def test_ablation_runs_have_their_own_section_and_are_never_ranked(staff):
    images = make_images(20, prefix="2017_64")
    real = noisy_run(images, "real", 0.1, 1)
    prompt_cf = noisy_run(images[:5], "real", 0.1, 2, cf=True)
    pixel_cf = noisy_run(images, "real", 0.05, 3, face_variant={"method": "blur"})
    data = board(staff)
    assert [r["run"] for r in data["tables"]["leaderboard"]["rows"]] == [f"#{real.pk}"]
    assert data["tables"]["not_ranked"]["rows"] == []  # the 5-image counterfactual run does not count against anything
    assert data["meta"]["common_set_size"] == 20
    ablations = {r["run"]: r for r in data["tables"]["ablations"]["rows"]}
    assert set(ablations) == {f"#{prompt_cf.pk}", f"#{pixel_cf.pk}"}
    assert ablations[f"#{pixel_cf.pk}"]["pearson"]["lo"] is not None
    page = staff.get(reverse("scoring:leaderboard")).content.decode()
    assert "Ablation runs (counterfactual faces, pixel-anonymized faces): never ranked" in page


def test_runs_over_images_an_sft_export_trained_on_are_flagged(staff, admin_user):
    test_images = make_images(10, prefix="2017_65")
    train_images = make_images(10, prefix="2017_66", split="train")
    clean = noisy_run(test_images, "clean", 0.1, 1)
    leaky = noisy_run(test_images + train_images[:4], "leaky", 0.1, 2)
    ExportJob.objects.create(kind=ExportJob.KIND_SFT, options={"split": "train"}, splits=["train", "test"],
                             profile=ScoringProfile.active(), status=ExportJob.STATUS_FINISHED)
    data = board(staff, floor="0")
    rows = {r["run"]: r for r in data["tables"]["leaderboard"]["rows"] + data["tables"]["not_ranked"]["rows"]}
    assert rows[f"#{clean.pk}"]["warning"] in ("", None)
    assert "4 of its images are in split train" in rows[f"#{leaky.pk}"]["warning"]
    page = staff.get(reverse("scoring:leaderboard"), {"floor": "0"}).content.decode()
    assert 'id="training-overlap-warning"' in page and "trained-on images" in page


def test_intervals_and_rank_stability_match_scipy(staff):
    images = make_images(40, prefix="2017_67")
    runs = [noisy_run(images, f"m{k}", sd, k) for k, sd in enumerate((0.05, 0.12, 0.3))]
    data = board(staff, sort="pearson")
    rows = {r["run"]: r for r in data["tables"]["leaderboard"]["rows"]}
    # Independent: scipy's Pearson r on each of the same 500 seeded resamples of the common images (image-id order).
    n = len(images)
    idx = np.random.default_rng(metrics.SEED).integers(0, n, size=(metrics.N_BOOT, n), dtype=np.int32)
    gt = np.array([i.published_score for i in images])
    from inference.models import RunResult

    samples = {}
    for run in runs:
        pred = np.array(list(RunResult.objects.filter(run=run).order_by("image_id").values_list("score", flat=True)))
        r = np.array([stats.pearsonr(gt[ix], pred[ix])[0] for ix in idx])
        samples[run.pk] = r
        row = rows[f"#{run.pk}"]
        assert row["pearson"]["value"] == pytest.approx(stats.pearsonr(gt, pred)[0])
        assert row["pearson"]["lo"] == pytest.approx(np.percentile(r, 2.5), abs=1e-9)
        assert row["pearson"]["hi"] == pytest.approx(np.percentile(r, 97.5), abs=1e-9)
    table = np.stack([samples[r.pk] for r in runs])
    firsts = np.argmax(table, axis=0)
    for k, run in enumerate(runs):
        assert rows[f"#{run.pk}"]["p_first"] == pytest.approx((firsts == k).mean())
    assert sum(r["p_first"] for r in rows.values()) == pytest.approx(1.0)


def test_an_export_sft_command_is_a_training_export_too(staff, tmp_path):
    from core.audit import audit

    images = make_images(12, prefix="2017_68", split="train")  # the minimum common set is 10 images
    run = noisy_run(images, "on-train", 0.1, 1)
    audit(None, "export_sft", ScoringProfile.active(), out_dir=str(tmp_path / "sft"), training_split="train")
    data = board(staff, split="train")
    row = data["tables"]["leaderboard"]["rows"][0]
    assert row["run"] == f"#{run.pk}" and f"SFT export to {tmp_path / 'sft'}" in row["warning"]


# --- issue 34: a filter never shrinks the set; too small a common set or an undefined sort metric ranks nothing

def test_a_small_run_under_a_filter_does_not_shrink_the_comparison_set(staff):
    images = make_images(30, prefix="2017_71")
    full = noisy_run(images, "full", 0.1, 1)
    full.strategy = "zero_shot"
    full.save(update_fields=["strategy"])
    tiny = make_run(strategy="zero_shot", model="three-images")
    add_results(tiny, [(i, "ok", i.published_score) for i in images[:3]])
    noisy_run(images, "other-strategy", 0.2, 2)  # taxonomy: filtered out
    data = board(staff, strategy="zero_shot")
    assert data["meta"]["comparison_set_size"] == 30 and data["meta"]["common_set_size"] == 30
    assert "the 30 ground-truth images of the test split" in data["meta"]["comparison_set"]
    assert [r["run"] for r in data["tables"]["leaderboard"]["rows"]] == [f"#{full.pk}"]
    listed = data["tables"]["not_ranked"]["rows"]
    assert [r["run"] for r in listed] == [f"#{tiny.pk}"] and listed[0]["coverage"] == pytest.approx(3 / 30)
    assert "covers less than 95%" in listed[0]["reason"]


def test_floor_zero_with_a_one_image_common_set_ranks_nothing(staff):
    images = make_images(30, prefix="2017_72")
    runs = [noisy_run(images, f"full-{k}", 0.1, k) for k in range(4)]
    one = make_run(strategy="taxonomy", model="one-image")
    add_results(one, [(images[0], "ok", 0.5)] + [(i, "refused", None) for i in images[1:]])
    data = board(staff, floor="0")
    assert data["tables"]["leaderboard"]["rows"] == []
    listed = {r["run"]: r for r in data["tables"]["not_ranked"]["rows"]}
    assert sorted(listed) == sorted(f"#{r.pk}" for r in runs + [one])
    assert data["meta"]["common_set_size"] == 1
    assert all("fewer than the minimum of 10" in r["reason"] for r in listed.values())
    page = staff.get(reverse("scoring:leaderboard"), {"floor": "0"}).content.decode()
    assert "fewer than the minimum of 10: nothing is ranked" in page


def test_a_run_whose_sort_metric_is_undefined_is_listed_not_ranked(staff):
    images = make_images(30, prefix="2017_73")
    good = [noisy_run(images, f"good-{k}", 0.1, k) for k in range(2)]
    constant = make_run(strategy="taxonomy", model="constant")
    add_results(constant, [(i, "ok", 0.5) for i in images])
    data = board(staff)  # sorted by Pearson: undefined for constant predictions
    assert sorted(r["run"] for r in data["tables"]["leaderboard"]["rows"]) == sorted(f"#{r.pk}" for r in good)
    listed = data["tables"]["not_ranked"]["rows"]
    assert [r["run"] for r in listed] == [f"#{constant.pk}"] and "Pearson r is undefined" in listed[0]["reason"]
    by_mae = board(staff, sort="mae")  # MAE is defined: all three ranked
    assert len(by_mae["tables"]["leaderboard"]["rows"]) == 3


def test_every_sort_metric_undefined_ranks_nothing(staff):
    images = make_images(30, prefix="2017_74")
    for k in range(3):
        run = make_run(strategy="taxonomy", model=f"constant-{k}")
        add_results(run, [(i, "ok", 0.25 * k) for i in images])
    data = board(staff, floor="0")
    assert data["tables"]["leaderboard"]["rows"] == [] and len(data["tables"]["not_ranked"]["rows"]) == 3


def test_without_a_scope_the_set_is_the_test_split_whatever_the_runs_cover(staff):
    test_images = make_images(20, prefix="2017_75")
    train_images = make_images(12, prefix="2017_76", split="train")
    on_test = [noisy_run(test_images, f"test-{k}", 0.1, k) for k in range(2)]
    on_train = noisy_run(train_images, "train-only", 0.1, 5)
    data = board(staff)
    assert data["meta"]["comparison_set_size"] == 20
    assert sorted(r["run"] for r in data["tables"]["leaderboard"]["rows"]) == sorted(f"#{r.pk}" for r in on_test)
    assert [r["run"] for r in data["tables"]["not_ranked"]["rows"]] == [f"#{on_train.pk}"]
    assert data["tables"]["not_ranked"]["rows"][0]["coverage"] == 0
    data = board(staff, split="train")
    assert [r["run"] for r in data["tables"]["leaderboard"]["rows"]] == [f"#{on_train.pk}"]
    everything = board(staff, split="all")  # every split: 32 images, which no run covers at the floor
    assert everything["meta"]["comparison_set_size"] == 32 and everything["tables"]["leaderboard"]["rows"] == []
    assert "every split" in everything["meta"]["comparison_set"]
