"""Launching a run and dispatching its chunk tasks.

A launch freezes the image list and the exact prompts, then (on commit) dispatches chunk tasks on
the provider's queue (`api` for OpenAI/Gemini, `gpu` for vLLM). Lanes (see `dispatch`) let one run
use several worker processes without exceeding its concurrency.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotations.faces import variants as face_variants
from annotations.models import Annotator
from core.audit import audit

from . import pricing, prompts
from .models import Run
from .providers import get_provider, queue_for
from .selection import Selection, select_image_ids


# --- launch ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchSpec:
    task: str
    provider: str
    model_name: str
    strategy: str
    counterfactual_faces: bool
    prompt_version: str
    selection: Selection
    concurrency: int
    face_variant: dict = field(default_factory=dict)  # judge the anonymized variants under this setting
    mode: str = "online"  # or "batch": the provider's batch API (inference.batch)


def plan(spec: LaunchSpec) -> dict:
    """What a launch would do: image ids, selection description, prompt texts, estimate."""
    ids, described = select_image_ids(spec.selection)
    prompt_text = prompts.render(spec.task, spec.prompt_version, spec.strategy, spec.counterfactual_faces)
    estimate = pricing.estimate(spec.task, spec.provider, spec.model_name, len(ids), prompt_text, spec.mode)
    return {"image_ids": ids, "selection": described, "prompt_text": prompt_text, "estimate": estimate}


def launch_run(user, spec: LaunchSpec) -> Run:
    planned = plan(spec)
    if not planned["image_ids"]:
        raise ValueError("The selection matches no images with stored bytes.")
    if spec.face_variant:
        missing = len(planned["image_ids"]) - len(face_variants.variant_files(planned["image_ids"], spec.face_variant))
        if missing:
            raise ValueError(f"{missing} of the {len(planned['image_ids'])} selected images have no anonymized variant "
                             f"({face_variants.describe_setting(spec.face_variant)}); anonymize them first on the Faces page.")
    provider = get_provider(spec.provider, spec.model_name)
    request_params = dict(provider.request_params())
    if spec.provider == "vllm":
        request_params["max_pixels"] = settings.VLLM_MAX_PIXELS
    with transaction.atomic():
        annotator = None
        if spec.task == Run.TASK_ANNOTATE:
            annotator = Annotator.for_model(spec.provider, spec.model_name, spec.prompt_version)
        run = Run.objects.create(
            task=spec.task,
            provider=spec.provider,
            model_name=spec.model_name,
            strategy=spec.strategy,
            counterfactual_faces=spec.counterfactual_faces,
            face_variant=dict(spec.face_variant),
            prompt_version=spec.prompt_version,
            prompt_text=planned["prompt_text"],
            selection=planned["selection"],
            image_ids=planned["image_ids"],
            concurrency=spec.concurrency,
            mode=spec.mode,
            annotator=annotator,
            total_images=len(planned["image_ids"]),
            request_params=request_params,
            estimate=planned["estimate"],
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        audit(user, "run.launch", run, task=run.task, provider=run.provider, model=run.model_name,
              strategy=run.strategy, counterfactual_faces=run.counterfactual_faces, face_variant=run.face_variant, prompt_version=run.prompt_version,
              images=run.total_images, selection=run.selection, concurrency=run.concurrency, mode=run.mode)
        transaction.on_commit(lambda: dispatch(run.pk) if run.mode == Run.MODE_ONLINE else start_batch(run.pk))
    return run


def start_batch(run_id: int) -> None:
    """After a batch launch commits: the first step (submission) on a worker of the provider's queue."""
    from .tasks import batch_step

    run = Run.objects.only("provider").get(pk=run_id)
    batch_step.apply_async(args=[run_id], queue=queue_for(run.provider))


def resubmit_batch(run_id: int) -> None:
    """Failed batch requests into a follow-up batch, on a worker (the upload can take a while)."""
    from .tasks import batch_resubmit

    run = Run.objects.only("provider").get(pk=run_id)
    batch_resubmit.apply_async(args=[run_id], queue=queue_for(run.provider))


def lane_widths(concurrency: int) -> list[int]:
    """How a run's concurrency is split into lanes; the widths add up to exactly `concurrency`."""
    lanes = max(1, math.ceil(concurrency / settings.CPRT_RUN_LANE_CONCURRENCY))
    return [concurrency // lanes + (1 if i < concurrency % lanes else 0) for i in range(lanes)]


def dispatch(run_id: int, image_ids: list[int] | None = None) -> int:
    """Send the chunks for `image_ids` (default: every image still missing a result); returns the count.

    The run's concurrency is its bound on requests in flight, across all workers: the chunks are
    dealt into lanes, each lane a Celery chain (one chunk at a time) with its share of the
    concurrency, so lanes run in parallel on separate worker processes and never exceed the total.
    """
    from celery import chain

    from .tasks import run_chunk

    run = Run.objects.get(pk=run_id)
    ids = run.missing_image_ids() if image_ids is None else sorted(image_ids)
    widths = lane_widths(run.concurrency)
    Run.objects.filter(pk=run_id).update(dispatched_at=timezone.now())
    queue = queue_for(run.provider)
    chunks = 0
    for lane, width in enumerate(widths):
        share = ids[lane :: len(widths)]  # equal shares, so that the lanes finish together
        # A chunk's window stays full until its last `width` requests, and the next chunk of a
        # lane starts only after a broker round trip (up to a second with the filesystem broker):
        # chunks of up to 200 x the lane's width keep both costs small. Size does not risk loss:
        # results are written as they complete, and a re-run chunk skips what is done.
        size = max(settings.CPRT_RUN_CHUNK_SIZE, 200 * width)
        count = math.ceil(len(share) / size)
        if not count:
            continue
        step = math.ceil(len(share) / count)  # even chunk sizes within a lane
        links = [run_chunk.si(run.pk, share[i : i + step], width).set(queue=queue) for i in range(0, len(share), step)]
        chain(*links).apply_async(queue=queue)
        chunks += len(links)
    return chunks
