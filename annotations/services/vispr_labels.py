"""VISPR's own labels as one more annotator (spec vispr-and-benchmarks.md §2): the `vispr` annotator,
kind `dataset`.

The mapping is a data file of the project (`settings.CPRT_VISPR_MAPPING_FILE`, by default
`annotations/data/vispr_mapping.json`): CPRT attribute -> the VISPR attribute ids that make it present.
A CPRT attribute with at least one VISPR id is 1 when any of them is among the image's VISPR labels
(presence-only) and 0 otherwise; one with none (emotion_mental_health in the shipped file) gets *no
label*, never 0. The label's rationale names the VISPR ids that made it 1.

Labels are written on import (services/vispr_release.py) and rewritten for every VISPR image by
`rewrite_all` (`manage.py vispr_labels --rewrite`) after the file is replaced; both go through
services/labels.py, so every change has a history row and profiles whose consensus includes `vispr`
are rescored (`labels_changed`).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

from core import strictjson
from core.audit import audit

from .. import label_version, taxonomy
from ..models import Annotator, Image, Label, VisprAttribute
from .labels import LabelSet, Written, write_label_sets

CHUNK = 2000


class MappingError(ValueError):
    """The mapping file cannot be used; the message says why. Nothing was written."""


@dataclass(frozen=True)
class Mapping:
    version: str
    by_attribute: dict[str, tuple[str, ...]]  # CPRT key -> VISPR ids (empty: no label)
    path: Path

    @property
    def vispr_ids(self) -> set[str]:
        return {vid for ids in self.by_attribute.values() for vid in ids}

    def values(self, vispr_labels: Iterable[str]) -> dict[str, tuple[float, str]]:
        """CPRT key -> (0 or 1, rationale) for one image's VISPR labels; unmapped CPRT attributes absent."""
        present = set(vispr_labels)
        out = {}
        for key, ids in self.by_attribute.items():
            if ids:
                hits = [vid for vid in ids if vid in present]
                out[key] = (1.0, "VISPR: " + ", ".join(hits)) if hits else (0.0, "")
        return out


def read_mapping(path: Path | str | None = None) -> Mapping:
    path = Path(path or settings.CPRT_VISPR_MAPPING_FILE)
    try:
        data = strictjson.loads(path.read_text(encoding="utf-8"), allow_nan=True)
    except OSError as exc:
        raise MappingError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise MappingError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("mapping"), dict):
        raise MappingError(f'{path}: expected an object with a "mapping" object (CPRT attribute -> list of VISPR ids).')
    keys = taxonomy.active().keys
    unknown = sorted(set(data["mapping"]) - set(keys))
    if unknown:
        raise MappingError(f"{path}: unknown CPRT attribute(s) {', '.join(unknown)}; the attributes are {', '.join(keys)}.")
    by_attribute: dict[str, tuple[str, ...]] = {}
    for key in keys:
        ids = data["mapping"].get(key, [])
        if not isinstance(ids, list) or not all(isinstance(v, str) and v for v in ids):
            raise MappingError(f"{path}: {key} must map to a list of VISPR attribute ids (strings).")
        by_attribute[key] = tuple(ids)
    return Mapping(str(data.get("version", "")), by_attribute, path)


def check_known(mapping: Mapping, known: Iterable[str]) -> list[str]:
    """VISPR ids the mapping names that `known` (an attributes.tsv) lacks: a mapping for another release."""
    return sorted(mapping.vispr_ids - set(known))


def write_vispr_labels(rows: Sequence[tuple[int, Sequence[str]]], mapping: Mapping, *, notify: bool = True) -> tuple[Written, int]:
    """Write the `vispr` annotator's labels of (image id, VISPR labels) rows; labels on attributes the
    mapping no longer covers are removed. Returns (what was written, labels removed). Call inside the
    caller's transaction to make it part of a larger write."""
    annotator = Annotator.vispr()
    attr_ids = taxonomy.attribute_ids()
    unmapped = [attr_ids[key] for key, ids in mapping.by_attribute.items() if not ids]
    written = Written()
    removed = 0
    with transaction.atomic():
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start : start + CHUNK]
            sets = [LabelSet(image_id, annotator.pk, {attr_ids[k]: v for k, v in mapping.values(labels).items()}) for image_id, labels in chunk]
            part = write_label_sets(sets, notify=notify)
            written.created += part.created
            written.changed += part.changed
            written.unchanged += part.unchanged
            if unmapped:
                stale = Label.objects.filter(annotator=annotator, image_id__in=[r[0] for r in chunk], attribute_id__in=unmapped)
                removed += stale.count()
                for label in stale:
                    label.delete()  # one by one: each removal gets its history row
        if removed:
            label_version.bump([annotator.pk])  # removals change the labels as writes do
    return written, removed


def rewrite_all(user=None, mapping: Mapping | None = None) -> dict:
    """Rewrite the `vispr` labels of every image imported from VISPR under the current mapping file."""
    mapping = mapping or read_mapping()
    rows = list(Image.objects.exclude(vispr_split="").order_by("id").values_list("id", "vispr_labels"))
    with transaction.atomic():
        written, removed = write_vispr_labels(rows, mapping)
        result = {"images": len(rows), "created": written.created, "changed": written.changed,
                  "unchanged": written.unchanged, "removed": removed, "mapping": str(mapping.path), "version": mapping.version}
        audit(user, "vispr_labels.rewrite", None, **result)
    return result


def mapping_table(mapping: Mapping) -> dict:
    """The mapping page: one row per CPRT attribute (its VISPR ids with their descriptions from the
    imported attributes.tsv), and the imported VISPR attributes that map to nothing."""
    described = {a.attribute_id: a for a in VisprAttribute.objects.all()}
    tax = taxonomy.active()
    rows = []
    for info in tax.attributes:
        ids = mapping.by_attribute.get(info.key, ())
        rows.append({
            "key": info.key, "level": info.level,
            "vispr": [{"id": vid, "description": described[vid].description if vid in described else None} for vid in ids],
        })
    mapped = mapping.vispr_ids
    unmapped = [a for a in described.values() if a.attribute_id not in mapped]
    return {"rows": rows, "unmapped": sorted(unmapped, key=lambda a: (a.idx, a.attribute_id)),
            "imported": bool(described), "missing": check_known(mapping, described) if described else []}
