"""One adjudication updates only the figures it changes (issue 37), and every figure kept equals a full
recomputation (the cache emptied).

- An adjudication of an image whose published ground truth wins changes no run's figures: every run's
  metrics stay current (no evaluate()), equal to a recomputation.
- An adjudication that moves a consensus-scored image's score makes every run's metrics stale, and the
  recomputed figures equal a recomputation from scratch.
- The agreement study reads no adjudication: it stays current; the disagreement queue reads them and
  follows them (the adjudication writes its image's row).
On the code before issue 37 every adjudication rescored the image (its `computed_at` moved) and bumped the
one label version, so every run's metrics and the agreement study were recomputed.
"""
from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from annotations import taxonomy
from scoring import agreement as agreement_lib
from scoring import metrics
from scoring.models import ComputedMetrics, ImageScore, ScoringProfile
from scoring.services.adjudication import active_attributes, adjudicate
from scoring.services.agreement import agreement_study
from scoring.services.disagreements import disagreement_queue
from scoring.services.run_metrics import run_metrics
from scoring.services.scores import recompute_scores
from tests.support.permission_cases.scoring import add_results, label_everything, make_images, make_run


@pytest.fixture
def world(model_annotators):
    gpt, gem = model_annotators
    published = make_images(24, prefix="2017_61")
    consensus = make_images(24, prefix="2017_62", with_published=False)
    images = published + consensus
    keys = list(taxonomy.active().keys)
    label_everything(images, gpt, lambda i, k: float((i + keys.index(k)) % 7 == 0))
    label_everything(images, gem, lambda i, k: float((i + keys.index(k)) % 5 == 0) / 2)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt])
    recompute_scores(profile)
    rng = np.random.default_rng(5)
    runs = []
    for r in range(3):
        run = make_run(strategy="taxonomy", model=f"incremental-{r}")
        add_results(run, [(image, "ok", float(rng.random())) for image in images])
        runs.append(run)
    return {"published": published, "consensus": consensus, "runs": runs, "profile": profile}


def _all_figures(world) -> dict:
    return {"runs": run_metrics(world["runs"], world["profile"]), "agreement": agreement_study()}


def _from_scratch(world) -> dict:
    ComputedMetrics.objects.all().delete()
    return _all_figures(world)


def _decide(adjudicator, image, profile, value=1.0):
    attributes = active_attributes()
    key = next(k for k in taxonomy.active().keys if k in attributes)
    before = ImageScore.objects.get(image=image, profile=profile)
    adjudicate(adjudicator, image, attributes[key], value, "seen")
    after = ImageScore.objects.get(image=image, profile=profile)
    return before, after


def test_an_adjudication_under_a_published_score_keeps_every_runs_figures_current(world, adjudicator):
    before = _all_figures(world)
    image, profile = world["published"][5], world["profile"]
    old, new = _decide(adjudicator, image, profile)
    assert (old.score, old.level) != (new.score, new.level)  # its consensus moved, but the published value wins
    with mock.patch.object(metrics, "evaluate", wraps=metrics.evaluate) as evaluate, \
            mock.patch.object(agreement_lib, "agreement_report", wraps=agreement_lib.agreement_report) as report:
        kept = _all_figures(world)
        assert evaluate.call_count == 0 and report.call_count == 0  # nothing recomputed
    assert kept == before
    assert kept == _from_scratch(world)  # and what was kept is what a full recomputation gives


def test_an_adjudication_that_moves_a_consensus_score_recomputes_the_runs_to_the_full_figures(world, adjudicator):
    before = _all_figures(world)
    image, profile = world["consensus"][3], world["profile"]
    old, new = _decide(adjudicator, image, profile)
    assert (old.score, old.level) != (new.score, new.level)
    with mock.patch.object(metrics, "evaluate", wraps=metrics.evaluate) as evaluate, \
            mock.patch.object(agreement_lib, "agreement_report", wraps=agreement_lib.agreement_report) as report:
        updated = _all_figures(world)
        assert evaluate.call_count == len(world["runs"])  # every run covers the image: every run's figures change
        assert report.call_count == 0  # the agreement study reads no adjudication
    assert updated["runs"] != before["runs"] and updated["agreement"] == before["agreement"]
    assert updated == _from_scratch(world)


def test_an_adjudication_that_leaves_the_consensus_where_it_was_changes_no_runs_figures(world, adjudicator):
    image, profile = world["consensus"][3], world["profile"]
    _decide(adjudicator, image, profile, 1.0)
    before = _all_figures(world)
    stamp = ImageScore.objects.get(image=image, profile=profile).computed_at
    _decide(adjudicator, image, profile, 1.0)  # the same decision again (a new note): the image is rescored to the same values
    assert ImageScore.objects.get(image=image, profile=profile).computed_at >= stamp
    with mock.patch.object(metrics, "evaluate", wraps=metrics.evaluate) as evaluate:
        assert _all_figures(world) == before
        assert evaluate.call_count == 0


def test_the_disagreement_queue_reads_adjudications_and_follows_them(world, adjudicator):
    profile = world["profile"]
    queue = disagreement_queue(profile)
    _decide(adjudicator, world["consensus"][3], profile)
    with mock.patch("scoring.disputes.dispute_impact", wraps=__import__("scoring.disputes", fromlist=["x"]).dispute_impact) as impact:
        followed = disagreement_queue(profile)
        assert impact.call_count == 0  # the adjudication wrote its image's row (tests/scoring/test_queue_follows_adjudication.py)
    assert queue["key"] == followed["key"]


def test_labels_and_results_read_a_chunk_at_a_time_are_the_same_arrays(world, monkeypatch):
    """queries._columns fills numpy columns a chunk at a time (bounded memory): any chunk size, the same arrays."""
    from scoring import queries

    whole_labels, whole_results = queries.load_labels(), queries.judge_results([r.pk for r in world["runs"]])
    monkeypatch.setattr(queries, "ROW_CHUNK", 7)  # chunk boundaries everywhere, some rows alone in a chunk
    labels, results = queries.load_labels(), queries.judge_results([r.pk for r in world["runs"]])
    np.testing.assert_array_equal(labels.values, whole_labels.values)
    assert (labels.image_ids, labels.annotator_ids, labels.keys) == (whole_labels.image_ids, whole_labels.annotator_ids, whole_labels.keys)
    for run_id, arrays in whole_results.items():
        for name, column in arrays.items():
            np.testing.assert_array_equal(results[run_id][name], column)
    assert whole_labels.values.shape == (2, 48, len(taxonomy.active().keys)) and np.isfinite(whole_labels.values).all()


def test_the_agreement_studys_draws_made_block_by_block_give_the_same_report(db, monkeypatch):
    """resample.LazyDraw (issue 37: the draw never held whole) gives the very numbers of the whole draw."""
    from scoring import agreement_ci, resample
    from scoring.agreement import LabelSet, agreement_report

    tax = taxonomy.active()
    keys = list(tax.keys)
    rng = np.random.default_rng(11)
    values = rng.choice([0.0, 0.5, 1.0], size=(4, 301, len(keys)), p=[0.6, 0.15, 0.25])
    values[1, rng.random(301) < 0.2] = np.nan
    data = LabelSet(values=values, names=["h1", "h2", "m1", "m2"], kinds=["human", "human", "model", "model"], keys=keys,
                    attr_levels=[tax.level_of[k] for k in keys], image_ids=list(range(301)), annotator_ids=[1, 2, 3, 4])
    lazy = agreement_report(data)
    from types import SimpleNamespace

    from scoring import agreement as agreement_module

    whole = SimpleNamespace(LazyDraw=lambda n, b, seed: resample.draw(n, b, seed))  # the whole array, as before issue 37
    monkeypatch.setattr(agreement_module, "resample", whole)
    assert agreement_report(data) == lazy
    drawn = resample.draw(1001, 37, 3)
    assert all((block == drawn[s:s + 5]).all() for s, block in resample.LazyDraw(1001, 37, 3).blocks(5))
    assert sum(block.shape[0] for _, block in resample.LazyDraw(1001, 37, 3).blocks(5)) == 37
    assert agreement_ci.CHUNK < resample.LazyDraw(1001, 500, 3).resamples


def test_a_runs_metrics_from_a_draw_made_chunk_by_chunk_are_the_whole_draws(monkeypatch):
    """metrics.evaluate reads its draw a chunk at a time (issue 37: a resample chunk's indices held, not the
    (resamples, n) array): every figure of the report is the one the whole draw gives, over chunk boundaries
    that do and do not divide the resamples, with continuous and with rounded scores."""
    from types import SimpleNamespace

    from scoring import engine, metrics, resample

    rng = np.random.default_rng(5)
    for n, decimals in ((3, 2), (257, None), (1200, 2)):
        gt = rng.random(n)
        level = np.digitize(gt, [0.25, 0.5, 0.75]) + 1
        pred = np.clip(gt + rng.normal(0, 0.2, n), 0, 1)
        pred = pred if decimals is None else pred.round(decimals)
        outcome = np.array(["ok"] * n, dtype=object)
        for chunk, resamples in ((50, 120), (7, 21)):
            monkeypatch.setattr(resample, "RESAMPLE_CHUNK", chunk)
            monkeypatch.setattr(metrics, "resample", resample)
            draw = resample.draw
            monkeypatch.setattr(resample, "draw", None)  # the whole draw is never made
            lazy = metrics.evaluate(gt, level, pred, outcome, engine.PROVISIONAL, n_boot=resamples)
            monkeypatch.setattr(resample, "draw", draw)
            whole = SimpleNamespace(**{k: getattr(resample, k) for k in dir(resample) if not k.startswith("__")})
            whole.LazyDraw = lambda n, b, seed: resample.draw(n, b, seed)  # the whole array, as before
            monkeypatch.setattr(metrics, "resample", whole)
            assert metrics.evaluate(gt, level, pred, outcome, engine.PROVISIONAL, n_boot=resamples) == lazy
            assert lazy["metrics"]["mae"]["defined"] == resamples and lazy["metrics"]["mae"]["lo"] is not None


def test_a_paired_comparison_from_a_draw_made_chunk_by_chunk_is_the_whole_draws(monkeypatch):
    """paired.paired_comparison reads its one draw a chunk at a time, once for each run (issue 37: never the
    (1,000, n) array): both runs still see the same resamples, and every difference, interval and p-value is the
    one the whole draw gives."""
    from types import SimpleNamespace

    from scoring import engine, paired, resample

    rng = np.random.default_rng(8)
    n = 700
    gt = rng.random(n)
    level = np.digitize(gt, [0.25, 0.5, 0.75]) + 1
    pred_a, pred_b = np.clip(gt + rng.normal(0, 0.2, n), 0, 1), np.clip(gt + rng.normal(0, 0.3, n), 0, 1).round(2)
    monkeypatch.setattr(resample, "RESAMPLE_CHUNK", 7)
    draw = resample.draw
    monkeypatch.setattr(resample, "draw", None)  # the whole draw is never made
    lazy = paired.paired_comparison(gt, level, pred_a, pred_b, engine.PROVISIONAL, n_boot=101)
    monkeypatch.setattr(resample, "draw", draw)
    whole = SimpleNamespace(**{k: getattr(resample, k) for k in dir(resample) if not k.startswith("__")})
    whole.LazyDraw = lambda n, b, seed: resample.draw(n, b, seed)  # the whole array, as before
    monkeypatch.setattr(paired, "resample", whole)
    assert paired.paired_comparison(gt, level, pred_a, pred_b, engine.PROVISIONAL, n_boot=101) == lazy
    mae = next(row for row in lazy["rows"] if row["metric"] == "mae")
    assert mae["defined"] == 101 and mae["lo"] < mae["difference"] < mae["hi"]


def test_the_ground_truth_read_once_per_fingerprint_and_never_kept_across_a_change(world):
    """queries.ground_truth(profile, fingerprint) (issue 37): the refresh jobs of one change read the ground truth
    once per process; a change makes a new fingerprint and a new read; a read whose data changed after the
    caller took its fingerprint is not kept under that (stale) fingerprint."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from scoring import queries

    profile, image = world["profile"], world["consensus"][3]
    first_print = queries.ground_truth_fingerprint(profile)
    first = queries.ground_truth(profile, first_print)
    with CaptureQueriesContext(connection) as ctx:
        assert queries.ground_truth(profile, first_print) is first
    assert len(ctx) == 0
    assert first == queries.ground_truth(profile)  # what was kept is what a fresh read gives

    ImageScore.objects.filter(image=image, profile=profile).update(score=0.123, level=4)  # a change: a new fingerprint
    second_print = queries.ground_truth_fingerprint(profile)
    assert second_print != first_print
    ImageScore.objects.filter(image=image, profile=profile).update(score=0.456)  # changed again after the caller's print
    racing = queries.ground_truth(profile, second_print)
    assert racing.score[image.pk] == 0.456  # a fresh read: the data as it is now
    with CaptureQueriesContext(connection) as ctx:
        again = queries.ground_truth(profile, second_print)
    assert len(ctx) > 0 and again.score[image.pk] == 0.456  # not kept under the print it no longer matches: read again
    third_print = queries.ground_truth_fingerprint(profile)
    assert queries.ground_truth(profile, third_print).score[image.pk] == 0.456
    with CaptureQueriesContext(connection) as ctx:
        assert queries.ground_truth(profile, third_print).score[image.pk] == 0.456
    assert len(ctx) == 0


def test_aligned_arrays_are_the_ground_truth_of_each_result(world):
    """queries.align by sorted arrays: each kept result carries its image's ground truth; results without one are counted."""
    from scoring import queries

    run = world["runs"][0]
    gt = queries.ground_truth(world["profile"])
    results = queries.judge_results([run.pk])[run.pk]
    stray = {"image_id": np.append(results["image_id"], 10**9), "outcome": np.append(results["outcome"], "ok"),
             "score": np.append(results["score"], 0.5)}
    aligned = queries.align(stray, gt)
    assert aligned["without_gt"] == 1 and aligned["image_id"].tolist() == results["image_id"].tolist()
    assert aligned["gt"].tolist() == [gt.score[i] for i in results["image_id"].tolist()]
    assert aligned["gt_level"].tolist() == [gt.level[i] for i in results["image_id"].tolist()]
    assert aligned["gt"].dtype == np.float64 and aligned["gt_level"].dtype == np.int64
