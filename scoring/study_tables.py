"""The tables of the label-study pages (agreement, disagreements, counterfactual faces), built from the
services' plain data as `scoring.tables.Table`s (the page, CSV and JSON downloads share them)."""
from __future__ import annotations

from django.urls import reverse

from .agreement import VISPR_GROUP
from .tables import CI_NOTE, Link, Table, p_value, paper_reference, with_ci


# ---------------------------------------------------------------------------------------------
# Agreement

AGREEMENT_COLUMNS = [("n", "items"), ("agreement", "agreement"), ("kappa", "Cohen's κ"), ("pabak", "PABAK"), ("ac1", "Gwet's AC1"),
                     ("weighted_kappa", "weighted κ (linear weights, 3 values)")]
# What the weighted κ column is, in every table that has it (the page and the JSON download carry it).
WEIGHTED_KAPPA_NOTE = ("Weighted κ: Cohen's κ over the three values 0 < 0.5 < 1 with linear weights (a disagreement of one step "
                       "counts 1/2, of two steps 1); the other figures binarise 0.5 → 0.")
def _population(row: dict) -> str:
    p = row.get("population") or {}
    return f"{p['rule']} ({p['images']:,})" if p else ""


def _paper_human_human() -> dict:
    for p in paper_reference()["annotator_agreement"]:
        if p["a"].lower().startswith("human") and p["b"].lower().startswith("human"):
            return {"paper_agreement": p["agreement"], "paper_kappa": p["cohen_kappa"]}
    return {}


def assisted_note(report: dict) -> str:
    """Which human labelings the report counts (assisted labels, docs/scoring.md), in one sentence."""
    a = report.get("assisted")
    if not a:
        return ""
    text = {"exclude": f"Human labels: independent only — {a['left_out']:,} assisted labeling(s) (model suggestions in view) "
                       f"left out of every figure; ?assisted=include or ?assisted=only shows them.",
            "include": f"Human labels: independent and assisted — {a['assisted_labelings']:,} of {a['human_labelings']:,} human "
                       "labelings were made with model suggestions in view and are counted.",
            "only": f"Human labels: assisted only — {a['assisted_labelings']:,} labeling(s) made with model suggestions in view; "
                    f"{a['left_out']:,} independent one(s) left out."}[a["mode"]]
    return text


def _human_labels(report: dict, row_has_humans: bool) -> str:
    a = report.get("assisted")
    return a["human_labels"] if a and row_has_humans else ""


def agreement_tables(report: dict, level_of: dict) -> list[Table]:
    study = report.get("human_study", {})
    ci_note = CI_NOTE.format(resamples=(report.get("bootstrap") or {}).get("resamples", 0))
    hh_ci = report.get("human_human", {}).get("ci") or {}
    study_note = (f"Human study population: {study.get('images', 0)} of {study.get('all_images', 0)} images have at least two "
                  "human labelings; every figure involving humans uses those images only. " + assisted_note(report))
    summary = []
    hh = report.get("human_human", {}).get("overall", {})
    if hh.get("n"):
        o = with_ci(hh, hh_ci.get("overall"))
        summary.append({"source": "ours", "a": "humans", "b": "humans", "group": "human-human", "n": hh["n"],
                        "population": f"human study images ({study.get('images', 0):,})", "human_labels": _human_labels(report, True),
                        "assisted": report.get("human_human", {}).get("assisted_labelings"),
                        "agreement": o["strict"], "agreement_kind": "strict consensus (all humans agree)",
                        "kappa": o["fleiss_kappa"], "kappa_kind": "Fleiss' κ", **_paper_human_human()})
    for row in report["vs_majority"] + [r for r in report["pairs"] if r["group"] == "model-model" or VISPR_GROUP in r["group"]]:
        o = with_ci(row["overall"], (row.get("ci") or {}).get("overall"))
        with_humans = "human" in row["group"]
        summary.append({"source": "ours", "a": row["a"], "b": row["b"], "group": row["group"], "n": row["overall"]["n"],
                        "population": _population(row), "human_labels": _human_labels(report, with_humans),
                        "assisted": (report.get("assisted") or {}).get("counted_assisted") if with_humans else None,
                        "agreement": o["agreement"], "agreement_kind": "percent agreement",
                        "kappa": o["kappa"], "kappa_kind": "Cohen's κ", "pabak": o.get("pabak"), "ac1": o.get("ac1")})
    head = [("source", "source"), ("a", "annotator"), ("b", "compared with"), ("group", "group"), ("n", "items"),
            ("agreement", "agreement"), ("agreement_kind", "agreement is"), ("kappa", "κ"), ("kappa_kind", "κ is")]
    summary_head = (head[:5] + [("population", "population (images)"), ("human_labels", "human labels"),
                                ("assisted", "assisted labelings counted")] + head[5:] + [("pabak", "PABAK"), ("ac1", "Gwet's AC1")]
                    + [("paper_agreement", "paper: agreement"), ("paper_kappa", "paper: κ")])
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
                   "majority (two or more humans; an even split gives 0). Model-model rows use every image both models "
                   "labelled, the others the human study images: each row states its population. The imported ground truth "
                   "is not an annotator and is not listed. " + study_note + " " + ci_note),
        Table("paper", "The paper's Table 2 (its own images and annotators, not recomputed)", head, paper),
    ]
    hh_assisted = report.get("human_human", {}).get("assisted_labelings")
    hh_rows = [{"scope": "all items", "assisted": hh_assisted, **with_ci(hh, hh_ci.get("overall"))}] if hh else []
    for lv, s_ in report.get("human_human", {}).get("levels", {}).items():
        hh_rows.append({"scope": f"level {lv}", **with_ci(s_, (hh_ci.get("levels") or {}).get(lv))})
    for key, s_ in report.get("human_human", {}).get("attributes", {}).items():
        hh_rows.append({"scope": key, **with_ci(s_, (hh_ci.get("attributes") or {}).get(key))})
    tables.append(Table("human_human", "Human-human: strict consensus and Fleiss' κ",
                        [("scope", "scope"), ("n", "items with ≥ 2 human labels"), ("assisted", "assisted labelings counted"),
                         ("strict", "strict consensus"), ("fleiss_kappa", "Fleiss' κ")], hh_rows, note=study_note + " " + ci_note))
    pairs = [{"a": r["a"], "b": r["b"], "group": r["group"], "population": _population(r),
              "human_labels": _human_labels(report, "human" in r["group"]),
              **with_ci(r["overall"], (r.get("ci") or {}).get("overall"))} for r in report["pairs"]]
    tables.append(Table("pairs", "Every annotator pair (Cohen's κ)",
                        [("a", "annotator"), ("b", "annotator"), ("group", "group"), ("population", "population (images)"),
                         ("human_labels", "human labels")] + AGREEMENT_COLUMNS,
                        pairs, note="Pairs involving a human use the human study images only. " + assisted_note(report) + " " + ci_note
                        + " " + WEIGHTED_KAPPA_NOTE))

    comparisons = [(f"{r['a']} vs {r['b']}", r) for r in report["vs_majority"]]
    comparisons += [(f"{r['a']} vs {r['b']}", r) for r in report["pairs"]]
    per_attr, per_level = [], []
    for name, data in comparisons:
        ci = data.get("ci") or {}
        for key, s_ in data["attributes"].items():
            per_attr.append({"comparison": name, "population": _population(data), "attribute": key, "level": level_of.get(key),
                             **with_ci(s_, (ci.get("attributes") or {}).get(key))})
        for level, s_ in data["levels"].items():
            per_level.append({"comparison": name, "population": _population(data), "level": int(level),
                              **with_ci(s_, (ci.get("levels") or {}).get(level))})
    tables.append(Table("per_attribute", "Agreement per attribute",
                        [("comparison", "comparison"), ("population", "population (images)"), ("attribute", "attribute"), ("level", "level")]
                        + AGREEMENT_COLUMNS, per_attr, note=ci_note + " " + WEIGHTED_KAPPA_NOTE))
    tables.append(Table("per_level", "Agreement per level", [("comparison", "comparison"), ("population", "population (images)"),
                                                             ("level", "level")] + AGREEMENT_COLUMNS, per_level,
                        note=ci_note + " " + WEIGHTED_KAPPA_NOTE))

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
                             "study images only. " + WEIGHTED_KAPPA_NOTE))

    sc = report["strict_consensus"]
    sc_ci = sc.get("ci") or {}
    strict = [{"scope": "all items", **with_ci(sc["overall"], sc_ci.get("overall"))}]
    strict += [{"scope": f"level {lv}", **with_ci(s_, (sc_ci.get("levels") or {}).get(lv))} for lv, s_ in sc["levels"].items()]
    strict += [{"scope": key, **with_ci(s_, (sc_ci.get("attributes") or {}).get(key))} for key, s_ in sc["attributes"].items()]
    tables.append(Table("strict_consensus", "Human strict consensus rate, binarised and three-valued",
                        [("scope", "scope"), ("n", "items with ≥ 2 human labels"), ("binary", "all agree (binarised)"),
                         ("three_valued", "all agree (0 / 0.5 / 1)")], strict,
                        note="Three-valued: every human gave the same one of 0, 0.5 and 1 (0.5 and 0 differ). " + study_note + " " + ci_note))
    tables.append(Table("krippendorff", "Krippendorff's α per annotator kind",
                        [("annotators_kind", "annotators"), ("annotators", "how many"), ("images", "images"), ("items", "items"),
                         ("nominal_binary", "α nominal (binarised)"), ("ordinal_three_valued", "α ordinal (three-valued)")],
                        [with_ci(r, r.get("ci")) for r in report["krippendorff"]],
                        note="Items that at least two annotators of the group labelled. Humans (and humans with models) on the "
                             "human study images; imported ground truth is never mixed in. " + ci_note))
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


def prompt_versions(*runs) -> dict:
    """The prompt versions of a counterfactual pair or triple, and whether they differ (flagged on the page and downloads)."""
    versions = {f"#{r.pk}": r.prompt_version for r in runs}
    return {"versions": versions, "mixed": len(set(versions.values())) > 1}


def counterfactual_summary_table(data: dict, base, cf) -> Table:
    t = data.get("change_test") or {}
    pv = prompt_versions(base, cf)
    rows = [{"base": f"#{base.pk}", "cf": f"#{cf.pk}", "base_prompt": base.prompt_version, "cf_prompt": cf.prompt_version,
             "mixed_prompt_versions": pv["mixed"], "common": data["common"], "only_without": data["only_without"],
             "only_with": data["only_with"], "mean_change": {"value": data["mean_change"], "lo": t.get("lo"), "hi": t.get("hi")},
             "median_change": data["median_change"], "wilcoxon_p": p_value(t.get("p_value")), "changed": t.get("changed"),
             "collapsed": data["collapsed"], "collapsed_sensitive": data["collapsed_sensitive"]}]
    return Table("summary", "Summary: mean change, its interval and test, collapses",
                 [("base", "without"), ("cf", "with counterfactual faces"), ("base_prompt", "prompt version (without)"),
                  ("cf_prompt", "prompt version (with)"), ("mixed_prompt_versions", "mixed prompt versions"),
                  ("common", "images scored by both"), ("only_without", "only without"), ("only_with", "only with"),
                  ("mean_change", "mean change [95% CI]"), ("median_change", "median change"),
                  ("wilcoxon_p", "p (Wilcoxon signed-rank, two-sided)"), ("changed", "images whose score changed"),
                  ("collapsed", "collapsed"), ("collapsed_sensitive", "collapsed with sensitive non-face attributes")], rows,
                 note=f"Interval: percentile bootstrap over images ({t.get('resamples', 0)} resamples). Test: Wilcoxon signed-rank "
                      "(scipy; exact for small samples without ties, else the normal approximation) over the images whose score "
                      "changed." + (" The two runs used DIFFERENT prompt versions: the change mixes the counterfactual with the "
                                    "prompt revision." if pv["mixed"] else ""))


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


# ---------------------------------------------------------------------------------------------
# Three-way counterfactual (original, prompt-level, pixel-level)


def three_way_tables(data: dict, original, prompt, pixel) -> list[Table]:
    """Every figure of the three-way page as downloadable tables."""
    pv = prompt_versions(original, prompt, pixel)
    mixed = " The three runs used DIFFERENT prompt versions." if pv["mixed"] else ""
    overall = []
    for name, run in (("prompt-level", prompt), ("pixel-level", pixel)):
        o = data["overall"]["prompt" if run is prompt else "pixel"]
        t = o.get("test") or {}
        overall.append({"condition": name, "run": f"#{run.pk}", "prompt_version": run.prompt_version, "n": o["n"],
                        "mean_change": {"value": o["mean"], "lo": t.get("lo"), "hi": t.get("hi")}, "median_change": o["median"],
                        "wilcoxon_p": p_value(t.get("p_value")), "collapsed": o["collapsed"]})
    g = data.get("gap") or {}
    overall.append({"condition": "pixel − prompt, per image", "run": f"#{pixel.pk} − #{prompt.pk}", "prompt_version": "",
                    "n": g.get("n"), "mean_change": {"value": g.get("mean"), "lo": g.get("lo"), "hi": g.get("hi")},
                    "median_change": None, "wilcoxon_p": p_value(g.get("p_value")), "collapsed": None})
    tables = [Table("overall", f"Changes against the original (#{original.pk}, prompt {original.prompt_version})",
                    [("condition", "condition"), ("run", "run"), ("prompt_version", "prompt version"), ("n", "images"),
                     ("mean_change", "mean change [95% CI]"), ("median_change", "median change"),
                     ("wilcoxon_p", "p (Wilcoxon signed-rank, two-sided)"), ("collapsed", "collapses")], overall,
                    note=f"{data['common']} images scored by all three runs ({data['only_some']} by only one or two). Intervals: "
                         f"percentile bootstrap over images; p: Wilcoxon signed-rank test over the images whose score changed.{mixed}")]
    per = [("prompt", "prompt-level"), ("pixel", "pixel-level")]
    cols = [(f"{c}_{k}", f"{label}: {k}") for c, label in per for k in ("n", "mean", "median", "collapsed")]
    flat = lambda r: {f"{c}_{k}": r[c][k] for c, _ in per for k in ("n", "mean", "median", "collapsed")}  # noqa: E731
    tables.append(Table("by_level", "Per ground-truth level", [("level", "level")] + cols,
                        [{"level": r["level"], **flat(r)} for r in data["by_level"]]))
    tables.append(Table("groups", "By what the image contains", [("group", "group")] + cols,
                        [{"group": r["group"], **flat(r)} for r in data["groups"]]))
    tables.append(Table("images", "Every image scored by all three runs",
                        [("image_id", "id"), ("level", "GT level"), ("original", "original"), ("prompt", "prompt-level"),
                         ("pixel", "pixel-level"), ("prompt_change", "prompt change"), ("pixel_change", "pixel change"),
                         ("gap", "pixel − prompt"), ("contents", "contains")], data.get("rows", []), download_only=True))
    return tables
