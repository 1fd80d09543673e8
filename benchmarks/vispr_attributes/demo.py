"""The demo's VISPR attribute runs (provenance "demo"): synthetic, so that the leaderboard and the
figures page show what they do in `make demo`. No model is called and no VISPR release is shipped.

The demo images are drawn, not VISPR's: their VISPR labels are made here from their demo consensus
(an attribute of the project's VISPR mapping file is present when the CPRT attribute it maps to is 1;
`a0_safe` when none is), over a small attribute list (a0_safe and the first VISPR id the mapping gives
each CPRT attribute). They are written only on demo images whose VISPR labels are empty. Two finished
runs (two models) predict them with seeded noise; a few images are refused and a few attributes
omitted, so coverage and omissions show. The results use no tokens (no model was called), so the runs'
totals, which come from their results (inference.lifecycle.refresh_totals) like a launched run's, show
no tokens and no cost. Idempotent: a demo run that exists is left as it is.
"""
from __future__ import annotations

import random

from django.db import transaction
from django.utils import timezone

from annotations.models import Image
from annotations.services.vispr_labels import read_mapping
from core.audit import audit
from inference.lifecycle import refresh_totals
from inference.models import Run, RunResult
from scoring.models import ImageScore, ScoringProfile

from .kind import STAGE, VisprAttributesKind, answer_schema, prompt_texts

DEMO_SOURCE = "demo"  # the demo images' Image.source
PROMPT_VERSION = "demo-v1"
NOTE = "synthetic demo run: no model was called; VISPR labels and predictions are made from the demo consensus with seeded noise"
MODELS = (("openai", "gpt-5.1", 0.18, 0.04), ("gemini", "gemini-3-flash", 0.30, 0.10))  # provider, model, noise, refusal rate
SAFE = "a0_safe"


def demo_attributes() -> tuple[list[tuple[str, str]], dict[str, str]]:
    """([(VISPR id, description)], CPRT key -> VISPR id) from the project's mapping file."""
    by_key = {key: ids[0] for key, ids in read_mapping().by_attribute.items() if ids}
    listed = [(SAFE, "demo: nothing private")] + [(vid, f"demo: stands for CPRT {key.replace('_', ' ')}") for key, vid in by_key.items()]
    return listed, by_key


def _demo_images() -> list[tuple[Image, dict]]:
    scores = dict(ImageScore.objects.filter(profile=ScoringProfile.active(), image__source=DEMO_SOURCE).values_list("image_id", "binary_labels"))
    return [(image, scores[image.pk]) for image in Image.objects.filter(source=DEMO_SOURCE).exclude(file="").order_by("vispr_id")
            if image.pk in scores]


def _label_images(images, by_key) -> int:
    labelled = 0
    for image, binary in images:
        if image.vispr_labels:
            continue
        image.vispr_labels = sorted({by_key[k] for k, v in binary.items() if v == 1 and k in by_key}) or [SAFE]
        image.save(update_fields=["vispr_labels"])
        labelled += 1
    return labelled


def _run(provider: str, model: str, noise: float, refuse: float, images, listed) -> Run:
    rng = random.Random(f"cprt-demo-vispr-attributes-{model}")
    ids = [a for a, _ in listed]
    prompt = {STAGE: prompt_texts(listed), "schemas": {STAGE: answer_schema(ids)}, "attributes": [list(a) for a in listed],
              "demo": NOTE}
    now = timezone.now()
    run = Run.objects.create(
        task=VisprAttributesKind.key, provider=provider, model_name=model, prompt_version=PROMPT_VERSION, prompt_text=prompt,
        concurrency=4, status=Run.STATUS_FINISHED, started_at=now, finished_at=now, heartbeat_at=now, request_params={"demo": True},
        selection={"split": "all", "demo": NOTE}, options={"vispr_split": ""}, image_ids=[i.pk for i, _ in images],
        item_ids=[i.pk for i, _ in images], total=len(images),
    )
    results = []
    for image, _ in images:
        if rng.random() < refuse:
            results.append(RunResult(run=run, item_id=image.pk, image=image, outcome=RunResult.OUTCOME_REFUSED,
                                     reasoning="demo: a seeded refusal", error="refused: demo refusal", raw={"demo": True}))
            continue
        present = set(image.vispr_labels)
        p = {a: round(min(1.0, max(0.0, (0.8 if a in present else 0.15) + rng.gauss(0, noise))), 3) for a in ids}
        omitted = [a for a in ids if rng.random() < 0.03]
        for a in omitted:
            del p[a]
        answer = {"p": p, "omitted": omitted}
        results.append(RunResult(run=run, item_id=image.pk, image=image, outcome=RunResult.OUTCOME_OK, raw={"demo": True, "answer": answer},
                                 reasoning=f"demo: {sum(v >= 0.5 for v in p.values())} of {len(ids)} attributes at p ≥ 0.5; {len(omitted)} omitted",
                                 latency_ms=rng.randint(400, 1200)))
    RunResult.objects.bulk_create(results)
    refresh_totals(run.pk)  # counts, done, tokens and cost from the stored results, as for a launched run
    run.refresh_from_db()
    return run


def seed(log=lambda _msg: None) -> dict:
    """The demo's VISPR labels on the demo images and one demo run per model (those missing)."""
    images = _demo_images()
    if not images:
        return {"runs": 0, "images_labelled": 0}
    listed, by_key = demo_attributes()
    with transaction.atomic():
        labelled = _label_images(images, by_key)
        images = [(Image.objects.get(pk=i.pk), b) for i, b in images]
        existing = Run.objects.filter(task=VisprAttributesKind.key, prompt_version=PROMPT_VERSION)
        made = [_run(provider, model, noise, refuse, images, listed).pk for provider, model, noise, refuse in MODELS
                if not existing.filter(provider=provider, model_name=model).exists()]
        if made:
            audit(None, "demo.seed_runs", None, run_ids=made, benchmark=VisprAttributesKind.key)
    log(f"Demo VISPR attribute runs: {len(made)} new; {labelled} demo images given demo VISPR labels (synthetic; no model was called).")
    return {"runs": len(made), "images_labelled": labelled}
