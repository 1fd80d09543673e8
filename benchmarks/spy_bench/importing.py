"""SPY-Bench files in and out: import a benchmark set against the imported VISPR images, import
results computed elsewhere, export a run's results in upstream's evaluated-row format.

A benchmark item's `question_item.image_path` names a VISPR image by its file name
(`.../2017_10000001.jpg` -> `Image.vispr_id` 2017_10000001). An item whose image is not imported
(or has no stored bytes) is refused with the list of such items, unless the caller skips them;
what was skipped is kept on the set. Nothing is written unless the whole file is good.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import PurePosixPath

from django.db import transaction

from annotations.models import Image
from core.audit import audit

from inference.models import Run, RunResult

from . import files, metrics
from .models import SpyImport, SpyItem, SpyRow, SpySet
from .upstream import BenchmarkError, expand_item, input_question

MAX_LISTED = 10  # missing images named in the message (all are counted)


def vispr_id_of(image_path: str) -> str:
    return PurePosixPath(image_path.replace("\\", "/")).stem


def import_set(user, name: str, benchmark: bytes, label2text: bytes, skip_missing: bool = False,
               benchmark_name: str = "benchmark file", label2text_name: str = "label2text.json") -> SpySet:
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise BenchmarkError("Give the set a name (at most 200 characters).")
    if SpySet.objects.filter(name=name).exists():
        raise BenchmarkError(f"A SPY-Bench set named {name!r} exists already; choose another name.")
    texts = files.read_label2text(label2text, label2text_name)
    items = files.read_benchmark(benchmark, texts, benchmark_name)
    wanted = sorted({vispr_id_of(i["question_item"]["image_path"]) for i in items})
    images: dict[str, int] = {}
    for k in range(0, len(wanted), 900):
        images.update(Image.objects.filter(vispr_id__in=wanted[k : k + 900]).exclude(file="").values_list("vispr_id", "pk"))
    missing = [(n, i["benchmark_id"], vispr_id_of(i["question_item"]["image_path"])) for n, i in enumerate(items, 1)
               if vispr_id_of(i["question_item"]["image_path"]) not in images]
    if missing and (not skip_missing or len(missing) == len(items)):
        listed = ", ".join(f"{vid} (item {bid})" for _, bid, vid in missing[:MAX_LISTED])
        more = f" and {len(missing) - MAX_LISTED} more" if len(missing) > MAX_LISTED else ""
        hint = "" if len(missing) == len(items) else " or skip those items"
        raise BenchmarkError(f"{len(missing)} of {len(items)} benchmark items name VISPR images that are not imported (or have no "
                             f"stored bytes): {listed}{more}. Import the VISPR test images first (manage.py import_vispr){hint}.")
    skipped = {n for n, _, _ in missing}
    with transaction.atomic():
        spy_set = SpySet.objects.create(name=name, label2text=texts, created_by=user if getattr(user, "is_authenticated", False) else None,
                                        source={"benchmark": {"name": benchmark_name, "sha256": hashlib.sha256(benchmark).hexdigest()},
                                                "label2text": {"name": label2text_name, "sha256": hashlib.sha256(label2text).hexdigest()},
                                                "skipped": [{"benchmark_id": bid, "vispr_id": vid} for _, bid, vid in missing]})
        SpyItem.objects.bulk_create([
            SpyItem(spy_set=spy_set, position=n, benchmark_id=str(i["benchmark_id"]), label=i["label"],
                    image_id=images[vispr_id_of(i["question_item"]["image_path"])], source=json.dumps(i))
            for n, i in enumerate(items, 1) if n not in skipped])
        made = list(SpyItem.objects.filter(spy_set=spy_set).order_by("position"))
        rows = [SpyRow(item=item, index=index, is_privacy=row["is_privacy"], scenario=row.get("scenario", {}).get("id", ""),
                       scenario_is_privacy=row.get("scenario", {}).get("is_privacy"))
                for item in made for index, row in enumerate(expand_item(item.data))]
        SpyRow.objects.bulk_create(rows, batch_size=2000)
        audit(user, "spy.import_set", spy_set, items=len(made), rows=len(rows), skipped=len(missing))
    return spy_set


def row_of(item: SpyItem, index: int, label2text: dict, distractors: bool) -> dict:
    """The row (upstream's format) with its exact prompt."""
    row = expand_item(item.data, distractors)[index]
    row["input_question"] = input_question(row, label2text)
    return row


def run_rows(run: Run) -> list[dict]:
    """A finished (or partial) spy-bench run's results as upstream evaluated rows: `response` the
    model's answer, `eval_resp` the judge's verdict (respond, reject, or the judge's own text); an
    answer that never came (an error) is upstream's failed request: response and eval_resp empty."""
    spy_set = SpySet.objects.get(pk=run.options["set"])
    distractors = bool(run.options.get("distractors"))
    results = {r.item_id: r for r in RunResult.objects.filter(run=run)}
    out = []
    for row in SpyRow.objects.filter(pk__in=list(results)).select_related("item").order_by("item__position", "index"):
        result = results[row.pk]
        data = row_of(row.item, row.index, spy_set.label2text, distractors)
        data["response"] = result.reasoning if result.outcome == RunResult.OUTCOME_OK else (result.raw or {}).get("response", "")
        data["eval_resp"] = (result.raw or {}).get("eval_resp", "")
        out.append(data)
    return out


def import_results(user, name: str, model_name: str, data: bytes, judge_model: str = "", distractors: bool = False,
                   spy_set: SpySet | None = None, file_name: str = "evaluated file", eval_k: str = "eval_resp") -> SpyImport:
    """Evaluated rows computed elsewhere; refused (nothing stored) when the metrics cannot count them."""
    name, model_name = (name or "").strip(), (model_name or "").strip()
    if not name or not model_name:
        raise metrics.MetricsError("Give the import a name and the model that answered.")
    rows = files.read_rows(data, file_name)
    report = metrics.report(rows, eval_k)
    if eval_k != "eval_resp":
        rows = [{**r, "eval_resp": r[eval_k]} for r in rows]
    with transaction.atomic():
        imported = SpyImport.objects.create(name=name[:200], model_name=model_name[:200], judge_model=(judge_model or "")[:200],
                                            distractors=distractors, spy_set=spy_set, rows=rows, report=report,
                                            created_by=user if getattr(user, "is_authenticated", False) else None)
        audit(user, "spy.import_results", imported, rows=len(rows), model=model_name, judge=judge_model)
    return imported


def export_run(user, run: Run) -> str:
    rows = run_rows(run)
    audit(user, "spy.export", run, rows=len(rows))
    return files.write_rows(rows)
