"""ORM reading for the scoring pages: a fixed, small number of queries whatever the data size.

Every function returns plain Python values or numpy arrays for scoring.metrics / scoring.agreement.
Fingerprints are cheap aggregate queries that change whenever the data behind a cached
computation changes (scoring.services keys its cache on them). They are built from exact values only
(counts, ids, timestamps, integer sums): a float sum depends on the order rows are added in, which a
parallel plan on PostgreSQL changes from one call to the next, so a float in a key never hits.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from itertools import islice

import numpy as np
from django.db import connection
from django.db.models import BigIntegerField, Count, Exists, F, FloatField, Func, Max, Min, OuterRef, Q, Sum
from django.db.models.functions import Cast

from annotations import label_version, taxonomy
from annotations.models import Adjudication, Annotator, Image, Label, Labeling
from inference.models import Run, RunResult

from .agreement import LabelSet
from .models import ImageScore, ScoringProfile


def digest(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, default=str, sort_keys=True).encode()).hexdigest()[:32]


# A float column enters a fingerprint as the sum of its values rounded to integers at this scale
# (2**30: scores and label values are in [0, 1], so 10M rows stay far below 2**63). Integer addition
# is exact in any order; a change of a value by more than 2**-31 changes the sum.
EXACT_SCALE = 2**30


class FloatRound(Func):
    """ROUND of a float, computed as a float (Django's Round casts to numeric on PostgreSQL first,
    which costs more than the rest of a fingerprint aggregate put together)."""

    function = "ROUND"
    output_field = FloatField()


def exact_sum(column: str) -> Sum:
    """Sum of a float column as exact integers (see EXACT_SCALE): the same whatever the plan."""
    return Sum(Cast(FloatRound(F(column) * EXACT_SCALE), BigIntegerField()))


# ---------------------------------------------------------------------------------------------
# Ground truth


@dataclass
class GroundTruth:
    """image id -> (score, level, source); published CPRT-Bench values win over computed scores."""

    score: dict[int, float]
    level: dict[int, int]
    source: dict[int, str]
    _arrays: tuple | None = field(default=None, repr=False, compare=False)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(image ids ascending, their scores, their levels) as numpy arrays, made once (for `align`)."""
        if self._arrays is None:
            ids = np.fromiter(self.score, dtype=np.int64, count=len(self.score))
            order = np.argsort(ids, kind="stable")
            scores = np.array([self.score[i] for i in ids.tolist()], dtype=float)
            levels = np.array([self.level[i] for i in ids.tolist()], dtype=np.int64)
            self._arrays = (ids[order], scores[order], levels[order])
        return self._arrays


# The last ground truth read per profile in this process, under its fingerprint (profile id -> (fingerprint,
# GroundTruth)): the refresh jobs of one change (a run's figures each, then the leaderboard's) read it once.
_last_truth: dict[int, tuple[str, GroundTruth]] = {}


def ground_truth(profile: ScoringProfile, fingerprint: str | None = None) -> GroundTruth:
    """Two queries: the published values, then the active profile's scores for the other images.

    [decision] (issue 37) With `fingerprint` (the caller's `ground_truth_fingerprint(profile)`), the ground
    truth read last in this process under that same fingerprint is reused instead of read again. What is read
    is kept under a fingerprint only when the fingerprint taken again after the read still equals it (nothing
    changed in between), so a kept ground truth is always the one its key describes."""
    if fingerprint is not None:
        kept = _last_truth.get(profile.pk)
        if kept is not None and kept[0] == fingerprint:
            return kept[1]
    truth = _read_ground_truth(profile)
    if fingerprint is not None:
        if ground_truth_fingerprint(profile) == fingerprint:
            _last_truth[profile.pk] = (fingerprint, truth)
        else:
            _last_truth.pop(profile.pk, None)
    return truth


def _read_ground_truth(profile: ScoringProfile) -> GroundTruth:
    score, level, source = {}, {}, {}
    with connection.chunked_cursor() as cursor:  # plain rows (values_list costs about as much again per row), server-side on PostgreSQL
        cursor.execute(f"SELECT image_id, score, level FROM {ImageScore._meta.db_table} WHERE profile_id = %s", [profile.pk])
        while rows := cursor.fetchmany(ROW_CHUNK):
            for image_id, s, lv in rows:
                score[image_id], level[image_id], source[image_id] = s, lv, "consensus"
        cursor.execute(f"SELECT id, published_score, published_level FROM {Image._meta.db_table} "
                       "WHERE published_score IS NOT NULL AND published_level IS NOT NULL")
        while rows := cursor.fetchmany(ROW_CHUNK):
            for image_id, s, lv in rows:
                score[image_id], level[image_id], source[image_id] = s, lv, "published"
    return GroundTruth(score, level, source)


# Weights of the position-weighted sums in the ground-truth fingerprint: a mixed small integer per image
# (1..65521), so that two images exchanging their scores or levels change the key although every plain sum
# stays the same. Bounded so the sums stay exact 64-bit integers on SQLite too (2**16 * 2**20 per row).
MIX_MULTIPLIER, MIX_MODULUS, WEIGHTED_SCALE = 40503, 65521, 2**20


def _image_weight(column: str):
    return (Cast(column, BigIntegerField()) * MIX_MULTIPLIER) % MIX_MODULUS + 1  # bigint: ids * the multiplier pass 2**31


def ground_truth_fingerprint(profile: ScoringProfile) -> str:
    """An exact key of the ground truth the run metrics read (`ground_truth`): the published values, and the
    profile's stored scores of the images without one, as values only.

    [decision] (issue 37) The key follows the values, not the writes: a stored score of an image whose
    published value wins, or a rescore that stores the same score and level again (an adjudication that
    leaves the consensus where it was; the row's `computed_at` moves), changes no run's figures, so it keeps
    every run's cached metrics current instead of recomputing them all. Exact integer sums (any order, any
    plan) of the ids, scores and levels, plain and weighted per image (see MIX_MULTIPLIER)."""
    published = Image.objects.filter(published_score__isnull=False, published_level__isnull=False).aggregate(
        n=Count("id"), s=exact_sum("published_score"), lv=Sum("published_level"), ids=Sum("id"),
        ws=Sum(Cast(FloatRound(F("published_score") * WEIGHTED_SCALE), BigIntegerField()) * _image_weight("id")),
        wlv=Sum(F("published_level") * _image_weight("id")),
    )
    overridden = Q(image__published_score__isnull=False) & Q(image__published_level__isnull=False)
    weight = _image_weight("image_id")
    computed = ImageScore.objects.filter(profile=profile).exclude(overridden).aggregate(
        n=Count("id"), ids=Sum("image_id"), s=exact_sum("score"), lv=Sum("level"),
        ws=Sum(Cast(FloatRound(F("score") * WEIGHTED_SCALE), BigIntegerField()) * weight), wlv=Sum(F("level") * weight),
    )
    return digest(published, computed, profile.pk, profile.lo1, profile.lo2, profile.lo3, profile.updated_at)


# ---------------------------------------------------------------------------------------------
# Runs


LARGE_RUN_FIELDS = ("image_ids", "item_ids", "prompt_text", "selection", "truth")


def finished_judge_runs(strategy: str = ""):
    runs = Run.objects.filter(task=Run.TASK_JUDGE, status=Run.STATUS_FINISHED)
    if strategy:
        runs = runs.filter(strategy=strategy)
    # The frozen image and item lists and prompt texts are large JSON (1.4 MB a run at 100k images): the leaderboard needs none.
    return list(runs.defer(*LARGE_RUN_FIELDS).order_by("provider", "model_name", "strategy", "counterfactual_faces", "id"))


def run_fingerprints(runs) -> dict[int, str]:
    """A digest per run of the results its metrics depend on.

    [decision] A finished run's results are final (resuming a run changes its status and finish
    time), so its digest is its state, and the leaderboard reads no result rows to check its cache.
    Runs still in progress add their result counts and last result id, from one grouped query
    answered by the (run, outcome) index.
    """
    runs = list(runs)
    open_ids = [r.pk for r in runs if r.status != Run.STATUS_FINISHED]
    found = {}
    if open_ids:
        rows = (
            RunResult.objects.filter(run_id__in=open_ids)
            .values("run_id")
            .annotate(n=Count("id"), ok=Count("id", filter=Q(outcome="ok")), last=Max("id"))
            .order_by()
        )
        found = {row["run_id"]: row for row in rows}
    return {r.pk: digest(r.status, r.finished_at, r.total_images, found.get(r.pk)) for r in runs}


def judge_results(run_ids: list[int]) -> dict[int, dict[str, np.ndarray]]:
    """run id -> arrays image_id, outcome, score (NaN where none), in one query, read a chunk at a time into
    numpy columns (`_columns`), never a Python tuple per result held at once (issue 37: bounded memory)."""
    out = {}
    if not run_ids:
        return out
    marks = ", ".join(["%s"] * len(run_ids))
    if connection.vendor == "postgresql":
        run, image, outcome, score = _packed_results(marks, list(run_ids))
    else:
        with connection.chunked_cursor() as cursor:  # plain rows (values_list costs about as much again per row)
            cursor.execute(f"SELECT run_id, image_id, outcome, score FROM {RunResult._meta.db_table} WHERE run_id IN ({marks}) "
                           "ORDER BY run_id, image_id", list(run_ids))
            run, image, outcome, score = _columns(_fetched(cursor), (np.int64, np.int64, object, float))
    starts = np.searchsorted(run, np.asarray(run_ids, dtype=np.int64), side="left")
    ends = np.searchsorted(run, np.asarray(run_ids, dtype=np.int64), side="right")
    for run_id, lo, hi in zip(run_ids, starts.tolist(), ends.tolist()):
        out[run_id] = {"image_id": image[lo:hi].copy(), "outcome": outcome[lo:hi].copy(), "score": score[lo:hi].copy()}
    return out


def numeric_columns(sql: str, params, width: int, order_by_first: bool = False) -> list[np.ndarray]:
    """The `width` NOT NULL numeric columns of a query as arrays (the first width - 1 as int64, the last as
    float64), without a Python object per row: on PostgreSQL the database packs every row into one bytea
    (int8send/float8send, big-endian) that numpy reads as it is; elsewhere one fetchall. With
    `order_by_first`, the rows come in the order of the first column (else in any order)."""
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute(f"SELECT * FROM ({sql}) AS q ORDER BY 1" if order_by_first else sql, params)
            rows = np.array(cursor.fetchall(), dtype=float).reshape(-1, width)
            return [rows[:, i].astype(np.int64) for i in range(width - 1)] + [rows[:, width - 1]]
        names = [f"c{i}" for i in range(width)]
        packed = " || ".join([f"int8send({n}::bigint)" for n in names[:-1]] + [f"float8send({names[-1]}::double precision)"])
        order = " ORDER BY c0" if order_by_first else ""
        cursor.execute(f"SELECT string_agg({packed}, ''::bytea{order}) FROM ({sql}) AS q ({', '.join(names)})", params)
        data = cursor.fetchone()[0] or b""
    fields = [(n, ">i8") for n in names[:-1]] + [(names[-1], ">f8")]
    rows = np.frombuffer(bytes(data), dtype=np.dtype(fields))
    return [rows[n].astype(np.int64) for n in names[:-1]] + [rows[names[-1]].astype(float)]


def _packed_results(marks: str, run_ids: list[int]) -> tuple[np.ndarray, ...]:
    """judge_results' columns on PostgreSQL, packed by the database (`numeric_columns`, no Python object per
    result: 300,000 results in a third of a row cursor's time, issue 37): each outcome as its position in the
    runs' distinct outcomes (read first from the (run, outcome, item) index), a missing score as NaN; then
    in (run, image) order, as the row cursor reads them."""
    table = RunResult._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT outcome FROM {table} WHERE run_id IN ({marks}) ORDER BY 1", run_ids)
        names = [row[0] for row in cursor.fetchall()]
    run, image, code, score = numeric_columns(
        f"SELECT run_id, image_id, array_position(%s::text[], outcome::text), COALESCE(score, 'NaN'::double precision) "
        f"FROM {table} WHERE run_id IN ({marks})", [names, *run_ids], 4)
    order = np.lexsort((image, run))
    return run[order], image[order], np.array(names, dtype=object)[code[order] - 1], score[order]


def _fetched(cursor):
    """The rows of an executed cursor, fetched ROW_CHUNK at a time."""
    while rows := cursor.fetchmany(ROW_CHUNK):
        yield from rows


ROW_CHUNK = 50_000  # rows turned into numpy columns at a time (load_labels, judge_results)


def _columns(rows, dtypes: tuple) -> tuple[np.ndarray, ...]:
    """The columns of a values_list queryset as numpy arrays of `dtypes` (None -> NaN in a float column),
    read through a server-side cursor ROW_CHUNK rows at a time (issue 37): what is held is the arrays,
    about 8 to 16 bytes a value, not a Python tuple per row (about 200 bytes a row with its values)."""
    parts: list[list[np.ndarray]] = [[] for _ in dtypes]
    iterator = rows.iterator(chunk_size=ROW_CHUNK) if hasattr(rows, "iterator") else iter(rows)
    while chunk := list(islice(iterator, ROW_CHUNK)):
        for k, (column, dtype) in enumerate(zip(zip(*chunk), dtypes)):
            if dtype is float:
                column = [np.nan if v is None else v for v in column]
            parts[k].append(np.array(column, dtype=dtype))
        del chunk
    return tuple(np.concatenate(p) if p else np.empty(0, dtype=d) for p, d in zip(parts, dtypes))


def align(results: dict[str, np.ndarray], gt: GroundTruth) -> dict[str, np.ndarray]:
    """Keep the results whose image has ground truth; attach its score and level."""
    ids = results["image_id"]
    gt_ids, gt_scores, gt_levels = gt.arrays()
    at = np.minimum(np.searchsorted(gt_ids, ids), max(gt_ids.size - 1, 0))
    has = (gt_ids[at] == ids) if gt_ids.size else np.zeros(ids.shape, dtype=bool)
    kept = ids[has]
    return {
        "image_id": kept,
        "outcome": results["outcome"][has],
        "pred": results["score"][has],
        "gt": gt_scores[at[has]],
        "gt_level": gt_levels[at[has]],
        "without_gt": int((~has).sum()),
    }


# ---------------------------------------------------------------------------------------------
# Labels


def _label_filter():
    """Human labels count once their labeling is submitted; model and imported labels always."""
    submitted = Labeling.objects.filter(
        image_id=OuterRef("image_id"), annotator_id=OuterRef("annotator_id"), status=Labeling.STATUS_SUBMITTED
    )
    return Q(annotator__kind__in=[Annotator.KIND_MODEL, Annotator.KIND_GROUND_TRUTH, Annotator.KIND_DATASET]) | Q(Exists(submitted))


# Assisted labels (docs/scoring.md): which human labelings enter a study. "exclude" keeps the independent ones (no
# model suggestion was in view), "only" the assisted ones, "include" every submitted one. Models and imported labels
# are never assisted.
ASSISTED_MODES = ("exclude", "include", "only")


def _assisted_filter(assisted: str) -> Q:
    """Labels of human labelings by `assisted` mode (beside _label_filter, which keeps submitted ones only)."""
    if assisted not in ASSISTED_MODES:
        raise ValueError(f"assisted must be one of {', '.join(ASSISTED_MODES)}; got {assisted!r}.")
    if assisted == "include":
        return Q()
    assisted_labeling = Labeling.objects.filter(image_id=OuterRef("image_id"), annotator_id=OuterRef("annotator_id"), assisted=True)
    human = Q(annotator__kind=Annotator.KIND_HUMAN)
    return (~human | Q(Exists(assisted_labeling))) if assisted == "only" else (~human | ~Q(Exists(assisted_labeling)))


def assisted_counts(split: str = "") -> dict:
    """Submitted human labelings (of the split) and how many of them were made with suggestions in view."""
    labelings = Labeling.objects.filter(status=Labeling.STATUS_SUBMITTED, annotator__kind=Annotator.KIND_HUMAN)
    if split:
        labelings = labelings.filter(image__split=split)
    counts = labelings.aggregate(total=Count("pk"), assisted=Count("pk", filter=Q(assisted=True)))
    return {"human_labelings": counts["total"], "assisted_labelings": counts["assisted"]}


def label_fingerprint(split: str = "", adjudications: bool = True, version: int | None = None) -> str:
    """The label version (annotations.label_version: an integer every write of labels, submitted labelings
    and adjudications bumps in its transaction) with the split: one read of a tiny table, where an
    aggregate over every label cost most of a warm agreement request at 100,000 images (issue 29).
    `adjudications=False`: the version of the labels alone (what the agreement study reads; issue 37); `version`: a given one."""
    return digest(label_version.current(adjudications) if version is None else version, split)


def labelings_estimate(split: str = "") -> int:
    """Images (of the split) times annotators: what a study over every label reads, in (image, annotator)
    rows, from two counts (scoring.services.cache decides by it whether a first computation runs inline)."""
    images = Image.objects.filter(split=split) if split else Image.objects.all()
    return images.count() * Annotator.objects.count()


def load_labels(split: str = "", image_ids: list[int] | None = None, annotator_ids: list[int] | None = None,
                assisted: str = "include") -> LabelSet:
    """All counted labels as a (annotators, images, attributes) array; three queries. `assisted` (ASSISTED_MODES):
    which human labelings count, by whether model suggestions were in view."""
    tax = taxonomy.active()
    keys = list(tax.keys)
    key_index = {k: j for j, k in enumerate(keys)}
    attr_key = {v: k for k, v in taxonomy.attribute_ids().items()}
    labels = Label.objects.filter(_label_filter(), _assisted_filter(assisted))
    if split:
        labels = labels.filter(image__split=split)
    if image_ids is not None:
        labels = labels.filter(image_id__in=image_ids)
    if annotator_ids is not None:
        labels = labels.filter(annotator_id__in=annotator_ids)
    # ids -> positions: annotators in their listed order, images sorted, attributes of the active taxonomy (-1: other).
    # Each span's labels are reduced to what the array takes before the next is read, and scattered one span at a
    # time, so that neither every label's four columns nor their positions are held at once (issue 37).
    known = np.array(sorted(attr_key), dtype=np.int64)
    index = np.array([key_index.get(attr_key[t], -1) for t in known.tolist()], dtype=np.int64)
    parts, seen_annotators, seen_images = [], [], []
    for a_col, i_col, t_col, v_col in _label_spans(labels, image_ids):
        seen_annotators.append(np.unique(a_col))
        if image_ids is None:
            seen_images.append(np.unique(i_col))
        k_pos = np.full(t_col.size, -1, dtype=np.int64)
        if known.size:
            at = np.minimum(np.searchsorted(known, t_col), known.size - 1)
            k_pos = np.where(known[at] == t_col, index[at], -1)
        keep = k_pos >= 0
        parts.append((a_col[keep], i_col[keep], k_pos[keep].astype(np.int16), v_col[keep]))
    every = np.unique(np.concatenate(seen_annotators)) if seen_annotators else np.empty(0, dtype=np.int64)
    annotators = list(Annotator.objects.filter(id__in=every.tolist()).order_by("kind", "name").values_list("id", "name", "kind"))
    if image_ids is None:
        images = np.unique(np.concatenate(seen_images)).tolist() if seen_images else []
    else:
        images = sorted(set(image_ids))
    values = np.full((len(annotators), len(images), len(keys)), np.nan)
    a_ids = np.array([a[0] for a in annotators], dtype=np.int64)
    a_order = np.argsort(a_ids)
    image_array = np.asarray(images, dtype=np.int64)
    while parts:
        a_col, i_col, k_pos, v_col = parts.pop(0)
        values[a_order[np.searchsorted(a_ids[a_order], a_col)], np.searchsorted(image_array, i_col), k_pos] = v_col
    return LabelSet(
        values=values,
        names=[a[1] for a in annotators],
        kinds=[a[2] for a in annotators],
        keys=keys,
        attr_levels=[tax.level_of[k] for k in keys],
        image_ids=images,
        annotator_ids=[a[0] for a in annotators],
    )


LABEL_ID_SPAN = 20_000  # image ids whose labels one query reads on PostgreSQL (load_labels)


def _label_spans(labels, image_ids: list[int] | None):
    """(annotator, image, attribute, value) columns of the labels queryset as numpy arrays, a span of image ids at a time.

    On PostgreSQL the labels are read LABEL_ID_SPAN image ids at a time, each span's rows packed by the
    database into one bytea (`numeric_columns`): no Python object per label, 2.6M labels in about a
    third of the time of a row cursor (issue 37), and no single bytea of every label (267 MB at 100,000
    images). Elsewhere one span: the rows go through a chunked cursor into numpy columns (`_columns`;
    8.36M labels held as Python tuples took about 2 GB)."""
    fields = ("annotator_id", "image_id", "attribute_id", "value")
    if connection.vendor != "postgresql":
        yield _columns(labels.values_list(*fields), (np.int64, np.int64, np.int64, float))
        return
    if image_ids is not None:
        first, last = (min(image_ids), max(image_ids)) if image_ids else (None, None)
    else:
        span = Image.objects.aggregate(first=Min("id"), last=Max("id"))
        first, last = span["first"], span["last"]
    if first is None:
        return
    for lo in range(first, last + 1, LABEL_ID_SPAN):
        sql, params = labels.filter(image_id__gte=lo, image_id__lt=lo + LABEL_ID_SPAN).values_list(*fields).query.sql_with_params()
        yield tuple(numeric_columns(sql, params, len(fields)))


def adjudication_array(image_ids: list[int], keys: list[str]) -> np.ndarray:
    """(images, attributes) adjudicated values, NaN where none; one query (of theirs by id for up to 1,000 images)."""
    attr_key = {v: k for k, v in taxonomy.attribute_ids().items()}
    key_index, i_index = {k: j for j, k in enumerate(keys)}, {image_id: i for i, image_id in enumerate(image_ids)}
    out = np.full((len(image_ids), len(keys)), np.nan)
    rows = Adjudication.objects.filter(image_id__in=image_ids) if len(image_ids) <= 1000 else Adjudication.objects
    for image_id, attribute_id, value in rows.values_list("image_id", "attribute_id", "value"):
        if image_id in i_index and attr_key.get(attribute_id) in key_index:
            out[i_index[image_id], key_index[attr_key[attribute_id]]] = value
    return out


def image_labels(image: Image) -> list[dict]:
    """Every counted label of one image with its annotator and rationale (one query)."""
    rows = (
        Label.objects.filter(_label_filter(), image=image)
        .select_related("annotator", "attribute")
        .order_by("annotator__kind", "annotator__name", "attribute__order")
    )
    return [
        {"annotator": r.annotator.name, "annotator_id": r.annotator_id, "kind": r.annotator.kind,
         "key": r.attribute.key, "value": r.value, "rationale": r.rationale}
        for r in rows
    ]


def assisted_labelings(image: Image) -> dict[str, dict]:
    """The image's submitted human labelings made with model suggestions in view: annotator name -> the models seen
    ("from") and the suggestion shown per attribute ("suggested"); one query."""
    rows = Labeling.objects.filter(image=image, status=Labeling.STATUS_SUBMITTED, assisted=True).values_list(
        "annotator__name", "suggestions_seen", "suggested_values")
    return {name: {"from": list(seen or []), "suggested": dict(suggested or {})} for name, seen, suggested in rows}
