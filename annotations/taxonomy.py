"""The CPRT taxonomy: the project's data file, and a plain, cached view of the active version.

`annotations/data/taxonomy.json` is the project's own copy of the taxonomy (22 attributes, 4 levels,
annotation questions). A data migration loads it into the database; `active()` reads the newest
version back as plain data that the scoring engine and the importers use.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TAXONOMY_FILE = Path(__file__).resolve().parent / "data" / "taxonomy.json"


@dataclass(frozen=True)
class AttributeInfo:
    key: str
    level: int
    order: int
    question: str


@dataclass(frozen=True)
class Taxonomy:
    version: str
    attributes: tuple[AttributeInfo, ...]
    level_names: dict

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(a.key for a in self.attributes)

    @property
    def level_of(self) -> dict[str, int]:
        return {a.key: a.level for a in self.attributes}

    def keys_of_level(self, level: int) -> tuple[str, ...]:
        return tuple(a.key for a in self.attributes if a.level == level)

    @property
    def level_maxima(self) -> tuple[int, int, int, int]:
        return tuple(len(self.keys_of_level(level)) for level in (1, 2, 3, 4))


def read_file(path: Path = TAXONOMY_FILE) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def from_data(data: dict) -> Taxonomy:
    attrs = tuple(
        AttributeInfo(key=a["key"], level=int(a["level"]), order=int(a["order"]), question=a["question"])
        for a in sorted(data["attributes"], key=lambda a: a["order"])
    )
    return Taxonomy(version=str(data["version"]), attributes=attrs, level_names={lv["level"]: lv["name"] for lv in data["levels"]})


@lru_cache(maxsize=1)
def from_file() -> Taxonomy:
    """The taxonomy as shipped; identical to the database copy unless a newer version was loaded."""
    return from_data(read_file())


def _active_version() -> tuple:
    """(pk, version, created_at) of the newest stored version: one small query; versions are never edited."""
    from annotations.models import TaxonomyVersion

    row = TaxonomyVersion.objects.order_by("-created_at", "-id").values_list("pk", "version", "created_at").first()
    if row is None:
        raise RuntimeError("No taxonomy loaded: run `python manage.py migrate`.")
    return row


def active() -> Taxonomy:
    """The newest taxonomy version stored in the database (parsed once per process and version)."""
    return _cached(*_active_version())


@lru_cache(maxsize=4)
def _cached(pk, version, created_at) -> Taxonomy:
    from annotations.models import TaxonomyVersion

    return from_data(TaxonomyVersion.objects.values_list("source", flat=True).get(pk=pk))


_ATTRIBUTE_IDS: dict[tuple, dict[str, int]] = {}


def attribute_ids() -> dict[str, int]:
    """key -> Attribute primary key for the active taxonomy version (looked up once per process and version)."""
    from annotations.models import Attribute

    version = _active_version()
    ids = _ATTRIBUTE_IDS.get(version)
    if ids is None:
        ids = dict(Attribute.objects.filter(taxonomy_id=version[0]).values_list("key", "id"))
        if ids:  # never remember a version whose attributes are not stored yet
            _ATTRIBUTE_IDS[version] = ids
    return dict(ids)
