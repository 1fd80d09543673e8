"""Demo model runs, so that the runs, leaderboard, run, metrics and counterfactual pages show what they do.

Synthetic, like the demo labels: no model is called. Each run is marked as demo data: prompt version
`demo-v1` (the demo labels' version), `selection["demo"]` saying so (the run pages show a "demo data"
badge), and every result's reasoning starts with "demo:". Four judge runs (strategies `zero_shot` and
`taxonomy`, each with and without the counterfactual-faces instruction) predict each demo image's
consensus score with seeded, strategy-specific error; the counterfactual runs predict a lower score where
the consensus sees a face (biometrics). One annotate run writes labels from a demo model annotator (the
consensus with seeded noise). The results use no tokens (no model was called), so the runs' totals,
which come from their results (inference.lifecycle.refresh_totals) like a launched run's, show no tokens
and no cost. Idempotent: a demo run that exists is left as it is.
"""
from __future__ import annotations

import random
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from annotations.models import Annotator, Image, Label
from annotations import label_version, taxonomy
from core.audit import audit
from inference.lifecycle import refresh_totals
from inference.models import Run, RunResult
from scoring.models import ImageScore, ScoringProfile

DEMO_SOURCE = "demo"
PROMPT_VERSION = "demo-v1"
DEMO_NOTE = "synthetic demo run: no model was called; predictions are the demo consensus with seeded noise"
# strategy -> (bias, spread) of the predicted score around the consensus score
JUDGE_STRATEGIES = {"zero_shot": (0.08, 0.16), "taxonomy": (0.02, 0.07)}
FACE_DISCOUNT = 0.25  # what the counterfactual instruction takes off an image with a face
ANNOTATE_MODEL = ("openai", "gpt-5.1")


def _demo_images():
    scores = {s.image_id: s for s in ImageScore.objects.filter(profile=ScoringProfile.active(), image__source=DEMO_SOURCE)}
    return [(image, scores[image.pk]) for image in Image.objects.filter(source=DEMO_SOURCE).order_by("vispr_id") if image.pk in scores]


def _finished_run(**fields) -> Run:
    now = timezone.now()
    return Run.objects.create(
        provider="openai", model_name="gpt-5.1", prompt_version=PROMPT_VERSION, prompt_text={"demo": DEMO_NOTE},
        concurrency=4, status=Run.STATUS_FINISHED, started_at=now, finished_at=now, heartbeat_at=now,
        request_params={"demo": True}, **fields,
    )


def _judge_run(strategy: str, counterfactual: bool, images) -> Run:
    bias, spread = JUDGE_STRATEGIES[strategy]
    rng = random.Random(f"cprt-demo-run-{strategy}-{counterfactual}")
    run = _finished_run(task=Run.TASK_JUDGE, strategy=strategy, counterfactual_faces=counterfactual,
                        selection={"split": "all", "demo": DEMO_NOTE}, image_ids=[i.pk for i, _ in images],
                        item_ids=[i.pk for i, _ in images], total=len(images))
    results = []
    for image, score in images:
        predicted = score.score + bias + rng.gauss(0, spread)
        if counterfactual and score.binary_labels.get("biometrics") == 1:
            predicted -= FACE_DISCOUNT
        predicted = round(min(1.0, max(0.0, predicted)), 3)
        results.append(RunResult(run=run, item_id=image.pk, image=image, outcome=RunResult.OUTCOME_OK, score=predicted,
                                 reasoning=f"demo: synthetic {strategy} prediction{' with faces anonymized' if counterfactual else ''}.",
                                 raw={"demo": True, "score": predicted}, latency_ms=rng.randint(300, 900)))
    RunResult.objects.bulk_create(results)
    refresh_totals(run.pk)  # counts, done, tokens and cost from the stored results, as for a launched run
    return run


def _annotate_run(images) -> Run:
    annotator = Annotator.for_model(*ANNOTATE_MODEL, PROMPT_VERSION + "-annotate")
    if not annotator.is_demo:
        annotator.is_demo = True
        annotator.save(update_fields=["is_demo"])
    rng = random.Random("cprt-demo-run-annotate")
    attr_ids = taxonomy.attribute_ids()
    run = _finished_run(task=Run.TASK_ANNOTATE, annotator=annotator, selection={"split": "all", "demo": DEMO_NOTE},
                        image_ids=[i.pk for i, _ in images], item_ids=[i.pk for i, _ in images], total=len(images))
    labels, results = [], []
    done = set(Label.objects.filter(annotator=annotator).values_list("image_id", flat=True))
    for image, score in images:
        if image.pk not in done:
            for key, attribute_id in attr_ids.items():
                value = float(score.binary_labels.get(key, 0))
                roll = rng.random()
                if roll < 0.06:
                    value = 0.5
                elif roll < 0.10:
                    value = 1.0 - value
                labels.append(Label(image=image, annotator=annotator, attribute_id=attribute_id, value=value, rationale="demo: synthetic"))
        results.append(RunResult(run=run, item_id=image.pk, image=image, outcome=RunResult.OUTCOME_OK, reasoning="demo: synthetic labels",
                                 raw={"demo": True}, latency_ms=rng.randint(600, 1500)))
    Label.objects.bulk_create(labels)
    label_version.bump([annotator.pk])  # seeded past the label-writing API: counted as it would
    RunResult.objects.bulk_create(results)
    refresh_totals(run.pk)
    return run


def seed_runs(log: Callable[[str], None] = lambda _msg: None) -> list[int]:
    """Create the demo runs that do not exist yet (after the demo images are scored); returns their ids."""
    images = _demo_images()
    if not images:
        return []
    existing = Run.objects.filter(prompt_version=PROMPT_VERSION)
    made = []
    with transaction.atomic():
        for strategy in JUDGE_STRATEGIES:
            for counterfactual in (False, True):
                if not existing.filter(task=Run.TASK_JUDGE, strategy=strategy, counterfactual_faces=counterfactual).exists():
                    made.append(_judge_run(strategy, counterfactual, images).pk)
        if not existing.filter(task=Run.TASK_ANNOTATE).exists():
            made.append(_annotate_run(images).pk)
        if made:
            audit(None, "demo.seed_runs", None, run_ids=made)
    log(f"Demo runs: {len(made)} new (synthetic, prompt version {PROMPT_VERSION}; no model was called).")
    return made
