"""Tables as data: what the pages show and what the CSV / JSON downloads contain, from one source.

A Table is a name, a title, ordered columns and rows of plain values. A value may be a number, a
string, a bool, None, a list, a confidence interval ({"value", "lo", "hi"}) or a Link. The page
renders them with the `cell` filter; CSV spreads an interval over three columns (x, x_lo, x_hi).
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from django.urls import reverse


@dataclass(frozen=True)
class Link:
    text: str
    url: str

    def __str__(self):
        return self.text


@dataclass
class Table:
    name: str
    title: str
    columns: list[tuple[str, str]]  # (key, header)
    rows: list[dict] = field(default_factory=list)
    note: str = ""
    download_only: bool = False

    def cells(self):
        """Rows as lists in column order (for templates)."""
        return [[row.get(key) for key, _ in self.columns] for row in self.rows]


def is_interval(value) -> bool:
    return isinstance(value, dict) and "value" in value and "lo" in value and "hi" in value


def _plain(value):
    if isinstance(value, Link):
        return value.text
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _csv_cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        value = "; ".join(str(_plain(v)) for v in value)
    text = str(_plain(value))
    # Spreadsheet formula injection: a text cell must not start with a formula character.
    if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        text = "'" + text
    return text


def to_csv(table: Table) -> str:
    interval_keys = {key for key, _ in table.columns if any(is_interval(row.get(key)) for row in table.rows)}
    header = []
    for key, _ in table.columns:
        header += [key, f"{key}_lo", f"{key}_hi"] if key in interval_keys else [key]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in table.rows:
        line = []
        for key, _ in table.columns:
            value = row.get(key)
            if key in interval_keys:
                value = value if is_interval(value) else {"value": value, "lo": None, "hi": None}
                line += [_csv_cell(value["value"]), _csv_cell(value["lo"]), _csv_cell(value["hi"])]
            else:
                line.append(_csv_cell(value))
        writer.writerow(line)
    return out.getvalue()


def to_json(tables: list[Table], meta: dict | None = None) -> dict:
    return {
        "meta": meta or {},
        "tables": {
            t.name: {"title": t.title, "note": t.note, "columns": [k for k, _ in t.columns],
                     "rows": [{k: _plain(row.get(k)) for k, _ in t.columns} for row in t.rows]}
            for t in tables
        },
    }


# =============================================================================================
# The tables of each page, built from the services' plain data.

PAPER_FILE = Path(__file__).resolve().parent / "data" / "paper_reference.json"
METRIC_COLUMNS = [
    ("pearson", "Pearson r"), ("spearman", "Spearman ρ"), ("mae", "MAE"), ("bias", "bias"), ("level_acc", "level acc."),
    ("pairwise_acc", "pairwise acc."), ("inter_acc", "inter-level acc."), ("intra_acc", "intra-level acc."),
]
LOWER_IS_BETTER = {"mae", "bias"}


@lru_cache(maxsize=1)
def paper_reference() -> dict:
    """The paper's published tables (a copy of the spec's paper-reference.json)."""
    return json.loads(PAPER_FILE.read_text(encoding="utf-8"))


def _value(v):
    return v["value"] if is_interval(v) else v


def _sort_key(metric: str):
    def key(row):
        v = _value(row.get(metric))
        if v is None:
            return (1, 0.0)
        if metric == "bias":
            return (0, abs(v))
        return (0, v if metric in LOWER_IS_BETTER else -v)

    return key


def leaderboard(runs, reports: dict, strategy: str, sort: str) -> Table:
    rows = []
    for run in runs:
        r = reports.get(run.pk) or {}
        m = r.get("metrics", {})
        n_results = r.get("n_results") or 0
        rows.append({
            "source": "ours", "run": Link(f"#{run.pk}", reverse("scoring:run", args=[run.pk])),
            "model": f"{run.provider}/{run.model_name}", "strategy": run.strategy,
            "counterfactual_faces": run.counterfactual_faces, "prompt_version": run.prompt_version,
            "anonymized_images": run.face_variant.get("method", "") if run.face_variant else "",
            "n_valid": r.get("n_valid"), "coverage": (r.get("n_valid", 0) / n_results) if n_results else None,
            "excluded_rate": r.get("excluded_rate"), "refusal_rate": r.get("refusal_rate"),
            **{k: m.get(k) for k, _ in METRIC_COLUMNS},
        })
    for p in paper_reference()["severity_metrics"]:
        if strategy and p["strategy"] != strategy:
            continue
        rows.append({
            "source": "published", "run": None, "model": p["model"], "strategy": p["strategy"], "counterfactual_faces": False,
            "anonymized_images": "", "prompt_version": "paper", "n_valid": None, "coverage": None, "excluded_rate": None, "refusal_rate": None,
            **{k: p.get(k) for k, _ in METRIC_COLUMNS},
        })
    rows.sort(key=_sort_key(sort))
    columns = [("source", "source"), ("run", "run"), ("model", "model"), ("strategy", "strategy"),
               ("counterfactual_faces", "cf. faces"), ("anonymized_images", "pixel faces"), ("prompt_version", "prompt"), ("n_valid", "n"),
               ("coverage", "coverage"), ("excluded_rate", "excluded"), ("refusal_rate", "refused"), *METRIC_COLUMNS]
    return Table("leaderboard", "Finished judge runs", columns, rows,
                 note="Intervals are bootstrap 95% CIs. 'published' rows are the paper's Table 3/6 values (its own "
                      "curated pairs for the pairwise accuracies), not recomputed.")


def run_metrics_table(report: dict) -> Table:
    rows = [{"metric": label, "estimate": report["metrics"][key]} for key, label in METRIC_COLUMNS]
    boot = report.get("bootstrap", {})
    return Table("metrics", "Severity metrics", [("metric", "metric"), ("estimate", "estimate [95% CI]")], rows,
                 note=f"Bootstrap: {boot.get('resamples')} resamples ({boot.get('pairwise_resamples')} for the pairwise "
                      f"accuracies), percentile intervals, seed {boot.get('seed')}.")


def excluded_table(report: dict) -> Table:
    n = report["n_results"]
    rows = [{"outcome": k, "count": v, "rate": v / n if n else None} for k, v in report["excluded"].items()]
    rows.append({"outcome": "all excluded", "count": report["excluded_count"], "rate": report["excluded_rate"]})
    rows.append({"outcome": "no ground truth (not counted)", "count": report.get("without_ground_truth", 0), "rate": None})
    return Table("excluded", "Excluded predictions", [("outcome", "outcome"), ("count", "count"), ("rate", "rate")], rows)


def confusion_table(report: dict) -> Table:
    labels = report["confusion"]["labels"]
    rows = [{"gt_level": f"level {lv}", **{f"pred_{p}": c for p, c in zip(labels, row)}, "total": sum(row)}
            for lv, row in zip(labels, report["confusion"]["matrix"])]
    columns = [("gt_level", "ground truth ↓ / predicted →")] + [(f"pred_{p}", f"level {p}") for p in labels] + [("total", "total")]
    return Table("confusion", "Level confusion matrix", columns, rows)


def per_level_table(report: dict) -> Table:
    columns = [("level", "GT level"), ("n", "n"), ("mean_gt", "mean GT"), ("mean_pred", "mean predicted"),
               ("mae", "MAE"), ("bias", "bias"), ("level_acc", "level acc.")]
    return Table("per_level", "Error per ground-truth level", columns, report["per_level"])


def binary_table(report: dict, threshold: int) -> Table:
    entry = report["binary"][str(threshold)]
    names = [("accuracy", "accuracy"), ("balanced_accuracy", "balanced accuracy"),
             ("precision_private", "precision (private)"), ("recall_private", "recall (private)"), ("f1_private", "F1 (private)"),
             ("precision_public", "precision (public)"), ("recall_public", "recall (public)"), ("f1_public", "F1 (public)")]
    rows = [{"metric": label, "estimate": entry[key]} for key, label in names]
    rows.append({"metric": "images private / public", "estimate": f"{entry['support_private']} / {entry['support_public']}"})
    return Table("binary", f"Binary view: levels 1–{threshold} private", [("metric", "metric"), ("estimate", "estimate [95% CI]")], rows)


def prediction_rows(points: dict, vispr: dict, pred_levels) -> list[dict]:
    rows = []
    for i, image_id in enumerate(points["image_id"].tolist()):
        pred = points["pred"][i]
        ok = points["outcome"][i] == "ok" and pred == pred
        rows.append({
            "image": Link(vispr.get(image_id, str(image_id)), reverse("scoring:review", args=[image_id])),
            "image_id": image_id, "gt": float(points["gt"][i]), "gt_level": int(points["gt_level"][i]),
            "pred": float(pred) if ok else None, "pred_level": int(pred_levels[i]) if ok else None,
            "error": float(pred - points["gt"][i]) if ok else None, "outcome": points["outcome"][i],
        })
    return rows


PREDICTION_COLUMNS = [("image", "image"), ("image_id", "id"), ("gt", "GT score"), ("gt_level", "GT level"),
                      ("pred", "predicted"), ("pred_level", "predicted level"), ("error", "error"), ("outcome", "outcome")]


def predictions_table(rows: list[dict]) -> Table:
    return Table("predictions", "Every prediction", PREDICTION_COLUMNS, rows, download_only=True)


def extremes_table(rows: list[dict], k: int = 10) -> Table:
    valid = [r for r in rows if r["error"] is not None]
    # Split by the sign of the error (predicted - ground truth): an image is under- or over-estimated, never both,
    # and an exact prediction is neither.
    under = sorted((r for r in valid if r["error"] < 0), key=lambda r: r["error"])[:k]
    over = sorted((r for r in valid if r["error"] > 0), key=lambda r: -r["error"])[:k]
    out = [{"kind": "under-estimated", **r} for r in under] + [{"kind": "over-estimated", **r} for r in over]
    return Table("extremes", f"Most under- and over-estimated images (top {k} each)", [("kind", "")] + PREDICTION_COLUMNS, out)


def annotate_attributes_table(data: dict | None) -> Table:
    rows = []
    for comparison in (data or {}).get("comparisons", []):
        against = comparison["against"]
        rows.append({"against": against, "attribute": "all", "level": None, **comparison["overall"]})
        for level, s in comparison["levels"].items():
            rows.append({"against": against, "attribute": f"level {level}", "level": int(level), **s})
        for key, s in comparison["attributes"].items():
            rows.append({"against": against, "attribute": key, "level": None, **s})
    columns = [("against", "compared with"), ("attribute", "attribute"), ("n", "items"), ("agreement", "agreement"), ("kappa", "Cohen's κ")]
    return Table("attributes", "Model annotator agreement per attribute", columns, rows)


# ---------------------------------------------------------------------------------------------
# Agreement

AGREEMENT_COLUMNS = [("n", "items"), ("agreement", "agreement"), ("kappa", "Cohen's κ"), ("weighted_kappa", "weighted κ (3 values)")]


def agreement_tables(report: dict, level_of: dict) -> list[Table]:
    summary = []
    if report.get("human_pooled"):
        summary.append({"source": "ours", "a": "human", "b": "human", "group": "human-human (all pairs pooled)", **report["human_pooled"]["overall"]})
    for row in report["vs_majority"]:
        summary.append({"source": "ours", "a": row["a"], "b": row["b"], "group": row["group"], **row["overall"]})
    for row in report["pairs"]:
        if row["group"] != "human-human":
            summary.append({"source": "ours", "a": row["a"], "b": row["b"], "group": row["group"], **row["overall"]})
    for p in paper_reference()["annotator_agreement"]:
        summary.append({"source": "published", "a": p["a"], "b": p["b"], "group": "paper Table 2", "n": None,
                        "agreement": p["agreement"], "kappa": p["cohen_kappa"], "weighted_kappa": None})
    head = [("source", "source"), ("a", "annotator"), ("b", "compared with"), ("group", "group")]
    tables = [Table("summary", "Agreement summary", head + AGREEMENT_COLUMNS, summary,
                    note="Models are compared with the human majority vote (an even split gives 0). 'published' rows "
                         "are the paper's Table 2; its human set and images differ from ours.")]
    pairs = [{"a": r["a"], "b": r["b"], "group": r["group"], **r["overall"]} for r in report["pairs"]]
    tables.append(Table("pairs", "Every annotator pair", [("a", "annotator"), ("b", "annotator"), ("group", "group")] + AGREEMENT_COLUMNS, pairs))

    comparisons = []
    if report.get("human_pooled"):
        comparisons.append(("human-human (pooled)", report["human_pooled"]))
    comparisons += [(f"{r['a']} vs {r['b']}", r) for r in report["vs_majority"]]
    comparisons += [(f"{r['a']} vs {r['b']}", r) for r in report["pairs"] if r["group"] != "human-human"]
    per_attr, per_level = [], []
    for name, data in comparisons:
        for key, s in data["attributes"].items():
            per_attr.append({"comparison": name, "attribute": key, "level": level_of.get(key), **s})
        for level, s in data["levels"].items():
            per_level.append({"comparison": name, "level": int(level), **s})
    tables.append(Table("per_attribute", "Agreement per attribute",
                        [("comparison", "comparison"), ("attribute", "attribute"), ("level", "level")] + AGREEMENT_COLUMNS, per_attr))
    tables.append(Table("per_level", "Agreement per level", [("comparison", "comparison"), ("level", "level")] + AGREEMENT_COLUMNS, per_level))

    sc = report["strict_consensus"]
    strict = [{"scope": "all items", **sc["overall"]}]
    strict += [{"scope": f"level {lv}", **s} for lv, s in sc["levels"].items()]
    strict += [{"scope": key, **s} for key, s in sc["attributes"].items()]
    tables.append(Table("strict_consensus", "Human strict consensus rate",
                        [("scope", "scope"), ("n", "items with ≥ 2 human labels"), ("binary", "all agree (binarised)"),
                         ("three_valued", "all agree (0 / 0.5 / 1)")], strict))
    k = report["krippendorff"]
    tables.append(Table("krippendorff", "Krippendorff's α (images with more than two annotators)",
                        [("images", "images"), ("items", "items"), ("nominal_binary", "α nominal (binarised)"),
                         ("ordinal_three_valued", "α ordinal (three-valued)")], [k]))
    return tables


# ---------------------------------------------------------------------------------------------
# Disagreements and counterfactual faces


def disagreement_table(rows: list[dict], vispr: dict, current: dict, names: dict) -> Table:
    out = []
    for r in rows:
        score = current.get(r["image_id"])
        out.append({
            "image": Link(vispr.get(r["image_id"], str(r["image_id"])), reverse("scoring:review", args=[r["image_id"]])),
            "image_id": r["image_id"], "disputed": r["disputed"], "n_disputed": r["n_disputed"],
            "level": score[0] if score else None, "score": score[1] if score else None,
            "score_lo": r["score_lo"], "score_hi": r["score_hi"], "impact": r["impact"],
            "level_lo": r["level_lo"], "level_hi": r["level_hi"], "level_changes": r["level_changes"],
            "pairs": [f"{names.get(a, a)} / {names.get(b, b)}" for a, b in r["pairs"]],
        })
    columns = [("image", "image"), ("image_id", "id"), ("disputed", "disputed attributes"), ("n_disputed", "#"),
               ("level", "level now"), ("score", "score now"), ("score_lo", "score if all 0"), ("score_hi", "score if all 1"),
               ("impact", "impact"), ("level_lo", "level if 0"), ("level_hi", "level if 1"), ("level_changes", "level can change"),
               ("pairs", "disagreeing annotators")]
    return Table("disagreements", "Images with disputed attributes", columns, out,
                 note="Disputed: binarised labels differ and no adjudication exists. Impact: the score with every disputed "
                      "attribute set to 1 minus the score with all set to 0 (undisputed attributes as agreed).")


def counterfactual_tables(data: dict, vispr_links: bool = True) -> list[Table]:
    rows = [{**r, "image": Link(r["vispr_id"] or str(r["image_id"]), reverse("scoring:review", args=[r["image_id"]]))}
            for r in sorted(data["rows"], key=lambda r: r["change"])]
    changes = Table("changes", "Per-image score change (with − without counterfactual faces)",
                    [("image", "image"), ("image_id", "id"), ("score_without", "without"), ("score_with", "with"),
                     ("change", "change"), ("collapsed", "collapsed"), ("sensitive_non_face", "sensitive non-face attributes"),
                     ("has_consensus", "has consensus")], rows)
    groups = Table("groups", "Images with sensitive non-face attributes",
                   [("attribute", "attribute"), ("images", "images"), ("collapsed", "collapsed"), ("mean_change", "mean change")],
                   data["groups"])
    return [changes, groups]
