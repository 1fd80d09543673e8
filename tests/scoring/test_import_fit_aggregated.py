"""The import's fit reads the stored rows aggregated (one entry per distinct split, level, counts and score,
with how many rows share it) so that its memory does not grow with the rows (issue 29); the fit of those
entries is the fit of every row written out one by one: the joint fit and the per-split report exactly,
the per-level least-squares lines (weighted by the counts) to rounding. The rows below repeat each label
vector many times, unevenly, with scores off the line, so a fit that ignored the counts would differ."""
from __future__ import annotations

import dataclasses
import json
import random

import numpy as np
import pytest

from annotations import taxonomy
from annotations.models import Annotator, Image
from scoring import engine
from scoring import fit as fit_lib
from scoring.cprt_bench import import_bench_file, refit
from scoring.models import ScoringProfile

BOUNDS = engine.Bounds((0.85, 0.6, 0.3, 0.0))


def duplicated_rows(seed: int = 11) -> list[dict]:
    """40 label vectors, each written 1..40 times (in shuffled order), scores with 3 decimals and noise of
    their own per vector (a few copies printed with another score); three rows with a wrong level."""
    tax = taxonomy.from_file()
    rng = random.Random(seed)
    rows = []
    for _ in range(40):
        p = rng.choice([0.03, 0.1, 0.25, 0.5])
        flat = {key: int(rng.random() < p) for key in tax.keys}
        level, score = engine.severity(engine.level_counts(flat, tax.level_of), BOUNDS)
        noisy = round(min(max(score + rng.uniform(-0.01, 0.01), 0.0), 1.0), 3)
        for copy in range(rng.randint(1, 40)):
            printed = noisy if copy % 7 else round(min(noisy + 0.002, 1.0), 3)
            rows.append({"level": level, "score": printed, "binary_labels": {
                f"level{lv}": {k: flat[k] for k in tax.keys_of_level(lv)} for lv in engine.LEVELS}})
    rng.shuffle(rows)
    for i, row in enumerate(rows):
        row["id"] = f"2017_{30000000 + i}"
    wrong = [i for i, r in enumerate(rows) if r["level"] in (1, 2)][:3]
    for i in wrong:
        rows[i]["level"] = 4
    return rows


def per_row_inputs(rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(counts, scores, levels, ids) of every stored row in image id order: what the fit used to hold."""
    tax = taxonomy.from_file()
    by_id = {r["id"]: r for r in rows}
    ids = list(Image.objects.order_by("id").values_list("vispr_id", flat=True))
    counts = np.array([engine.level_counts({k: v for g in by_id[i]["binary_labels"].values() for k, v in g.items()}, tax.level_of)
                       for i in ids], dtype=np.int64)
    return counts, np.array([by_id[i]["score"] for i in ids]), np.array([by_id[i]["level"] for i in ids]), ids


def assert_lines_equal(got: list[dict], want: list[engine.LevelFit]) -> None:
    for g, w in zip(got, want, strict=True):
        assert (g["level"], g["rows"], g["distinct_t"]) == (w.level, w.rows, w.distinct_t)
        for key in ("lo", "hi", "max_residual"):
            assert (g[key] is None) == (getattr(w, key) is None)
            if g[key] is not None:
                assert g[key] == pytest.approx(getattr(w, key), rel=1e-10, abs=1e-12), (w.level, key)


@pytest.mark.django_db
def test_aggregated_fit_equals_the_per_row_fit(tmp_path, monkeypatch):
    monkeypatch.setattr(refit, "ID_RANGE", 97)  # entries merged across several ranges, mismatches placed across them
    rows = duplicated_rows()
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = import_bench_file(path, "test")
    counts, scores, levels, ids = per_row_inputs(rows)

    # The stored rows come as far fewer entries, standing for every row.
    stored = refit.stored_published_rows(Annotator.objects.get(name="ground-truth:cprt-bench"), taxonomy.active())
    distinct = {(lv, *c, s) for lv, c, s in zip(levels.tolist(), counts.tolist(), scores.tolist())}
    assert len(stored) == len(rows) > 10 * len(stored.scores) and len(stored.scores) == len(distinct)

    # The joint fit and its per-split report: exactly the per-row ones (mismatches at their places among all rows).
    joint = fit_lib.fit_profile(counts, scores, levels, decimals=fit_lib.printed_decimals(scores))
    assert len(joint.level_mismatches) == 3
    report = ScoringProfile.objects.get(name="cprt-bench").fit_report
    assert report["joint"] == json.loads(json.dumps(joint.report()))
    _, profile_scores = engine.severity_array(counts, joint.bounds, joint.weights)
    tol = fit_lib.tolerance(joint.decimals)
    assert report["per_split"] == [{
        "split": "test", "rows": len(rows), "decimals": joint.decimals, "tolerance": tol,
        "max_residual": float(np.abs(profile_scores - scores).max()),
        "failing_rows": int((np.abs(profile_scores - scores) > tol).sum()),
        "reproduces": float(np.abs(profile_scores - scores).max()) <= tol}]
    assert [m["id"] for m in report["level_mismatches"]] == [ids[i] for i in joint.level_mismatches]
    assert report["rows"] == result.fitted_rows == len(rows)

    # The per-level lines: the per-row least squares, to rounding, with the rows per level counted.
    per_row = engine.fit_bounds(counts, scores, levels, joint.weights)
    assert_lines_equal(report["levels"], per_row.levels)
    assert report["partition_gaps"] == pytest.approx(per_row.partition_gaps, rel=1e-10, abs=1e-12)

    # The counts matter: the same entries fitted unweighted give other lines (so the check above can fail).
    unweighted = engine.fit_bounds(stored.counts, stored.scores, None, joint.weights)
    differs = [abs(u.lo - w.lo) for u, w in zip(unweighted.levels, per_row.levels) if u.lo is not None and w.lo is not None]
    assert max(differs) > 1e-4
    with pytest.raises(AssertionError):
        assert_lines_equal([dataclasses.asdict(f) for f in unweighted.levels], per_row.levels)


def test_weighted_lines_equal_the_rows_written_out():
    """engine.fit_bounds on distinct rows with their counts is the fit of the rows repeated (no database)."""
    rng = np.random.default_rng(4)
    tax = taxonomy.from_file()
    distinct = np.array(sorted({tuple(engine.level_counts({k: int(rng.random() < p) for k in tax.keys}, tax.level_of))
                                for p in rng.choice([0.05, 0.2, 0.5], 300)}), dtype=np.int64)
    _, exact = engine.severity_array(distinct, BOUNDS)
    scores = np.round(exact + rng.uniform(-0.01, 0.01, len(distinct)), 4)
    times = rng.integers(1, 60, len(distinct))
    expanded = engine.fit_bounds(np.repeat(distinct, times, axis=0), np.repeat(scores, times))
    weighted = engine.fit_bounds(distinct, scores, rows=times)
    assert_lines_equal([dataclasses.asdict(f) for f in weighted.levels], expanded.levels)
    assert weighted.bounds.lo == pytest.approx(expanded.bounds.lo, rel=1e-10)
    assert weighted.max_residual == pytest.approx(expanded.max_residual, rel=1e-10)
    ignored = engine.fit_bounds(distinct, scores)
    with pytest.raises(AssertionError):
        assert_lines_equal([dataclasses.asdict(f) for f in ignored.levels], expanded.levels)
    # The joint fit needs only the distinct (counts, score) pairs: repeating rows changes nothing in it.
    assert fit_lib.fit_profile(distinct, scores).report() == fit_lib.fit_profile(np.repeat(distinct, times, axis=0),
                                                                                  np.repeat(scores, times)).report()
