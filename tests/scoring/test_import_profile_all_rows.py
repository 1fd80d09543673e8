"""The profile is fitted from every stored published row (issue 27): importing test then train, or train
then test, leaves a profile that reproduces every published row of both files within the printed
precision; the import says what it fitted and whether it activated; the consensus set of an existing
profile changes only with --set-consensus; the audit records old -> new."""
from __future__ import annotations

import io
import json
import math
import random

import pytest
from django.core.management import call_command

from annotations import taxonomy
from annotations.models import Annotator
from core.models import AuditEvent
from scoring.models import ImageScore, ScoringProfile

MAXIMA = (3, 10, 5, 4)
# Weights and boundaries the test chooses (not a named set): base 60, and boundaries of our own.
WEIGHTS = (60**3, 60**2, 60, 1)
LO = (0.851, 0.562, 0.287, 0.0)


def reference_score(counts) -> tuple[int, float]:
    """The spec's formula written out directly (section 3), independent of scoring.engine."""
    if not any(counts):
        return 4, 0.0
    level = next(i for i, n in enumerate(counts) if n > 0)
    total = sum(w * n for w, n in zip(WEIGHTS, counts))
    lmax = sum(w * m for w, m in zip(WEIGHTS[level:], MAXIMA[level:]))
    t = (total - WEIGHTS[level]) / (lmax - WEIGHTS[level])
    hi = 1.0 if level == 0 else LO[level - 1]
    return level + 1, LO[level] + (hi - LO[level]) * math.sqrt(t)


def rows(n: int, start: int, seed: int) -> list[dict]:
    tax = taxonomy.from_file()
    rng = random.Random(seed)
    out = []
    for i in range(n):
        p = rng.choice([0.03, 0.08, 0.2, 0.45])
        flat = {key: int(rng.random() < p) for key in tax.keys}
        counts = [sum(flat[k] for k in tax.keys_of_level(lv)) for lv in (1, 2, 3, 4)]
        level, score = reference_score(counts)
        out.append({"id": f"2017_{start + i}", "level": level, "score": round(score, 3),
                    "binary_labels": {f"level{lv}": {k: flat[k] for k in tax.keys_of_level(lv)} for lv in (1, 2, 3, 4)}})
    return out


def write(path, data) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    return str(path)


def run(*args) -> str:
    out = io.StringIO()
    call_command("import_cprt", *args, stdout=out)
    return out.getvalue()


TEST_ROWS, TRAIN_ROWS = rows(500, 30000000, seed=11), rows(150, 40000000, seed=12)


@pytest.mark.django_db
@pytest.mark.parametrize("order", [("test", "train"), ("train", "test")])
def test_both_files_are_reproduced_whatever_the_order(tmp_path, order):
    files = {"test": write(tmp_path / "test.jsonl", TEST_ROWS), "train": write(tmp_path / "train.jsonl", TRAIN_ROWS)}
    run(files[order[0]], "--split", order[0])
    out = run(files[order[1]], "--split", order[1])
    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert profile.is_active and not profile.provisional, out
    assert "650 rows (test 500, train 150)" in out and "is now the active profile" in out
    report = profile.fit_report
    assert report["rows"] == 650 and {r["split"]: r["rows"] for r in report["per_split"]} == {"test": 500, "train": 150}
    assert all(r["reproduces"] and r["max_residual"] <= 0.0005 + 1e-9 for r in report["per_split"])
    assert "650 rows: test 500, train 150" in profile.source
    # Every published row of both files, under the stored profile, within the printed precision (engine-free check).
    from scoring import engine
    for row in TEST_ROWS + TRAIN_ROWS:
        flat = {k: v for level in row["binary_labels"].values() for k, v in level.items()}
        counts = engine.level_counts(flat, taxonomy.from_file().level_of)
        _, score = engine.severity(counts, profile.bounds, profile.weights)
        assert abs(score - row["score"]) <= 0.0005 + 1e-9, (row["id"], score, row["score"])
    # The stored scores are the profile's own (checked against the reference formula where weights coincide).
    if tuple(profile.weights) == WEIGHTS:
        assert (profile.lo1, profile.lo2, profile.lo3) == pytest.approx(LO[:3], abs=2e-3)


@pytest.mark.django_db
def test_a_small_contradicting_import_does_not_switch_the_active_profile_silently(tmp_path):
    run(write(tmp_path / "test.jsonl", TEST_ROWS), "--split", "test")
    before = ScoringProfile.objects.get(name="cprt-bench")
    # 20 new rows published under very different boundaries: the 520 stored rows cannot be reproduced.
    bad = [dict(r, score=round(min(1.0, r["score"] * 0.7 + 0.2), 3)) for r in rows(20, 50000000, seed=13)]
    out = run(write(tmp_path / "more.jsonl", bad), "--split", "test")
    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert not profile.is_active and profile.provisional and profile.version == before.version + 1
    assert "was NOT activated" in out and f"Active profile before: {before.label}" in out
    event = AuditEvent.objects.filter(action="profile.activate").order_by("-id").first()
    assert event is not None and event.data["old"] == before.label
    change = AuditEvent.objects.filter(action="profile.change").order_by("-id").first()
    assert change.data["changes"]["is_active"] == {"old": True, "new": False}
    assert change.data["changes"]["version"] == {"old": before.version, "new": before.version + 1}


@pytest.mark.django_db
def test_import_keeps_the_consensus_set_unless_asked(tmp_path):
    run(write(tmp_path / "test.jsonl", TEST_ROWS[:100]), "--split", "test")
    profile = ScoringProfile.objects.get(name="cprt-bench")
    gt = Annotator.ground_truth("cprt-bench")
    assert list(profile.consensus_annotators.all()) == [gt]
    # An admin makes two model annotators the consensus set; a later import keeps it.
    models = [Annotator.objects.create(name=f"model-{i}", kind=Annotator.KIND_MODEL, provider="openai", model_name=f"m{i}",
                                       prompt_version="v1") for i in range(2)]
    profile.consensus_annotators.set(models)
    ImageScore.objects.filter(profile=profile).delete()  # those annotators labelled nothing yet
    out = run(write(tmp_path / "train.jsonl", TRAIN_ROWS[:50]), "--split", "train")
    profile.refresh_from_db()
    assert sorted(a.name for a in profile.consensus_annotators.all()) == ["model-0", "model-1"]
    assert "Consensus set unchanged: model-0, model-1" in out
    assert not ImageScore.objects.filter(profile=profile).exists()  # no consensus from the imported rows
    # --set-consensus replaces it, says so, audits it and scores every imported image.
    out = run(write(tmp_path / "train.jsonl", TRAIN_ROWS[:50]), "--split", "train", "--set-consensus")
    profile.refresh_from_db()
    assert list(profile.consensus_annotators.all()) == [gt]
    assert "Consensus set changed (--set-consensus): model-0, model-1 -> ground-truth:cprt-bench" in out
    assert ImageScore.objects.filter(profile=profile).count() == 150
    change = AuditEvent.objects.filter(action="profile.change").order_by("-id").first()
    assert change.data["changes"]["consensus_annotators"] == {"old": sorted(m.pk for m in models), "new": [gt.pk]}
