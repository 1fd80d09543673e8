"""The profile fit from every stored published row: all splits, all imports, reported per split.

An import adds rows; the profile is then fitted again from every row stored for its ground-truth
annotator (an image with a published score and level and that annotator's 22 labels), never from the
last file alone, so importing test then train (or train then test, or a further small file) leaves
a profile that reproduces every published row or says which split it does not reproduce.

[decision] Files printed with different precision: the joint fit uses the coarsest split's tolerance,
then every split is checked against its own printed precision; the profile activates only when the
whole set and every split are reproduced.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from django.db import connection
from django.db.models import Max, Min

from annotations import taxonomy
from annotations.models import Annotator, Image, Label

from .. import engine
from .. import fit as fit_lib
from ..services.scores import numeric_columns

ID_RANGE = 200_000  # image ids per query of stored_published_rows



@dataclass
class StoredRows:
    image_ids: np.ndarray  # Image.id per row (ordered)
    splits: np.ndarray  # Image.split per row
    counts: np.ndarray  # (rows, 4) per-level counts of the annotator's 1-labels
    scores: np.ndarray
    levels: np.ndarray

    def __len__(self) -> int:
        return len(self.image_ids)

    def vispr_ids(self, positions) -> list[str]:
        """The VISPR ids of the rows at `positions` (read when asked: a million stored rows keep no string each)."""
        wanted = [int(self.image_ids[i]) for i in positions]
        by_pk = dict(Image.objects.filter(id__in=wanted).values_list("id", "vispr_id")) if wanted else {}
        return [by_pk[pk] for pk in wanted]


def stored_published_rows(annotator: Annotator, tax: taxonomy.Taxonomy) -> StoredRows:
    """Every image with a published score and level and a full label set from `annotator`: one aggregate
    query (the per-level counts of 1-labels counted by the database) read into arrays."""
    level_of_attr = [(pk, tax.level_of[key]) for key, pk in taxonomy.attribute_ids().items() if key in tax.level_of]
    splits = [value for value, _ in Image.SPLITS]
    quote = connection.ops.quote_name
    per_level = ", ".join(f"SUM(CASE WHEN l.value = 1 AND a.level = {n} THEN 1 ELSE 0 END) AS n{n}" for n in engine.LEVELS)
    split_code = " ".join(f"WHEN %s THEN {n}" for n in range(len(splits)))
    sql = (
        f"WITH a (attribute_id, level) AS (VALUES {', '.join(['(%s, %s)'] * len(level_of_attr))}), "
        f"c AS (SELECT l.image_id, COUNT(*) AS labelled, {per_level} FROM {quote(Label._meta.db_table)} l "
        "JOIN a ON a.attribute_id = l.attribute_id WHERE l.annotator_id = %s AND l.image_id >= %s AND l.image_id < %s "
        "GROUP BY l.image_id) "
        f"SELECT i.id, CASE i.split {split_code} ELSE -1 END, i.published_level, c.n1, c.n2, c.n3, c.n4, i.published_score "
        f"FROM {quote(Image._meta.db_table)} i JOIN c ON c.image_id = i.id "
        "WHERE i.published_score IS NOT NULL AND i.published_level IS NOT NULL AND c.labelled = %s"
    )
    # A range of image ids at a time: no single result holds every row twice over (packed, then as arrays).
    first, last = Image.objects.aggregate(first=Min("id"), last=Max("id")).values()
    parts = []
    for start in range(first or 0, (last or -1) + 1, ID_RANGE):
        params = [v for pair in level_of_attr for v in pair] + [annotator.pk, start, start + ID_RANGE] + splits + [len(tax.keys)]
        parts.append(numeric_columns(sql, params, 8, order_by_first=True))  # by image id within a range
    columns = [np.concatenate(column) for column in zip(*parts)] if parts else [np.zeros(0, np.int64)] * 7 + [np.zeros(0)]
    del parts
    image_ids, codes, levels, n1, n2, n3, n4, scores = columns
    return StoredRows(
        image_ids=image_ids,
        splits=np.array(splits + [""], dtype=object)[codes],
        counts=np.stack([n1, n2, n3, n4], axis=1).reshape(-1, 4),
        scores=scores,
        levels=levels,
    )


def split_report(rows: StoredRows, fit: fit_lib.ProfileFit) -> list[dict]:
    """Per split: rows, printed precision and its tolerance, the profile's largest residual there, reproduced or not."""
    out = []
    scores = None
    if fit.bounds is not None and len(rows):
        _, scores = engine.severity_array(rows.counts, fit.bounds, fit.weights)
    for split in sorted(set(rows.splits.tolist())):
        m = rows.splits == split
        decimals = fit_lib.printed_decimals(rows.scores[m])
        tol = fit_lib.tolerance(decimals)
        resid = None if scores is None else float(np.abs(scores[m] - rows.scores[m]).max())
        out.append({"split": split, "rows": int(m.sum()), "decimals": decimals, "tolerance": tol, "max_residual": resid,
                    "failing_rows": None if scores is None else int((np.abs(scores[m] - rows.scores[m]) > tol).sum()),
                    "reproduces": resid is not None and resid <= tol})
    return out


def fit_stored(rows: StoredRows) -> tuple[fit_lib.ProfileFit, list[dict]]:
    """The joint fit of every stored row, at the coarsest split's precision, and its per-split report."""
    known = [d for s in set(rows.splits.tolist()) if (d := fit_lib.printed_decimals(rows.scores[rows.splits == s])) is not None]
    decimals = min(known) if known else None
    joint = fit_lib.fit_profile(rows.counts, rows.scores, rows.levels, decimals=decimals)
    return joint, split_report(rows, joint)
