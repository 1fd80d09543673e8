"""The disagreement queue: images with disputed attributes and what resolving them could change (cached)."""
from __future__ import annotations

import numpy as np

from .. import disputes, queries
from ..models import ScoringProfile
from .cache import cached

# Disagreements and adjudication


def disagreement_queue(profile: ScoringProfile, split: str = "") -> dict:
    """Every image with disputed attributes and what resolving them could change (cached)."""
    fingerprint = queries.digest(queries.label_fingerprint(split), profile.pk, profile.lo1, profile.lo2, profile.lo3)

    def compute():
        data = queries.load_labels(split=split)
        adjudications = queries.adjudication_array(data.image_ids, data.keys)
        impact = disputes.dispute_impact(data.values, adjudications, data.attr_levels, profile.bounds)
        # Pairs of annotators who disagree on an image (any attribute): one vectorised pass per pair.
        pair_masks = [
            ([data.annotator_ids[a], data.annotator_ids[b]], disputes.pair_disagrees(data.values, a, b))
            for a in range(len(data.names)) for b in range(a + 1, len(data.names))
        ]
        rows = []
        for i in np.flatnonzero(impact["n_disputed"] > 0):
            rows.append({
                "image_id": data.image_ids[i],
                "disputed": [data.keys[j] for j in np.flatnonzero(impact["disputed"][i])],
                "n_disputed": int(impact["n_disputed"][i]),
                "score_lo": float(impact["score_lo"][i]),
                "score_hi": float(impact["score_hi"][i]),
                "level_lo": int(impact["level_lo"][i]),
                "level_hi": int(impact["level_hi"][i]),
                "impact": float(impact["impact"][i]),
                "level_changes": bool(impact["level_changes"][i]),
                "pairs": [ids for ids, mask in pair_masks if mask[i]],
            })
        annotators = [{"id": a, "name": n, "kind": k} for a, n, k in zip(data.annotator_ids, data.names, data.kinds)]
        return {"rows": rows, "annotators": annotators}

    return cached(f"disagreements:{split or 'all'}:profile:{profile.pk}", fingerprint, compute,
                  spec={"kind": "disagreements", "profile": profile.pk, "split": split})


def refresh_entry(spec: dict) -> None:
    """The refresh job's recomputation (scoring.services.cache.refresh)."""
    disagreement_queue(ScoringProfile.objects.get(pk=spec["profile"]), spec["split"])



def filter_disputes(rows: list[dict], *, attribute: str = "", level: int | None = None, pair: tuple[int, int] | None = None,
                    current: dict | None = None, sort: str = "impact") -> list[dict]:
    """Filter the cached queue by disputed attribute, current consensus level and disagreeing pair; sort."""
    current = current or {}
    out = []
    for r in rows:
        if attribute and attribute not in r["disputed"]:
            continue
        if level is not None and (current.get(r["image_id"]) or (None,))[0] != level:
            continue
        if pair is not None and list(pair) not in [sorted(p) for p in r["pairs"]]:
            continue
        out.append(r)
    keys = {
        "impact": lambda r: (-r["impact"], r["image_id"]),
        "level": lambda r: (not r["level_changes"], -r["impact"], r["image_id"]),
        "disputed": lambda r: (-r["n_disputed"], -r["impact"], r["image_id"]),
        "id": lambda r: r["image_id"],
    }
    return sorted(out, key=keys[sort])
