"""A run's per-image results: the `Outcome` of one image and how it is stored.

Online chunks (inference.execution) and batch ingest (inference.batch.ingest) both write through
`write_outcome(s)`: a result is unique per (run, image), so a duplicated chunk or a second ingest
writes nothing twice, and an annotate run's labels are written in the same transaction as its result.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotations.models import Label, Labeling

from .models import Run, RunResult


@dataclass
class Outcome:
    image_id: int
    outcome: str
    score: float | None = None
    reasoning: str = ""
    labels: dict = field(default_factory=dict)  # key -> (value, rationale), annotate runs
    raw: dict = field(default_factory=dict)
    error: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: int = 0
    fatal: bool = False  # nothing in this run can succeed: fail the run, write nothing


def _result_row(run: Run, out: Outcome) -> RunResult:
    return RunResult(
        run=run, image_id=out.image_id, outcome=out.outcome, score=out.score, reasoning=out.reasoning, raw=out.raw,
        error=out.error[:10000], tokens_in=out.tokens_in, tokens_out=out.tokens_out, latency_ms=out.latency_ms,
    )


def write_outcome(run: Run, out: Outcome, attribute_ids: dict[str, int]) -> bool:
    """Store one image's result (and an annotate run's labels) atomically; False if already there."""
    try:
        with transaction.atomic():
            _result_row(run, out).save(force_insert=True)
            if out.labels and run.annotator_id:
                for key, (value, rationale) in out.labels.items():
                    Label.objects.update_or_create(
                        image_id=out.image_id, annotator_id=run.annotator_id, attribute_id=attribute_ids[key],
                        defaults={"value": value, "rationale": rationale[:4000]},
                    )
                Labeling.objects.update_or_create(
                    image_id=out.image_id, annotator_id=run.annotator_id,
                    defaults={"status": Labeling.STATUS_SUBMITTED, "submitted_at": timezone.now()},
                )
    except IntegrityError:
        return False  # another copy of this chunk wrote this image first
    return True


def write_outcomes(run: Run, outs: list[Outcome], attribute_ids: dict[str, int]) -> tuple[int, int]:
    """Store several results in one transaction; (written, already there). Label-writing outcomes go
    one by one (each with its labels, atomically)."""
    written = duplicates = 0
    plain = [o for o in outs if not o.labels]
    for out in outs:
        if out.labels:
            if write_outcome(run, out, attribute_ids):
                written += 1
            else:
                duplicates += 1
    if plain:
        try:
            with transaction.atomic():
                existing = set(RunResult.objects.filter(run=run, image_id__in=[o.image_id for o in plain]).values_list("image_id", flat=True))
                new = [o for o in plain if o.image_id not in existing]
                RunResult.objects.bulk_create([_result_row(run, o) for o in new])
            written += len(new)
            duplicates += len(plain) - len(new)
        except IntegrityError:
            # A racing copy of this chunk committed some of these images in between: one by one.
            for out in plain:
                if write_outcome(run, out, attribute_ids):
                    written += 1
                else:
                    duplicates += 1
    return written, duplicates
