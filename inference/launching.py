"""Launching a run: what the launch form, the API and `manage.py launch_run` all call.

A launch freezes the image list, the run's items (its kind's `launch_items` over the images and the
kind's cleaned `options`), the exact prompts and, for kinds whose truth is re-importable data, the
truth the run will be scored against (`Kind.freeze_truth`: a benchmark's imported persons), then (on
commit) sends its work on the provider's queue (`api` for OpenAI/Gemini, `gpu` for vLLM) through
inference.dispatching: chunk messages per lane for an online run, the first batch step for a batch run.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from annotations.faces import variants as face_variants
from annotations.models import Annotator
from core.audit import audit

from . import dispatching, kinds, pricing
from .models import Run
from .providers import get_provider
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
    options: dict = field(default_factory=dict)  # kind-specific launch options (Kind.clean_options)


def plan(spec: LaunchSpec) -> dict:
    """What a launch would do: image ids, item ids, cleaned options, selection description, prompt
    texts, estimate. Raises ValueError for options the kind refuses."""
    kind = kinds.get(spec.task)
    options = kind.clean_options(dict(spec.options))
    if kind.selects_images:
        ids, described = select_image_ids(spec.selection)
    else:
        ids, described = [], {"images": f"not applicable: {kind.label} runs ask about their own data"}
    item_ids = kind.launch_items(ids, options)
    truth = kind.freeze_truth(item_ids)
    prompt_text = kinds.render(spec.task, spec.prompt_version, spec.strategy, spec.counterfactual_faces)
    estimate = pricing.estimate(spec.task, spec.provider, spec.model_name, len(item_ids), prompt_text, spec.mode)
    return {"image_ids": ids, "item_ids": item_ids, "options": options, "selection": described,
            "prompt_text": prompt_text, "estimate": estimate, "truth": truth, "unit": kind.unit}


def launch_run(user, spec: LaunchSpec, send: bool = True) -> Run:
    """Create the run (audited) and, once it commits, send its work to the workers. `send=False`:
    nothing is sent; the caller works the run itself (`launch_run --here`, inference.inprocess)."""
    planned = plan(spec)
    if kinds.get(spec.task).selects_images and not planned["image_ids"]:
        raise ValueError("The selection matches no images with stored bytes.")
    if not planned["item_ids"]:
        raise ValueError(f"The selection gives no {kinds.get(spec.task).label or spec.task} items (its images have none).")
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
            item_ids=planned["item_ids"],
            options=planned["options"],
            truth=planned["truth"],
            concurrency=spec.concurrency,
            mode=spec.mode,
            endpoint=type(provider).endpoint(),
            annotator=annotator,
            total=len(planned["item_ids"]),
            request_params=request_params,
            estimate=planned["estimate"],
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        audit(user, "run.launch", run, task=run.task, provider=run.provider, model=run.model_name,
              strategy=run.strategy, counterfactual_faces=run.counterfactual_faces, face_variant=run.face_variant, prompt_version=run.prompt_version,
              images=len(run.image_ids), items=run.total, options=run.options, selection=run.selection, concurrency=run.concurrency,
              mode=run.mode, endpoint=run.endpoint)
        if send and run.mode == Run.MODE_ONLINE:
            dispatching.dispatch_on_commit(run.pk)
        elif send:
            dispatching.start_batch(run.pk)
    return run
