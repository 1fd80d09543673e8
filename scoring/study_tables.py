"""The tables of the label-study pages (agreement, disagreements, counterfactual faces), built from the
services' plain data as `scoring.tables.Table`s (the page, CSV and JSON downloads share them)."""
from __future__ import annotations

from django.urls import reverse

from .agreement import VISPR_GROUP
from .tables import Link, Table, paper_reference


# ---------------------------------------------------------------------------------------------
# Agreement

AGREEMENT_COLUMNS = [("n", "items"), ("agreement", "agreement"), ("kappa", "Cohen's κ"), ("weighted_kappa", "weighted κ (3 values)")]


def _paper_human_human() -> dict:
    for p in paper_reference()["annotator_agreement"]:
        if p["a"].lower().startswith("human") and p["b"].lower().startswith("human"):
            return {"paper_agreement": p["agreement"], "paper_kappa": p["cohen_kappa"]}
    return {}


def agreement_tables(report: dict, level_of: dict) -> list[Table]:
    study = report.get("human_study", {})
    study_note = (f"Human study population: {study.get('images', 0)} of {study.get('all_images', 0)} images have at least two "
                  "human labelings; every figure involving humans uses those images only.")
    summary = []
    hh = report.get("human_human", {}).get("overall", {})
    if hh.get("n"):
        summary.append({"source": "ours", "a": "humans", "b": "humans", "group": "human-human", "n": hh["n"],
                        "agreement": hh["strict"], "agreement_kind": "strict consensus (all humans agree)",
                        "kappa": hh["fleiss_kappa"], "kappa_kind": "Fleiss' κ", **_paper_human_human()})
    for row in report["vs_majority"]:
        summary.append({"source": "ours", "a": row["a"], "b": row["b"], "group": row["group"], "n": row["overall"]["n"],
                        "agreement": row["overall"]["agreement"], "agreement_kind": "percent agreement",
                        "kappa": row["overall"]["kappa"], "kappa_kind": "Cohen's κ"})
    for row in report["pairs"]:
        if row["group"] == "model-model" or VISPR_GROUP in row["group"]:
            summary.append({"source": "ours", "a": row["a"], "b": row["b"], "group": row["group"], "n": row["overall"]["n"],
                            "agreement": row["overall"]["agreement"], "agreement_kind": "percent agreement",
                            "kappa": row["overall"]["kappa"], "kappa_kind": "Cohen's κ"})
    head = [("source", "source"), ("a", "annotator"), ("b", "compared with"), ("group", "group"), ("n", "items"),
            ("agreement", "agreement"), ("agreement_kind", "agreement is"), ("kappa", "κ"), ("kappa_kind", "κ is")]
    summary_head = head + [("paper_agreement", "paper: agreement"), ("paper_kappa", "paper: κ")]
    paper = []
    for p in paper_reference()["annotator_agreement"]:
        humans = sum(name.lower().startswith("human") for name in (p["a"], p["b"]))
        # Both sides human: Appendix D's strict rate; one side: the model against the human majority; neither: two models.
        kind = ("agreement between the two models", "agreement with the human majority", "strict consensus (Appendix D)")[humans]
        paper.append({"source": "paper Table 2", "a": p["a"], "b": p["b"], "group": "published", "n": None,
                      "agreement": p["agreement"], "agreement_kind": kind,
                      "kappa": p["cohen_kappa"], "kappa_kind": "multi-rater κ, kind not stated" if humans == 2 else "Cohen's κ"})
    tables = [
        Table("summary", "Agreement as the paper measured it", summary_head, summary,
              note="Human-human: the share of items on which every human gave the same label (the paper's 87.4%) and "
                   "Fleiss' kappa (the paper does not name its multi-rater kappa). Models are compared with the human "
                   "majority (two or more humans; an even split gives 0). " + study_note),
        Table("paper", "The paper's Table 2 (its own images and annotators, not recomputed)", head, paper),
    ]
    hh_rows = [{"scope": "all items", **hh}] if hh else []
    for lv, s_ in report.get("human_human", {}).get("levels", {}).items():
        hh_rows.append({"scope": f"level {lv}", **s_})
    for key, s_ in report.get("human_human", {}).get("attributes", {}).items():
        hh_rows.append({"scope": key, **s_})
    tables.append(Table("human_human", "Human-human: strict consensus and Fleiss' κ",
                        [("scope", "scope"), ("n", "items with ≥ 2 human labels"), ("strict", "strict consensus"),
                         ("fleiss_kappa", "Fleiss' κ")], hh_rows, note=study_note))
    pairs = [{"a": r["a"], "b": r["b"], "group": r["group"], **r["overall"]} for r in report["pairs"]]
    tables.append(Table("pairs", "Every annotator pair (Cohen's κ)", [("a", "annotator"), ("b", "annotator"), ("group", "group")] + AGREEMENT_COLUMNS,
                        pairs, note="Pairs involving a human use the human study images only."))

    comparisons = [(f"{r['a']} vs {r['b']}", r) for r in report["vs_majority"]]
    comparisons += [(f"{r['a']} vs {r['b']}", r) for r in report["pairs"]]
    per_attr, per_level = [], []
    for name, data in comparisons:
        for key, s_ in data["attributes"].items():
            per_attr.append({"comparison": name, "attribute": key, "level": level_of.get(key), **s_})
        for level, s_ in data["levels"].items():
            per_level.append({"comparison": name, "level": int(level), **s_})
    tables.append(Table("per_attribute", "Agreement per attribute",
                        [("comparison", "comparison"), ("attribute", "attribute"), ("level", "level")] + AGREEMENT_COLUMNS, per_attr))
    tables.append(Table("per_level", "Agreement per level", [("comparison", "comparison"), ("level", "level")] + AGREEMENT_COLUMNS, per_level))

    vispr = [(name, data) for name, data in comparisons if VISPR_GROUP in data["group"]]
    vispr_rows = []
    for name, data in vispr:
        vispr_rows.append({"comparison": name, "group": data["group"], "attribute": "all attributes", "level": None, **data["overall"]})
        vispr_rows += [{"comparison": name, "group": data["group"], "attribute": key, "level": level_of.get(key), **s_}
                       for key, s_ in data["attributes"].items() if s_["n"]]
    tables.append(Table("vispr", "Against VISPR's own labels (model vs VISPR, human vs VISPR), per attribute",
                        [("comparison", "comparison"), ("group", "group"), ("attribute", "attribute"), ("level", "level")] + AGREEMENT_COLUMNS,
                        vispr_rows,
                        note="VISPR's labels mapped onto the CPRT attributes by the project's mapping file (the VISPR mapping page); "
                             "an attribute no VISPR attribute covers has no VISPR label and no row. Pairs with a human use the human "
                             "study images only."))

    sc = report["strict_consensus"]
    strict = [{"scope": "all items", **sc["overall"]}]
    strict += [{"scope": f"level {lv}", **s_} for lv, s_ in sc["levels"].items()]
    strict += [{"scope": key, **s_} for key, s_ in sc["attributes"].items()]
    tables.append(Table("strict_consensus", "Human strict consensus rate, binarised and three-valued",
                        [("scope", "scope"), ("n", "items with ≥ 2 human labels"), ("binary", "all agree (binarised)"),
                         ("three_valued", "all agree (0 / 0.5 / 1)")], strict))
    tables.append(Table("krippendorff", "Krippendorff's α per annotator kind",
                        [("annotators_kind", "annotators"), ("annotators", "how many"), ("images", "images"), ("items", "items"),
                         ("nominal_binary", "α nominal (binarised)"), ("ordinal_three_valued", "α ordinal (three-valued)")],
                        report["krippendorff"],
                        note="Items that at least two annotators of the group labelled. Humans (and humans with models) on the "
                             "human study images; imported ground truth is never mixed in."))
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
