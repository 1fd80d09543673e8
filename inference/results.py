"""A run's per-item results: the `Outcome` of one item and how it is stored.

Online chunks (inference.execution) and batch ingest (inference.batch.ingest) both write through
`write_outcome(s)`: a result is unique per (run, item), so a duplicated chunk or a second ingest
writes nothing twice, and what a kind writes beside a result (annotate: labels) is written in the
same transaction as the result.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction

from core.secrets import scrub

from .models import Run, RunResult


@dataclass
class Outcome:
    item_id: int  # the run's item (its kind defines it)
    image_id: int  # the item's primary image
    outcome: str
    score: float | None = None
    reasoning: str = ""
    labels: dict = field(default_factory=dict)  # key -> (value, rationale): labels the kind writes (annotate)
    raw: dict = field(default_factory=dict)
    error: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: int = 0


def _result_row(run: Run, out: Outcome) -> RunResult:
    return RunResult(
        run=run, item_id=out.item_id, image_id=out.image_id, outcome=out.outcome, score=out.score, reasoning=out.reasoning, raw=out.raw,
        error=out.error[:10000], tokens_in=out.tokens_in, tokens_out=out.tokens_out, latency_ms=out.latency_ms,
    )


def scrub_outcome(out: Outcome) -> Outcome:
    """What the model said, parsed (reasoning, label rationales), without configured secrets: a model
    may echo one. (`raw` and `error` are scrubbed again by their fields when written.)"""
    out.reasoning, out.error, out.raw = scrub(out.reasoning), scrub(out.error), scrub(out.raw)
    if out.labels:
        out.labels = {key: (value, scrub(rationale)) for key, (value, rationale) in out.labels.items()}
    return out


STAND_IN_MARK = "cprt-stand-in"
_MARK_KEYS = ("system_fingerprint", "responseId", "response_id")


def is_stand_in(raw, depth: int = 0) -> bool:
    """Whether a raw reply carries the stand-in's mark (the project's fake provider servers put
    `cprt-stand-in` where the real APIs put a fingerprint or response id)."""
    if depth > 6:
        return False
    if isinstance(raw, dict):
        if any(isinstance(raw.get(k), str) and raw[k].startswith(STAND_IN_MARK) for k in _MARK_KEYS):
            return True
        return any(is_stand_in(v, depth + 1) for v in raw.values() if isinstance(v, (dict, list)))
    if isinstance(raw, list):
        return any(is_stand_in(v, depth + 1) for v in raw[:8])
    return False


def mark_stand_in(run: Run, outs: list[Outcome]) -> None:
    """Flag the run once a reply came from a stand-in: it is shown with a badge and exported as such."""
    if not run.stand_in and any(is_stand_in(o.raw) for o in outs):
        Run.objects.filter(pk=run.pk).update(stand_in=True)
        run.stand_in = True


def write_outcome(run: Run, out: Outcome, kind) -> bool:
    """Store one item's result (and what its kind writes beside it, e.g. labels) atomically; False if
    already there. `kind`: the run's kind (inference.kinds), whose `write(out)` stores the rest."""
    try:
        with transaction.atomic():
            _result_row(run, out).save(force_insert=True)
            kind.write(out)
    except IntegrityError:
        return False  # another copy of this chunk wrote this item first
    return True


def write_outcomes(run: Run, outs: list[Outcome], kind) -> tuple[int, int]:
    """Store several results in one transaction; (written, already there). Outcomes for which the kind
    writes more (annotate: labels) go one by one (each with what it writes, atomically)."""
    mark_stand_in(run, outs)
    written = duplicates = 0
    plain = [o for o in outs if not kind.writes(o)]
    for out in outs:
        if kind.writes(out):
            if write_outcome(run, out, kind):
                written += 1
            else:
                duplicates += 1
    if plain:
        try:
            with transaction.atomic():
                existing = set(RunResult.objects.filter(run=run, item_id__in=[o.item_id for o in plain]).values_list("item_id", flat=True))
                new = [o for o in plain if o.item_id not in existing]
                RunResult.objects.bulk_create([_result_row(run, o) for o in new])
            written += len(new)
            duplicates += len(plain) - len(new)
        except IntegrityError:
            # A racing copy of this chunk committed some of these items in between: one by one.
            for out in plain:
                if write_outcome(run, out, kind):
                    written += 1
                else:
                    duplicates += 1
    return written, duplicates
