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

from annotations import taxonomy

from .. import outcomes, schemas
from ..models import Run
from ..providers.batch_types import ResultLine
from ..schemas import Stage1Answer
from ..results import Outcome, write_outcomes
from .models import BatchRequest, ProviderBatch
from .requests import parse_custom_id

GROUP = 500  # lines per transaction
MAX_LISTED = 200  # refused lines listed in the report (all are counted)


@dataclass
class Report:
    stored: int = 0  # results written (final outcomes)
    stage1_kept: int = 0  # annotate runs: stage-1 answers kept for stage 2
    failed: int = 0  # requests the provider failed or expired (left for a retry)
    already: int = 0  # lines whose request had been ingested before (a second poll, a redelivery)
    refused: list = field(default_factory=list)  # (line, reason)
    refused_count: int = 0

    def refuse(self, line: ResultLine, reason: str) -> None:
        self.refused_count += 1
        if len(self.refused) < MAX_LISTED:
            self.refused.append({"line": line.line_no, "file": line.source, "reason": reason})

    def as_dict(self) -> dict:
        return {"stored": self.stored, "stage1_kept": self.stage1_kept, "failed": self.failed, "already": self.already,
                "refused_count": self.refused_count, "refused": self.refused}


def ingest_lines(batch: ProviderBatch, lines: Iterable[ResultLine]) -> Report:
    run = Run.objects.get(pk=batch.run_id)
    keys = taxonomy.active().keys
    attribute_ids = taxonomy.attribute_ids() if run.task == Run.TASK_ANNOTATE else {}
    expected = set(BatchRequest.objects.filter(batch=batch).values_list("image_id", flat=True))
    report, seen, group = Report(), {}, []
    for line in lines:
        image_id = _check(batch, line, expected, seen, report)
        if image_id is not None:
            group.append((image_id, line))
        if len(group) >= GROUP:
            _store(run, batch, group, keys, attribute_ids, report)
            group = []
    if group:
        _store(run, batch, group, keys, attribute_ids, report)
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


def _store(run: Run, batch: ProviderBatch, group: list, keys, attribute_ids: dict, report: Report) -> None:
    ids = [image_id for image_id, _ in group]
    with transaction.atomic():
        rows = {
            r.image_id: r
            for r in BatchRequest.objects.select_for_update().filter(batch=batch, state=BatchRequest.SUBMITTED, image_id__in=ids)
        }
        stage1_rows = {}
        if batch.stage == "stage2":
            stage1_rows = {
                i: (reply, t_in, t_out)
                for i, reply, t_in, t_out in BatchRequest.objects.filter(run=run, stage="stage1", image_id__in=list(rows)).values_list(
                    "image_id", "reply", "tokens_in", "tokens_out")
            }
        outs, changed = [], []
        for image_id, line in group:
            row = rows.pop(image_id, None)
            if row is None:
                report.already += 1
                continue
            if line.failure is not None:
                row.state, row.error = BatchRequest.FAILED, _failure_text(line.failure)
                report.failed += 1
                changed.append(row)
                continue
            out = Outcome(image_id=image_id, outcome="error")
            row.state, row.error = BatchRequest.DONE, ""
            row.tokens_in, row.tokens_out = line.reply.tokens_in, line.reply.tokens_out
            if batch.stage == "judge":
                outcomes.apply_judge(out, line.reply)
                outs.append(out)
            elif batch.stage == "stage1":
                stage1 = outcomes.apply_stage1(out, line.reply, keys, schemas.stage1_choices(run.prompt_text.get("schemas", {}).get("stage1", {})))
                if stage1 is None:
                    outs.append(out)
                else:
                    row.reply = {"record": out.raw["stage1"], "answers": stage1.model_dump()}
                    report.stage1_kept += 1
            else:
                kept, out.tokens_in, out.tokens_out = stage1_rows[image_id]
                out.raw = {"stage1": kept["record"]}
                stage1 = Stage1Answer.model_validate(kept["answers"], context={"keys": keys})
                outcomes.apply_stage2(out, stage1, line.reply, keys)
                outs.append(out)
            changed.append(row)
        _save_states(changed)
        if outs:
            written, duplicates = write_outcomes(run, outs, attribute_ids)
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
    return (f"HTTP {status}: " if status else "") + (": ".join(parts) or "the provider reported a failure")[:2000]
