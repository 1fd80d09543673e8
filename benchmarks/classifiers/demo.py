"""The demo's local-classifier runs (provenance "demo"): synthetic, so that the leaderboard and a run's
figures page show what they do in `make demo`. No classifier is registered or called: each run's
P(private) per demo image is drawn around a value its demo consensus level gives (level 1 high, level 4
low) with seeded noise, and a few images fail as unreadable, so the excluded count shows. The run's
totals come from its results (inference.lifecycle.refresh_totals), like a launched run's.
Idempotent: a demo run that exists is left as it is.
"""
from __future__ import annotations

import random

from django.db import transaction
from django.utils import timezone

from annotations.models import Image
from core.audit import audit
from inference.lifecycle import refresh_totals
from inference.models import Run, RunResult
from scoring.models import ImageScore, ScoringProfile

from .kind import PROVIDER, BinaryKind

DEMO_SOURCE = "demo"  # the demo images' Image.source
PROMPT_VERSION = "demo-v1"
NOTE = "synthetic demo run: no classifier was called; P(private) is drawn from the demo consensus level with seeded noise"
MODELS = (("demo-s2p-ipd", 0.12, 0.03), ("demo-s2p-vispr", 0.22, 0.06))  # classifier name, noise, unreadable rate
BY_LEVEL = {1: 0.85, 2: 0.7, 3: 0.35, 4: 0.12}  # the P(private) a demo image of this consensus level is drawn around


def _demo_images() -> list[tuple[Image, int]]:
    levels = dict(ImageScore.objects.filter(profile=ScoringProfile.active(), image__source=DEMO_SOURCE).values_list("image_id", "level"))
    return [(image, levels[image.pk]) for image in Image.objects.filter(source=DEMO_SOURCE).exclude(file="").order_by("vispr_id")
            if image.pk in levels]


def _run(model: str, noise: float, unreadable: float, images) -> Run:
    rng = random.Random(f"cprt-demo-local-classifier-{model}")
    now = timezone.now()
    run = Run.objects.create(
        task=BinaryKind.key, provider=PROVIDER, model_name=model, prompt_version=PROMPT_VERSION,
        prompt_text={**BinaryKind.render(BinaryKind.default_version(), "", False, None), "demo": NOTE},
        concurrency=4, status=Run.STATUS_FINISHED, started_at=now, finished_at=now, heartbeat_at=now,
        request_params={"demo": True, "classifier": model, "classes": ["private", "public"], "output": "probabilities"},
        selection={"split": "all", "demo": NOTE}, image_ids=[i.pk for i, _ in images], item_ids=[i.pk for i, _ in images], total=len(images),
    )
    results = []
    for image, level in images:
        if rng.random() < unreadable:
            results.append(RunResult(run=run, item_id=image.pk, image=image, outcome=RunResult.OUTCOME_ERROR, raw={"demo": True},
                                     reasoning="demo: a seeded unreadable image", error="demo: the image could not be decoded"))
            continue
        p = round(min(1.0, max(0.0, BY_LEVEL.get(level, 0.5) + rng.gauss(0, noise))), 4)
        results.append(RunResult(run=run, item_id=image.pk, image=image, outcome=RunResult.OUTCOME_OK, score=p,
                                 reasoning=f"demo: P(private) = {p:.4f}", raw={"demo": True, "p_private": p}, latency_ms=rng.randint(5, 40)))
    RunResult.objects.bulk_create(results)
    refresh_totals(run.pk)  # counts, done, tokens and cost from the stored results, as for a launched run
    run.refresh_from_db()
    return run


def seed(log=lambda _msg: None) -> dict:
    """One demo run per demo classifier (those missing), over the demo images the active profile scored."""
    images = _demo_images()
    if not images:
        return {"runs": 0}
    with transaction.atomic():
        existing = Run.objects.filter(task=BinaryKind.key, prompt_version=PROMPT_VERSION)
        made = [_run(model, noise, unreadable, images).pk for model, noise, unreadable in MODELS
                if not existing.filter(model_name=model).exists()]
        if made:
            audit(None, "demo.seed_runs", None, run_ids=made, benchmark="local-classifiers")
    log(f"Demo local-classifier runs: {len(made)} new (synthetic; no classifier was called).")
    return {"runs": len(made)}
