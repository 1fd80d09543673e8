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

from . import multiplicity
from .metrics import prediction_row


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


FIGURES = ("agreement", "kappa", "pabak", "ac1", "weighted_kappa", "strict", "fleiss_kappa", "nominal_binary", "ordinal_three_valued",
           "binary", "three_valued")
CI_NOTE = ("Intervals: image-level cluster bootstrap, percentile 95% ({resamples} resamples of the population's images; "
           "every item of a drawn image goes with it). PABAK = 2·p_o − 1; Gwet's AC1 uses chance agreement "
           "Σ π_q(1 − π_q)/(k − 1): both stay informative for rare attributes, where κ falls towards 0.")


def with_ci(figures: dict, ci: dict | None) -> dict:
    """Each figure as {"value", "lo", "hi"} where the study has an interval for it."""
    out = dict(figures)
    for name in FIGURES:
        if name in out and ci and name in ci:
            out[name] = {"value": out[name], "lo": ci[name]["lo"], "hi": ci[name]["hi"]}
    return out


class PValue(float):
    """A p-value: pages print it with two significant digits below 0.001, so a small p never reads as 0.000."""


def p_value(value):
    """A p-value for a table cell: None and printed bounds ("< 1/N") as they are."""
    return value if value is None or isinstance(value, str) else PValue(value)


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


PAIR_DETAIL = [("pairwise_acc", "pairwise acc."), ("pairwise_ties", "pairwise tie share"), ("pairwise_acc_strict", "pairwise acc., ties wrong"),
               ("inter_acc", "inter-level acc."), ("inter_ties", "inter-level tie share"), ("inter_acc_strict", "inter-level acc., ties wrong"),
               ("intra_acc", "intra-level acc."), ("intra_ties", "intra-level tie share"), ("intra_acc_strict", "intra-level acc., ties wrong")]
RANK_COLUMNS = [("pearson", "Pearson r"), ("spearman", "Spearman ρ"), ("mae", "MAE"), ("bias", "bias"), ("level_acc", "level acc.")] + PAIR_DETAIL


def _run_cells(run) -> dict:
    return {"run": Link(f"#{run.pk}", reverse("scoring:run", args=[run.pk])), "model": f"{run.provider}/{run.model_name}",
            "strategy": run.strategy + (" + cf. faces" if run.counterfactual_faces else "")
            + (f" + pixel faces ({run.face_variant.get('method', '')})" if getattr(run, "face_variant", None) else ""),
            "prompt_version": run.prompt_version,
            "stand_in": "yes" if getattr(run, "stand_in", False) else "", "endpoint": getattr(run, "endpoint", ""),
            "provenance": getattr(run, "provenance", "real")}


def comparison_table(data: dict, run_a, run_b, adjust: str = "holm") -> Table:
    labels = dict(RANK_COLUMNS)
    resamples = data["resamples"]
    adjusted = multiplicity.adjust([r["p_value"] for r in data["rows"]], adjust, floor=1 / resamples if resamples else 0.0)
    rows = [{"metric": labels.get(r["metric"], r["metric"]), "a": r["a"], "b": r["b"],
             "difference": {"value": r["difference"], "lo": r["lo"], "hi": r["hi"]},
             "p_value": p_value(multiplicity.resampling_p(r["p_value"], resamples)), "p_adjusted": p_value(p_adj),
             "defined": r["defined"]} for r, p_adj in zip(data["rows"], adjusted)]
    coverage = data.get("coverage") or {}
    cov = lambda v: "—" if v is None else f"{100 * v:.1f}%"  # noqa: E731
    method = multiplicity.METHODS[adjust]
    return Table("comparison", f"Run #{run_a.pk} − run #{run_b.pk} on their {data['n_common']:,} common images",
                 [("metric", "metric"), ("a", f"#{run_a.pk}"), ("b", f"#{run_b.pk}"), ("difference", "A − B [95% CI]"),
                  ("p_value", "p (paired bootstrap, two-sided, raw)"), ("p_adjusted", f"p ({method}, {len(rows)} metrics)"),
                  ("defined", "resamples defined")], rows,
                 note=f"Test: paired bootstrap, {resamples} resamples of the common images (the same resamples for both "
                      f"runs); p is twice the smaller share of differences on either side of 0, a resampling p-value: "
                      f"'< 1/{resamples}' where no resample crossed 0. Adjusted across the family of {len(rows)} metrics with "
                      f"{method} (a bound of 1/{resamples} enters the adjustment as 1/{resamples}). Coverage: run A "
                      f"{cov(coverage.get('a'))}, run B {cov(coverage.get('b'))} of their images with ground truth. For MAE "
                      "a negative difference favours A.")


def calibration_table(name: str, title: str, rows: list[dict], resamples: int, adjust: str = "holm") -> Table:
    adjusted = multiplicity.adjust([r["p_value"] for r in rows], adjust)
    shown = [{**r, "difference": r["difference"] if r["difference"] is None else {"value": r["difference"], "lo": r["lo"], "hi": r["hi"]},
              "p_value": p_value(r["p_value"]), "p_adjusted": p_value(p_adj)} for r, p_adj in zip(rows, adjusted)]
    method = multiplicity.METHODS[adjust]
    return Table(name, title, [("attribute", "attribute"), ("level", "level"), ("n", "images"), ("model_rate", "model positive rate"),
                               ("reference_rate", "reference positive rate"), ("difference", "difference (model − reference) [95% CI]"),
                               ("model_only", "yes by the model only"), ("reference_only", "yes by the reference only"),
                               ("p_value", "p (exact McNemar, raw)"), ("p_adjusted", f"p ({method})"), ("defined", "resamples defined")], shown,
                 note=f"Binarised labels (0.5 → 0). A positive difference is over-prediction. The interval is a percentile "
                      f"bootstrap over images ({resamples} resamples); the p-value is the exact McNemar test on the images where "
                      "the two labels differ (a binomial test at 1/2), so it asks whether the model says yes more or less often "
                      f"than the reference. Adjusted with {method} across the family of this table's "
                      f"{sum(r['p_value'] is not None for r in rows)} attribute tests.")


def run_metrics_table(report: dict) -> Table:
    metrics_ = report["metrics"]
    rows = [{"metric": label, "estimate": metrics_[key], "defined": (metrics_.get(key) or {}).get("defined")}
            for key, label in RANK_COLUMNS if key in metrics_]
    boot = report.get("bootstrap", {})
    return Table("metrics", "Severity metrics", [("metric", "metric"), ("estimate", "estimate [95% CI]"), ("defined", "resamples defined")], rows,
                 note=f"Bootstrap: {boot.get('resamples')} resamples of the images, drawn once (seed {boot.get('seed')}) and shared "
                      "by every metric; percentile intervals. 'Resamples defined' counts the resamples in which the metric "
                      "exists (Pearson does not on a constant resample; intra-level accuracy needs two images of one level); "
                      "the interval uses only those. Pairwise accuracies count a tie in the prediction as ½; the tie share and "
                      "the accuracy with ties counted wrong stand beside each.")


def significance_table(report: dict) -> Table:
    """Is the run's ranking better than chance? One row per pair family, naming the test used."""
    sig = report.get("significance") or {}
    alpha = sig.get("alpha", 0.05)
    rows = []
    for key, label, metric in (("intra", "intra-level ranking", "intra_acc"), ("inter", "inter-level ranking", "inter_acc")):
        test = sig.get(key) or {}
        significant = test.get("significant")
        rows.append({"ranking": label, "accuracy": report.get("metrics", {}).get(metric), "p_value": p_value(test.get("p_value")),
                     "verdict": None if significant is None else ("above chance" if significant else "not shown above chance"),
                     "method": test.get("note") or ("not computed" if test.get("method") in (None, "none") else test["method"])})
    return Table("significance", "Ranking better than chance?",
                 [("ranking", "pairs"), ("accuracy", "accuracy [95% CI]"), ("p_value", "p (one-sided)"),
                  ("verdict", f"at α = {alpha:g}"), ("method", "test")], rows,
                 note="Null hypothesis: the predictions carry no information about the order of the images (within a "
                      "ground-truth level for intra-level pairs). 'Not shown above chance' is not evidence of chance ranking.")


def sensitivity_table(data: dict) -> Table:
    columns = [("name", "weight set"), ("weights", "weights"), ("lo", "boundaries lo1, lo2, lo3"), ("n", "images")]
    for key, label in METRIC_COLUMNS:
        columns += [(key, label), (f"{key}_range", f"{label}: spread")]
    return Table("sensitivity", "Sensitivity to the weight set", columns, data["rows"],
                 note=f"Point metrics of this run under each candidate: {data['candidates']}. {data['published']} of the "
                      f"{data['images']} images have a published score and level, which no weight set changes; the others' "
                      "ground truth is their consensus score under the candidate, and predicted levels follow the candidate's "
                      "boundaries. 'Spread' is the largest minus the smallest value across the candidates: a figure whose spread "
                      "is large is not determined by the data.")


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
    return with_image_links([prediction_row(points, i, pred_levels[i]) for i in range(len(points["image_id"]))], vispr)


def with_image_links(rows: list[dict], vispr: dict) -> list[dict]:
    """Prediction rows with their image's name linked to its review page. One URL is reversed and the ids put
    in: reverse() for each of 20,000 rows took most of a run's download (bench/run_page.py)."""
    review = reverse("scoring:review", args=[0])
    head, tail = review.rsplit("/0/", 1)
    return [{"image": Link(vispr.get(r["image_id"], str(r["image_id"])), f"{head}/{r['image_id']}/{tail}"), **r} for r in rows]


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
        against, ci = comparison["against"], comparison.get("ci") or {}
        rows.append({"against": against, "attribute": "all", "level": None, **with_ci(comparison["overall"], ci.get("overall"))})
        for level, s in comparison["levels"].items():
            rows.append({"against": against, "attribute": f"level {level}", "level": int(level),
                         **with_ci(s, (ci.get("levels") or {}).get(level))})
        for key, s in comparison["attributes"].items():
            rows.append({"against": against, "attribute": key, "level": None, **with_ci(s, (ci.get("attributes") or {}).get(key))})
    columns = [("against", "compared with"), ("attribute", "attribute"), ("n", "items"), ("agreement", "agreement"), ("kappa", "Cohen's κ"),
               ("pabak", "PABAK"), ("ac1", "Gwet's AC1")]
    return Table("attributes", "Model annotator agreement per attribute", columns, rows,
                 note=CI_NOTE.format(resamples=(data or {}).get("resamples", 0)))
