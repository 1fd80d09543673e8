"""Original vs prompt-level vs pixel-level counterfactual (spec section 6): the same model and strategy
judging the same images as they are, told to assume every face is anonymized, and with the faces
really removed from the pixels (annotations/faces).

`compare` is pure (plain dicts and numpy); `three_way` reads the ORM and calls it.
"""
from __future__ import annotations

import numpy as np

from annotations.faces.variants import variant_files
from annotations.faces.models import FaceVariant
from inference.models import Run

from . import queries, significance
from .models import ScoringProfile

CONDITIONS = ("prompt", "pixel")  # each compared with the original
# What the image contains, from the consensus labels (and, for faces, from the detector too).
CONTENT_GROUPS = (
    ("faces (detector)", None),
    ("biometrics (labels)", ("biometrics",)),
    ("government IDs", ("gov_ids",)),
    ("medical", ("medical_data",)),
    ("other contextual cues", ("documents", "contact_details", "financial_data", "location", "background_people")),
)
LARGEST = 12  # images shown side by side


def candidates() -> list[tuple[Run, Run, Run]]:
    """(original, prompt-level, pixel-level) triples of finished judge runs sharing provider, model and strategy."""
    runs = queries.finished_judge_runs()
    key = lambda r: (r.provider, r.model_name, r.strategy)  # noqa: E731
    plain = [r for r in runs if not r.counterfactual_faces and not r.face_variant]
    prompt = [r for r in runs if r.counterfactual_faces and not r.face_variant]
    pixel = [r for r in runs if r.face_variant and not r.counterfactual_faces]
    return [(a, b, c) for a in plain for b in prompt for c in pixel if key(a) == key(b) == key(c)]


def _summary(values: np.ndarray) -> dict:
    return {"n": int(values.size), "mean": float(values.mean()) if values.size else None,
            "median": float(np.median(values)) if values.size else None}


def compare(original: dict[int, float], prompt: dict[int, float], pixel: dict[int, float], *, levels: dict[int, int],
            contents: dict[int, set], drop: float) -> dict:
    """Score changes (condition − original) on the images all three conditions scored.

    `levels`: image -> ground-truth level; `contents`: image -> set of content group names.
    A collapse is a drop of at least `drop` (the image judged much safer than as it is).
    """
    common = sorted(set(original) & set(prompt) & set(pixel))
    base = np.array([original[i] for i in common], dtype=float)
    changes = {
        "prompt": np.array([prompt[i] for i in common], dtype=float) - base,
        "pixel": np.array([pixel[i] for i in common], dtype=float) - base,
    }
    overall = {c: {**_summary(changes[c]), "collapsed": int((changes[c] <= -drop).sum()), "test": significance.paired_change(changes[c])}
               for c in CONDITIONS}
    by_level = []
    level_of = np.array([levels.get(i, 0) for i in common], dtype=int)
    for level in (1, 2, 3, 4):
        mask = level_of == level
        by_level.append({"level": level, **{c: {**_summary(changes[c][mask]), "collapsed": int((changes[c][mask] <= -drop).sum())}
                                            for c in CONDITIONS}})
    groups = []
    for name, _keys in CONTENT_GROUPS:
        mask = np.array([name in contents.get(i, set()) for i in common], dtype=bool)
        groups.append({"group": name, **{c: {**_summary(changes[c][mask]), "collapsed": int((changes[c][mask] <= -drop).sum())}
                                         for c in CONDITIONS}})
    rows = [{"image_id": i, "original": original[i], "prompt": prompt[i], "pixel": pixel[i],
             "prompt_change": float(changes["prompt"][k]), "pixel_change": float(changes["pixel"][k]),
             "gap": float(changes["pixel"][k] - changes["prompt"][k]), "level": levels.get(i),
             "contents": sorted(contents.get(i, set()))} for k, i in enumerate(common)]
    largest = sorted(rows, key=lambda r: (-abs(r["gap"]), r["image_id"]))[:LARGEST]
    return {
        "common": len(common),
        "only_some": len((set(original) | set(prompt) | set(pixel)) - set(common)),
        "overall": overall, "by_level": by_level, "groups": groups, "largest": largest, "rows": rows,
        # "do the two counterfactuals move the score by the same amount?" (pixel change − prompt change, per image)
        "gap": significance.paired_change(changes["pixel"] - changes["prompt"]),
        # "does telling the model to ignore faces behave like a model that cannot see them?"
        "agreement": float(np.corrcoef(changes["prompt"], changes["pixel"])[0, 1]) if len(common) > 2 and
        changes["prompt"].std() > 0 and changes["pixel"].std() > 0 else None,
    }


def _ok_scores(results: dict) -> dict[int, float]:
    keep = (results["outcome"] == "ok") & np.isfinite(results["score"])
    return dict(zip(results["image_id"][keep].tolist(), results["score"][keep].tolist()))


def three_way(original: Run, prompt: Run, pixel: Run, profile: ScoringProfile, drop: float) -> dict:
    from .services.counterfactuals import consensus_labels

    results = queries.judge_results([original.pk, prompt.pk, pixel.pk])
    scores = [_ok_scores(results[r.pk]) for r in (original, prompt, pixel)]
    ids = sorted(set(scores[0]) | set(scores[1]) | set(scores[2]))
    gt = queries.ground_truth(profile)
    labels = consensus_labels(ids, profile)
    faces = _face_images(ids, pixel.face_variant)
    contents: dict[int, set] = {}
    for i in ids:
        found = set()
        for name, keys in CONTENT_GROUPS:
            if (keys is None and i in faces) or (keys and any(labels.get(i, {}).get(k) == 1 for k in keys)):
                found.add(name)
        contents[i] = found
    data = compare(*scores, levels=gt.level, contents=contents, drop=drop)
    shown = [r["image_id"] for r in data["largest"]]
    files = variant_files(shown, pixel.face_variant)
    variant_ids = dict(FaceVariant.objects.filter(image_id__in=shown, **pixel.face_variant).values_list("image_id", "id"))
    from annotations.models import Image

    vispr = dict(Image.objects.filter(pk__in=shown).values_list("pk", "vispr_id"))
    for r in data["largest"]:
        r["variant_id"] = variant_ids.get(r["image_id"]) if r["image_id"] in files else None
        r["vispr_id"] = vispr.get(r["image_id"], "")
    return data


def _face_images(ids: list[int], setting: dict) -> set[int]:
    out: set[int] = set()
    for k in range(0, len(ids), 900):
        out.update(FaceVariant.objects.filter(image_id__in=ids[k : k + 900], faces__gt=0, **setting).values_list("image_id", flat=True))
    return out
