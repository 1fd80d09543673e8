"""Launching a run and dispatching its chunk tasks.

A launch freezes the image list and the exact prompts, then (on commit) dispatches chunk tasks on
the provider's queue (`api` for OpenAI/Gemini, `gpu` for vLLM). Lanes (see `dispatch`) let one run
use several worker processes without exceeding its concurrency; each lane is worked by one worker
at a time (inference.leases).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotations.faces import variants as face_variants
from annotations.models import Annotator
from core.audit import audit

from . import chunks, kinds, leases, pricing, prompts
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
        if kinds.get(spec.task).writes_labels:  # its labels are stored under the model's annotator
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


lane_widths = leases.lane_widths


def dispatch(run_id: int, image_ids: list[int] | None = None, lanes: list[int] | None = None, takeover: bool = False) -> int:
    """Send one chunk message per lane that has images among `image_ids` (default: every image still
    missing a result), or only for the lanes numbered in `lanes`; returns the number of messages.

    The run's concurrency is its bound on requests in flight, across all workers: its images are
    dealt into lanes (inference.leases), each with its share of the concurrency, so lanes run in
    parallel on separate worker processes and never exceed the total. A lane's chunks run one after
    the other: each chunk, when it ends, sends the next one for the lane's images still missing.
    `takeover` (a resume) frees lanes still leased by workers that are gone.
    """
    run = Run.objects.get(pk=run_id)
    wanted = set(run.missing_image_ids() if image_ids is None else image_ids)
    all_lanes = leases.lanes_of(run)
    Run.objects.filter(pk=run_id).update(dispatched_at=timezone.now())
    sent = 0
    for lane in all_lanes:
        if lanes is not None and lane.index not in lanes:
            continue
        share = [i for i in lane.image_ids if i in wanted]
        if share:
            leases.mark_dispatched(run.pk, [lane.index], takeover)  # before sending: a fast worker's claim must stay
            send_chunk(run, lane, share, len(all_lanes))
            sent += 1
    return sent


def send_chunk(run: Run, lane, missing: list[int], lanes: int) -> None:
    """One chunk message for a lane: its first missing images, as many as inference.chunks allows."""
    from .tasks import run_chunk

    size = chunks.size(run.provider, run.task, lane.width, lanes)
    run_chunk.apply_async(args=[run.pk, missing[:size], lane.width], kwargs={"lane": lane.index}, queue=queue_for(run.provider))
