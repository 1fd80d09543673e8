"""The profile fit from every stored published row: all splits, all imports, reported per split.

An import adds rows; the profile is then fitted again from every row stored for its ground-truth
annotator (an image with a published score and level and that annotator's 22 labels), never from the
last file alone, so importing test then train (or train then test, or a further small file) leaves
a profile that reproduces every published row or says which split it does not reproduce.

[decision] Files printed with different precision: the joint fit uses the coarsest split's tolerance,
then every split is checked against its own printed precision; the profile activates only when the
whole set and every split are reproduced.

[decision] The rows are read aggregated (issue 29): one entry per distinct (split, level, counts, score)
with its number of rows, so a million stored rows cost what their few thousand distinct rows cost. The
joint fit and the per-split report are then exactly those of the rows one by one (they depend on the
distinct rows only, and failing rows are counted with their multiplicity); the per-level diagnostic
lines (`engine.fit_bounds`) are weighted least squares, equal to the per-row ones to rounding.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from django.db import connection
from django.db.models import Max, Min

from annotations import taxonomy
from annotations.models import Annotator, Image, Label

from .. import engine
from .. import fit as fit_lib
from ..queries import numeric_columns

ID_RANGE = 200_000  # image ids per query of stored_published_rows



@dataclass
class Mismatch:
    """A stored row whose published level is not the level its counts determine (l*)."""
    position: int  # its place among every stored row, in image id order
    image_id: int
    published: int
    counts: tuple[int, int, int, int]


@dataclass
class StoredRows:
    """Every stored published row, aggregated: one entry per distinct (split, published level, per-level counts,
    published score) with the number of rows that share it, so memory follows the distinct rows (a few
    thousand: the score is a function of the counts), not the rows; and the rows whose level is wrong."""
    splits: np.ndarray  # Image.split per entry
    levels: np.ndarray  # published level per entry
    counts: np.ndarray  # (entries, 4) per-level counts of the annotator's 1-labels
    scores: np.ndarray  # published score per entry
    rows: np.ndarray  # how many stored rows each entry stands for
    mismatches: list[Mismatch] = field(default_factory=list)  # in image id order

    def __len__(self) -> int:
        """Stored rows (not entries)."""
        return int(self.rows.sum())

    def vispr_ids(self) -> list[str]:
        """The VISPR ids of the mismatched rows (read when asked: a million stored rows keep no string each)."""
        wanted = [m.image_id for m in self.mismatches]
        by_pk = dict(Image.objects.filter(id__in=wanted).values_list("id", "vispr_id")) if wanted else {}
        return [by_pk[pk] for pk in wanted]


def stored_published_rows(annotator: Annotator, tax: taxonomy.Taxonomy) -> StoredRows:
    """Every image with a published score and level and a full label set from `annotator`, aggregated by the
    database (per-level counts of 1-labels per image, then one group per distinct row with its count),
    a range of image ids at a time; entries of every range merged as they come, so nothing grows with rows.

    Rows whose published level is not l* are listed one by one (with their place in image id order, which
    the fit report gives): in a range that has any, its rows are read (bounded by ID_RANGE) to find them.
    """
    level_of_attr = [(pk, tax.level_of[key]) for key, pk in taxonomy.attribute_ids().items() if key in tax.level_of]
    splits = [value for value, _ in Image.SPLITS]
    quote = connection.ops.quote_name
    per_level = ", ".join(f"SUM(CASE WHEN l.value = 1 AND a.level = {n} THEN 1 ELSE 0 END) AS n{n}" for n in engine.LEVELS)
    split_code = " ".join(f"WHEN %s THEN {n}" for n in range(len(splits)))
    rows_sql = (
        f"WITH a (attribute_id, level) AS (VALUES {', '.join(['(%s, %s)'] * len(level_of_attr))}), "
        f"c AS (SELECT l.image_id, COUNT(*) AS labelled, {per_level} FROM {quote(Label._meta.db_table)} l "
        "JOIN a ON a.attribute_id = l.attribute_id WHERE l.annotator_id = %s AND l.image_id >= %s AND l.image_id < %s "
        "GROUP BY l.image_id) "
        f"SELECT i.id, CASE i.split {split_code} ELSE -1 END AS split, i.published_level AS level, c.n1, c.n2, c.n3, c.n4, "
        f"i.published_score AS score FROM {quote(Image._meta.db_table)} i JOIN c ON c.image_id = i.id "
        "WHERE i.published_score IS NOT NULL AND i.published_level IS NOT NULL AND c.labelled = %s"
    )
    grouped_sql = (f"SELECT split, level, n1, n2, n3, n4, COUNT(*), score FROM ({rows_sql}) AS r "
                   "GROUP BY split, level, n1, n2, n3, n4, score")
    first, last = Image.objects.aggregate(first=Min("id"), last=Max("id")).values()
    keys = np.zeros((0, 6), np.int64)  # split code, published level, n1..n4 per entry
    scores = np.zeros(0)
    counts = np.zeros(0, np.int64)
    mismatches: list[Mismatch] = []
    before = 0  # stored rows in the ranges already read
    for start in range(first or 0, (last or -1) + 1, ID_RANGE):
        params = [v for pair in level_of_attr for v in pair] + [annotator.pk, start, start + ID_RANGE] + splits + [len(tax.keys)]
        *key_columns, n, score = numeric_columns(grouped_sql, params, 8)
        part = np.stack(key_columns, axis=1).reshape(-1, 6)
        if (part[:, 1] != fit_lib.determined_levels(part[:, 2:])).any():
            mismatches.extend(_mismatches(rows_sql, params, before))
        before += int(n.sum())
        keys, scores, counts = _merge(np.vstack([keys, part]), np.concatenate([scores, score]), np.concatenate([counts, n]))
    return StoredRows(
        splits=np.array(splits + [""], dtype=object)[keys[:, 0]],
        levels=keys[:, 1],
        counts=keys[:, 2:].copy(),
        scores=scores,
        rows=counts,
        mismatches=mismatches,
    )


def _merge(keys: np.ndarray, scores: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries with equal keys and scores made one, their counts added (in key, then score order)."""
    if not len(scores):
        return keys, scores, counts
    order = np.lexsort((scores, *keys.T[::-1]))
    keys, scores, counts = keys[order], scores[order], counts[order]
    new = np.ones(len(scores), dtype=bool)
    new[1:] = (keys[1:] != keys[:-1]).any(axis=1) | (scores[1:] != scores[:-1])
    starts = np.flatnonzero(new)
    return keys[starts], scores[starts], np.add.reduceat(counts, starts)


def _mismatches(rows_sql: str, params: list, before: int) -> list[Mismatch]:
    """The rows of one id range whose published level is not l*, with their place among every stored row."""
    image_ids, _, levels, n1, n2, n3, n4, _ = numeric_columns(rows_sql, params, 8, order_by_first=True)
    counts = np.stack([n1, n2, n3, n4], axis=1).reshape(-1, 4)
    wrong = np.flatnonzero(levels != fit_lib.determined_levels(counts))
    return [Mismatch(before + int(i), int(image_ids[i]), int(levels[i]), tuple(int(c) for c in counts[i])) for i in wrong]


def split_report(rows: StoredRows, fit: fit_lib.ProfileFit) -> list[dict]:
    """Per split: rows, printed precision and its tolerance, the profile's largest residual there, reproduced or not
    (failing rows counted with their multiplicity)."""
    out = []
    scores = None
    if fit.bounds is not None and len(rows.scores):
        _, scores = engine.severity_array(rows.counts, fit.bounds, fit.weights)
    for split in sorted(set(rows.splits.tolist())):
        m = rows.splits == split
        decimals = fit_lib.printed_decimals(rows.scores[m])
        tol = fit_lib.tolerance(decimals)
        resid = None if scores is None else float(np.abs(scores[m] - rows.scores[m]).max())
        out.append({"split": split, "rows": int(rows.rows[m].sum()), "decimals": decimals, "tolerance": tol, "max_residual": resid,
                    "failing_rows": None if scores is None else int(rows.rows[m][np.abs(scores[m] - rows.scores[m]) > tol].sum()),
                    "reproduces": resid is not None and resid <= tol})
    return out


def fit_stored(rows: StoredRows) -> tuple[fit_lib.ProfileFit, list[dict]]:
    """The joint fit of every stored row, at the coarsest split's precision, and its per-split report.

    The joint fit depends on the distinct (counts, score) pairs only (the extremes of each count vector, the
    printed precision, the largest residual): the entries give it exactly what every row would. Its level
    mismatches are the stored rows' places, found while reading them."""
    known = [d for s in set(rows.splits.tolist()) if (d := fit_lib.printed_decimals(rows.scores[rows.splits == s])) is not None]
    decimals = min(known) if known else None
    joint = fit_lib.fit_profile(rows.counts, rows.scores, decimals=decimals)
    joint.level_mismatches = [m.position for m in rows.mismatches]
    return joint, split_report(rows, joint)
