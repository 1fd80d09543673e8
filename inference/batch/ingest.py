"""Store a provider batch's result lines exactly as the online run stores its replies.

Every line is checked on its own: an unreadable line, a custom_id that is not a request of this
batch, or a custom_id seen twice is refused (listed with its line number and reason) and changes
nothing. A good line moves its `BatchRequest` from submitted to done (or failed) in the same
transaction as the result it produces; a request already moved is skipped, so that ingesting the
same output twice stores nothing twice. The RunResult unique constraint is the last guard.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from django.db import transaction

from core.secrets import scrub

from .. import kinds
from ..models import Run
from ..providers.base import fatal_reason, fatal_status, item_specific, retryable_status
from ..providers.batch_types import ResultLine
from ..results import Outcome, scrub_outcome, write_outcomes
from .models import BatchRequest, ProviderBatch
from .requests import parse_custom_id, previous_stage

GROUP = 500  # lines per transaction
MAX_LISTED = 200  # refused lines listed in the report (all are counted)


@dataclass
class Report:
    stored: int = 0  # results written (final outcomes)
    stage1_kept: int = 0  # answers kept for the kind's next stage (annotate: stage 1 for stage 2)
    failed: int = 0  # requests the provider failed or expired (left for a retry)
    already: int = 0  # lines whose request had been ingested before (a second poll, a redelivery)
    refused: list = field(default_factory=list)  # (line, reason)
    refused_count: int = 0
    # What the failures mean for the run (inference.batch.pauses): an answer every request gets
    # (401/403, 404: (reason, message) of the first), failures that count towards pausing it (not an
    # expiry, not a 4xx about the item itself) and how many of those were transient (429, 5xx).
    fatal: tuple[str, str] | None = None
    counted: int = 0
    transient: int = 0
    last_failure: str = ""

    def refuse(self, line: ResultLine, reason: str) -> None:
        self.refused_count += 1
        if len(self.refused) < MAX_LISTED:
            self.refused.append({"line": line.line_no, "file": line.source, "reason": reason})

    def failure(self, failure: dict, text: str) -> None:
        status = failure.get("status") if isinstance(failure.get("status"), int) else None
        if status is not None and fatal_status(status):
            self.fatal = self.fatal or (fatal_reason(status), text)
        elif failure.get("code") != "batch_expired" and not item_specific(text, {"error": {"code": failure.get("code")}}):
            self.counted += 1
            self.transient += int(status is not None and retryable_status(status))
            self.last_failure = text

    def as_dict(self) -> dict:
        return {"stored": self.stored, "stage1_kept": self.stage1_kept, "failed": self.failed, "already": self.already,
                "refused_count": self.refused_count, "refused": self.refused}


def ingest_lines(batch: ProviderBatch, lines: Iterable[ResultLine]) -> Report:
    run = Run.objects.get(pk=batch.run_id)
    kind = kinds.bind(run)
    expected = set(BatchRequest.objects.filter(batch=batch).values_list("item_id", flat=True))
    report, seen, group = Report(), {}, []
    for line in lines:
        item_id = _check(batch, line, expected, seen, report)
        if item_id is not None:
            group.append((item_id, line))
        if len(group) >= GROUP:
            _store(run, kind, batch, group, report)
            group = []
    if group:
        _store(run, kind, batch, group, report)
    return report


def _check(batch: ProviderBatch, line: ResultLine, expected: set, seen: dict, report: Report) -> int | None:
    if line.problem:
        report.refuse(line, line.problem)
        return None
    parsed = parse_custom_id(line.custom_id)
    if parsed is None or parsed[0] != batch.run_id or parsed[2] != batch.stage or parsed[1] not in expected:
        report.refuse(line, f"unknown custom_id {str(line.custom_id)[:120]!r}: not a request of this batch")
        return None
    if line.custom_id in seen:
        report.refuse(line, f"duplicate custom_id {line.custom_id!r} (first on line {seen[line.custom_id]})")
        return None
    seen[line.custom_id] = line.line_no
    return parsed[1]


def _store(run: Run, kind: kinds.Kind, batch: ProviderBatch, group: list, report: Report) -> None:
    ids = [item_id for item_id, _ in group]
    earlier = previous_stage(run, batch.stage)
    with transaction.atomic():
        rows = {
            r.item_id: r
            for r in BatchRequest.objects.select_for_update().filter(batch=batch, state=BatchRequest.SUBMITTED, item_id__in=ids)
        }
        kept_rows = {}
        if earlier:  # a later stage: the earlier stage's kept answers and tokens
            kept_rows = {
                i: (reply, t_in, t_out)
                for i, reply, t_in, t_out in BatchRequest.objects.filter(run=run, stage=earlier, item_id__in=list(rows)).values_list(
                    "item_id", "reply", "tokens_in", "tokens_out")
            }
        outs, changed = [], []
        for item_id, line in group:
            row = rows.pop(item_id, None)
            if row is None:
                report.already += 1
                continue
            if line.failure is not None:
                row.state, row.error = BatchRequest.FAILED, _failure_text(line.failure)
                report.failed += 1
                report.failure(line.failure, row.error)
                changed.append(row)
                continue
            out = Outcome(item_id=item_id, image_id=row.image_id, outcome="error")
            row.state, row.error = BatchRequest.DONE, ""
            row.tokens_in, row.tokens_out = line.reply.tokens_in, line.reply.tokens_out
            carry = None
            if earlier:
                carry, out.tokens_in, out.tokens_out = kept_rows[item_id]
            carry = kind.apply(batch.stage, out, line.reply, carry)
            if carry is None:
                outs.append(scrub_outcome(out))
            else:
                row.reply = scrub(carry)  # kept until the next stage is back; a model may echo a secret
                report.stage1_kept += 1
            changed.append(row)
        _save_states(changed)
        if outs:
            written, duplicates = write_outcomes(run, outs, kind)
            report.stored += written
            report.already += duplicates


def _save_states(rows: list) -> None:
    """One UPDATE per distinct set of values (bulk_update's CASE per row is slow on SQLite); rows with a
    kept stage-1 reply one by one."""
    groups: dict[tuple, list[int]] = {}
    for row in rows:
        if row.reply:
            BatchRequest.objects.filter(pk=row.pk).update(state=row.state, error=row.error, reply=row.reply,
                                                          tokens_in=row.tokens_in, tokens_out=row.tokens_out)
        else:
            groups.setdefault((row.state, row.error, row.tokens_in, row.tokens_out), []).append(row.pk)
    for (state, error, tokens_in, tokens_out), pks in groups.items():
        BatchRequest.objects.filter(pk__in=pks).update(state=state, error=error, tokens_in=tokens_in, tokens_out=tokens_out)


def _failure_text(failure: dict) -> str:
    parts = [p for p in (failure.get("code"), failure.get("message")) if p]
    status = failure.get("status")
    return scrub((f"HTTP {status}: " if status else "") + (": ".join(parts) or "the provider reported a failure")[:2000])
