"""Importing CPRT-Bench rows and fitting the profile (weights and boundaries) from every stored published row.

On PostgreSQL the file is read once: every row is checked as it is COPYed into a staging table, the
database finds duplicate ids, and a file with any problem is refused inside the import's transaction,
so nothing stays (copying.py). Elsewhere it is read twice: a validation pass that keeps only the ids
(duplicate detection), then a write pass in chunks inside one transaction. The fit reads every stored
row back from the database, aggregated there into distinct rows with their counts (refit.py), so its
memory does not grow with the rows.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import connection, transaction
from django.utils import timezone

from annotations import taxonomy
from annotations.models import Annotator, Image
from annotations.services.labels import LabelSet, write_label_sets
from core.audit import audit

from .. import engine
from .. import fit as fit_lib
from .. import profiles
from ..models import ScoringProfile
from ..services.scores import recompute_scores
from . import refit
from .reading import _key, iter_valid_rows, scan_file
from .common import DEFAULT_PROFILE, SPLITS, chunked
from .copying import store_file_with_copy


# Import


@dataclass
class ImportResult:
    rows: int  # rows of this file
    images_created: int
    images_updated: int
    split_differs: list[str]  # ids of existing images whose split is not the one given (kept as they were)
    profile: ScoringProfile
    fit: engine.BoundaryFit
    mismatches: list[dict]  # {"id", "published", "computed"} for every stored row whose level is not l*
    activated: bool
    not_activated_reason: str
    scored: dict = field(default_factory=dict)
    joint: fit_lib.ProfileFit | None = None  # the joint weights + boundaries fit of every stored row
    fitted_rows: int = 0  # every stored published row of this profile's ground truth (all splits, all imports)
    per_split: list[dict] = field(default_factory=list)
    previous_active: str = ""  # the active profile before the import ("" when none)
    active_now: str = ""
    consensus: dict = field(default_factory=dict)  # {"changed", "before", "after"} (annotator names)


def check_profile_name(name: str) -> str:
    try:
        validate_slug(name)
    except ValidationError:
        raise ValueError(f"Profile name {_key(name)} must be a slug (letters, digits, '-', '_').") from None
    if len(name) > 64:
        raise ValueError("Profile name is longer than 64 characters.")
    return name


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}: use one of {', '.join(SPLITS)}.")
    return split


def import_bench_file(path: Path | str, split: str, profile_name: str = DEFAULT_PROFILE, actor=None,
                      set_consensus: bool = False) -> ImportResult:
    """Validate a CPRT-Bench file, store its rows, fit the profile from every stored published row, rescore; atomically.

    The consensus set of an existing profile is left as it is unless `set_consensus` (then it becomes the
    imported ground truth); a profile this import creates starts with the imported ground truth as its
    consensus set (it has none to keep).
    """
    path = Path(path)
    check_split(split)
    check_profile_name(profile_name)
    tax = taxonomy.active()
    if len(tax.keys) != sum(engine.LEVEL_MAXIMA) or tax.level_maxima != engine.LEVEL_MAXIMA:
        raise ValueError(f"The active taxonomy has {tax.level_maxima} attributes per level; the score needs {engine.LEVEL_MAXIMA}.")
    use_copy = USE_COPY and connection.vendor == "postgresql"
    if not use_copy:
        scan_file(path, tax)  # the COPY path checks every row as it copies it (one pass), inside the transaction
    with transaction.atomic():
        annotator = Annotator.ground_truth(profile_name)
        source = f"CPRT-Bench import of {path.name}"
        rows, image_ids, created, updated, split_differs = _store_rows(path, tax, split, annotator, source, actor, use_copy)
        stored = refit.stored_published_rows(annotator, tax)
        joint, per_split = refit.fit_stored(stored)
        # Per-level least-squares lines under the fitted weights: diagnostics only (partition gaps, residuals);
        # weighted by the rows each distinct entry stands for (its level mismatches are the joint fit's).
        fit = engine.fit_bounds(stored.counts, stored.scores, None, joint.weights or engine.WEIGHTS, rows=stored.rows)
        mismatches = [{"id": vispr_id, "published": m.published, "computed": engine.determined_level(m.counts) or 4}
                      for m, vispr_id in zip(stored.mismatches, stored.vispr_ids())]
        previous = ScoringProfile.active_or_none()
        existing = ScoringProfile.objects.select_for_update().filter(name=profile_name).first()
        before = profiles.snapshot(existing) if existing is not None else {}
        consensus_before = _names(existing) if existing is not None else []
        profile, activated, reason = _store_profile(profile_name, existing, path, split, tax, stored, fit, joint, per_split, mismatches)
        if existing is None or set_consensus:
            profile.consensus_annotators.set([annotator])
        if activated:
            profile.activate()
        # Audit old -> new and rescore what the change of boundaries, weights or consensus set decides.
        consensus = {"changed": _names(profile) != consensus_before, "created": existing is None,
                     "before": consensus_before, "after": _names(profile)}
        rescored = profiles.record_change(actor, profile, before)
        if consensus["changed"]:
            scored = rescored or {"scored": 0, "incomplete": 0}  # every image was rescored under the new set
        elif profile.consensus_annotators.exists():
            scored = recompute_scores(profile, image_ids)  # the imported images' labels may have changed
        else:
            scored = {"scored": 0, "incomplete": 0}
        active_now = ScoringProfile.active_or_none()
        if (previous and previous.pk) != (active_now and active_now.pk):
            audit(actor, "profile.activate", profile, old=previous.label if previous else None,
                  new=active_now.label if active_now else None, reason="CPRT-Bench import")
        audit(
            actor,
            "import_cprt",
            profile,
            file=path.name,
            split=split,
            rows=rows,
            fitted_rows=len(stored),
            per_split=[{k: r[k] for k in ("split", "rows", "max_residual", "reproduces")} for r in per_split],
            images_created=created,
            profile_version=profile.version,
            bounds={"old": [before.get("lo1"), before.get("lo2"), before.get("lo3")] if before else None,
                    "new": [profile.lo1, profile.lo2, profile.lo3]},
            weights={"old": before.get("weights"), "new": list(profile.weights)},
            weight_candidates=[c.name for c in joint.candidates],
            max_residual=joint.max_residual,
            tolerance=joint.tolerance,
            level_mismatches=len(mismatches),
            activated=activated,
            active={"old": previous.label if previous else None, "new": active_now.label if active_now else None},
            consensus=consensus,
        )
    return ImportResult(
        rows=rows,
        images_created=created,
        images_updated=updated,
        split_differs=split_differs,
        profile=profile,
        fit=fit,
        joint=joint,
        mismatches=mismatches,
        activated=activated,
        not_activated_reason=reason,
        scored=scored,
        fitted_rows=len(stored),
        per_split=per_split,
        previous_active=previous.label if previous else "",
        active_now=active_now.label if active_now else "",
        consensus=consensus,
    )


def _names(profile: ScoringProfile) -> list[str]:
    return sorted(profile.consensus_annotators.values_list("name", flat=True))


# PostgreSQL: the rows are checked and streamed with COPY into a staging table in one pass and merged
# set-based (copying.py); other databases (SQLite) take the bulk path below, after scan_file. Both
# refuse a bad file with the same problems and write the same rows (tests compare them).
USE_COPY = True


def _store_rows(path, tax, split, annotator, source, actor, use_copy: bool) -> tuple[int, list[int], int, int, list[str]]:
    attr_ids = taxonomy.attribute_ids()
    attribute_pks = [attr_ids[key] for key in tax.keys]
    if use_copy:
        return store_file_with_copy(path, tax, attribute_pks, split, annotator.pk, source, getattr(actor, "pk", None))
    image_ids: list[int] = []
    created = updated = 0
    split_differs: list[str] = []
    image_table = connection.ops.quote_name(Image._meta.db_table)
    for chunk in chunked(iter_valid_rows(path, tax)):
        vispr_ids = [row.id for row in chunk]
        existing = {vid: (pk, s) for vid, pk, s in Image.objects.filter(vispr_id__in=vispr_ids).values_list("vispr_id", "id", "split")}
        new = [
            Image(vispr_id=row.id, split=split, source=source, published_level=row.level, published_score=row.score)
            for row in chunk
            if row.id not in existing
        ]
        Image.objects.bulk_create(new)
        created += len(new)
        updates = [(row.level, row.score, existing[row.id][0]) for row in chunk if row.id in existing]
        if updates:
            _execute_many(f"UPDATE {image_table} SET published_level = %s, published_score = %s WHERE id = %s", updates)
            updated += len(updates)
            split_differs.extend(vid for vid, (_, s) in existing.items() if s != split)
        pk_of = dict(Image.objects.filter(vispr_id__in=vispr_ids).values_list("vispr_id", "id"))
        # The one label-writing API, in bulk: history rows for what was created or changed, none for the rest.
        write_label_sets(
            (LabelSet(pk_of[row.id], annotator.pk, {pk: (value, "") for pk, value in zip(attribute_pks, row.labels)}) for row in chunk),
            user=actor,
        )
        image_ids.extend(pk_of[row.id] for row in chunk)
    return len(image_ids), image_ids, created, updated, split_differs


def _execute_many(sql: str, rows: list[tuple]) -> None:
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def fitted_splits(per_split: list[dict]) -> str:
    """The splits a fit used, named in the report's `split` ("test, train" for a fit over both)."""
    return ", ".join(str(r["split"]) for r in per_split)


def fit_report(path, split, tax, stored: refit.StoredRows, fit: engine.BoundaryFit, joint: fit_lib.ProfileFit,
               per_split: list[dict], mismatches: list[dict]) -> dict:
    return {
        "joint": joint.report(),
        "weights": None if joint.weights is None else list(joint.weights),
        "weight_set": joint.weight_set,
        "weight_candidates": [c.name for c in joint.candidates],
        "decimals": joint.decimals,
        "tolerance": joint.tolerance,
        "file": Path(path).name,  # the import that triggered this fit
        "import_split": split,  # the split that import wrote to
        "split": fitted_splits(per_split),  # the splits whose rows the fit used, e.g. "test, train"
        "splits": [r["split"] for r in per_split],
        "rows": len(stored),  # every stored published row the fit used
        "per_split": per_split,
        "taxonomy_version": tax.version,
        "fitted_at": timezone.now().isoformat(timespec="seconds"),
        "method": "joint fit of weights (named and exponential sets) and boundaries (scoring/fit.py) over every stored "
                  "published row of this profile's ground truth (all splits, all imports); per-level least-squares lines "
                  "under the fitted weights shown for diagnosis",
        "levels": [dataclasses.asdict(level_fit) for level_fit in fit.levels],
        "bounds_lo": list(joint.bounds.lo) if joint.bounds else None,
        "max_residual": joint.max_residual,
        "partition_gaps": fit.partition_gaps,
        "problems": joint.problems,
        "reproduces": joint.reproduces and all(r["reproduces"] for r in per_split),
        "level_mismatches": mismatches,
    }


def _store_profile(name, profile, path, split, tax, stored, fit, joint, per_split, mismatches) -> tuple[ScoringProfile, bool, str]:
    if profile is None:
        profile = ScoringProfile(name=name, version=1, weights=list(engine.WEIGHTS))
    else:
        profile.version += 1
    if joint.bounds is not None:
        profile.lo1, profile.lo2, profile.lo3 = joint.bounds.lo[:3]
        profile.weights = list(joint.weights)
    elif profile.pk is None:
        profile.lo1, profile.lo2, profile.lo3 = engine.PROVISIONAL_LO[:3]
    failing = [r for r in per_split if not r["reproduces"]]
    reproduces = joint.reproduces and not failing
    precision = f"{joint.decimals} decimals" if joint.decimals is not None else "full precision"
    if reproduces:
        reason = ""
    elif joint.bounds is None:
        reason = "the fit produced no valid boundaries: " + "; ".join(joint.problems)
    elif joint.problems:
        reason = "the fit is not determined by the stored rows: " + "; ".join(joint.problems)
    elif failing and joint.reproduces:
        reason = "; ".join(f"split {r['split']}: largest residual {r['max_residual']:.3g} exceeds its tolerance {r['tolerance']:.3g} "
                           f"({r['failing_rows']} of {r['rows']} rows)" for r in failing)
    else:
        reason = (f"the largest residual {joint.max_residual:.3g} exceeds the tolerance {joint.tolerance:.3g} for scores printed "
                  f"with {precision}: no weight set and boundaries reproduce the published scores")
    profile.provisional = not reproduces
    when = timezone.now().strftime("%Y-%m-%d")
    splits = ", ".join(f"{r['split']} {r['rows']}" for r in per_split)
    if reproduces:
        profile.source = (
            f"Fitted on {when} from every stored CPRT-Bench row of this profile ({len(stored)} rows: {splits}); "
            f"weights {joint.weight_set} {list(joint.weights)}; largest residual {joint.max_residual:.3g} "
            f"(tolerance {joint.tolerance:.3g}, scores printed with {precision})."
        )
    else:
        kept = "fitted but not trusted" if joint.bounds is not None else "kept from before (or the provisional default)"
        profile.source = (
            f"PROVISIONAL: fitted on {when} from every stored CPRT-Bench row of this profile ({len(stored)} rows: {splits}); "
            f"boundaries {kept} because {reason}."
        )
    profile.fit_report = fit_report(path, split, tax, stored, fit, joint, per_split, mismatches) | {"activated": reproduces}
    if not reproduces:
        # A profile whose boundaries do not reproduce the published scores must not stay the active one.
        profile.is_active = False
    profile.save()
    return profile, reproduces, reason
