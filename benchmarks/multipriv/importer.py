"""Import the individual-level MultiPriv data from the user's copy of the release.

Layout (CyberChangAn/MultiPriv-PII): `VLM/individual-level/person_<n>/` holds images named by
privacy category and index (`A1.png`, `D3.jpg`; letters A-G) and one profile file, a JSON list
holding one object of string fields ("None" = absent). ROOT may be the repository's root, its
`VLM/individual-level` folder, or any folder of `person_<n>` folders. The release itself names some
profile files after another number (`person_21/person_2.json`, the Chinese copy of person 2): the
one JSON file of a folder is its profile, whatever its name, and the name is kept.

Everything is checked first; a refused file or folder refuses the whole import (nothing written,
every problem listed); other entries are skipped with a reason. Re-importing the same files adds
nothing; a changed profile or image replaces the stored one and is counted (a profile is changed
when its file is, or when the field table reads the same file differently). A run keeps the truth it
was launched with (`benchmarks.multipriv.truth`): a re-import never moves its figures.
"""
from __future__ import annotations

import hashlib
import json
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from django.core.files.base import ContentFile
from django.db import transaction

from core import strictjson
from core.audit import audit

from annotations.images import ImageRejected, clean_image
from annotations.services.vispr import as_text, read_regular_file
from . import fields
from .models import Person, PersonImage

PERSON_DIR = re.compile(r"^person_\d{1,6}\Z")
IMAGE_NAME = re.compile(r"^([A-G])(\d{1,3})\.(png|jpg|jpeg)\Z", re.IGNORECASE)
MAX_PROFILE_BYTES = 256 * 1024


class ImportRefused(ValueError):
    """Nothing was written; the message lists every problem."""


@dataclass
class CheckedImage:
    category: str
    index: int
    data: bytes
    extension: str
    width: int
    height: int
    sha256: str


@dataclass
class CheckedPerson:
    name: str
    profile_file: str
    raw_profile: dict
    profile: dict
    profile_sha256: str
    images: list[CheckedImage] = field(default_factory=list)


@dataclass
class MultiprivImport:
    persons: int = 0  # persons in the folder
    images: int = 0
    fields: int = 0  # profile fields present (not "None"), over all persons
    added_persons: int = 0
    updated_persons: int = 0
    added_images: int = 0
    replaced_images: int = 0
    unchanged_images: int = 0
    unknown_fields: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def as_json(self) -> dict:
        return {**{k: v for k, v in self.__dict__.items() if k != "skipped"},
                "skipped": [{"path": p, "reason": r} for p, r in self.skipped]}


def person_folders(root: Path) -> Path:
    """The folder that holds the person_<n> folders."""
    for candidate in (root, root / "individual-level", root / "VLM" / "individual-level"):
        if candidate.is_dir() and not candidate.is_symlink() and any(PERSON_DIR.match(p.name) for p in candidate.iterdir()):
            return candidate
    raise ImportRefused(f"{as_text(str(root))}: no person_<n> folders found (looked in it, in individual-level/ and in "
                        "VLM/individual-level/). Point the import at your copy of the MultiPriv release.")


def parse_profile(raw: bytes, where: str) -> tuple[dict, dict]:
    """(raw object, canonical profile) of one profile file; ValueError with a message when malformed."""
    if len(raw) > MAX_PROFILE_BYTES:
        raise ValueError(f"{len(raw):,} bytes, over the {MAX_PROFILE_BYTES:,}-byte limit for a profile")
    try:
        data = strictjson.loads(raw.decode("utf-8-sig"), allow_nan=True)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not valid UTF-8 JSON: {exc}") from None
    except strictjson.TooDeep as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    if isinstance(data, dict):
        data = [data]
    if not (isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict)):
        raise ValueError("expected a JSON list holding one object of profile fields")
    obj = data[0]
    if not obj:
        raise ValueError("the profile object has no fields")
    profile: dict[str, str | None] = {}
    for key, value in obj.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError("a field name is empty")
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ValueError(f"field {key!r}: expected text or a number, got {type(value).__name__}")
        name = fields.canonical(key)
        if name in profile:
            raise ValueError(f"field {key!r} repeats {name!r}")
        text = str(value).strip()
        profile[name] = None if text in ("", fields.ABSENT) else text
    return obj, profile


def check_person(folder: Path, skipped: list, refused: list) -> CheckedPerson | None:
    name = folder.name
    profiles, images = [], []
    for path in sorted(folder.iterdir()):
        shown = f"{name}/{as_text(path.name)}"
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            refused.append((shown, "a symbolic link (not followed)"))
            continue
        if not stat.S_ISREG(mode):
            skipped.append((shown, "not a regular file"))
            continue
        if path.suffix.lower() == ".json":
            profiles.append(path)
        elif m := IMAGE_NAME.match(path.name):
            images.append((path, m[1].upper(), int(m[2])))
        else:
            skipped.append((shown, "neither a profile (.json) nor an image named <A-G><index>.png/.jpg"))
    if len(profiles) != 1:
        found = ", ".join(as_text(p.name) for p in profiles) or "none"
        refused.append((name, f"expected one profile .json file, found {found}"))
        return None
    raw = read_regular_file(profiles[0])
    if not isinstance(raw, bytes):
        refused.append((f"{name}/{as_text(profiles[0].name)}", "not a readable regular file of acceptable size"))
        return None
    try:
        raw_profile, profile = parse_profile(raw, name)
    except ValueError as exc:
        refused.append((f"{name}/{as_text(profiles[0].name)}", str(exc)))
        return None
    person = CheckedPerson(name, profiles[0].name, raw_profile, profile, hashlib.sha256(raw).hexdigest())
    seen: dict[tuple[str, int], str] = {}
    for path, category, index in images:
        shown = f"{name}/{as_text(path.name)}"
        if (category, index) in seen:
            refused.append((shown, f"same category and index as {seen[(category, index)]}"))
            continue
        seen[(category, index)] = path.name
        try:
            data = read_regular_file(path)
            if not isinstance(data, bytes):
                raise ImageRejected("not a regular file, or over the byte limit")
            clean = clean_image(data)
        except ImageRejected as exc:
            refused.append((shown, str(exc)))
            continue
        except OSError as exc:
            refused.append((shown, f"unreadable: {exc.strerror or exc}"))
            continue
        person.images.append(CheckedImage(category, index, clean.data, clean.extension, clean.width, clean.height, clean.sha256))
    if not images:
        skipped.append((name, "no images (kept: the profile alone can still be shown, but no task uses this person)"))
    return person


def check(root: Path) -> tuple[list[CheckedPerson], list, list]:
    base = person_folders(root)
    persons, skipped, refused = [], [], []
    for path in sorted(base.iterdir(), key=lambda p: (len(p.name), p.name)):
        shown = as_text(path.name)
        if path.is_symlink():
            refused.append((shown, "a symbolic link (not followed)"))
        elif not path.is_dir():
            skipped.append((shown, "not a person folder"))
        elif not PERSON_DIR.match(path.name):
            skipped.append((shown, "folder name is not person_<n>"))
        elif person := check_person(path, skipped, refused):
            persons.append(person)
    return persons, skipped, refused


def import_multipriv(root: Path | str, user=None) -> MultiprivImport:
    root = Path(root)
    if not root.is_dir():
        raise ImportRefused(f"{as_text(str(root))} is not a folder.")
    persons, skipped, refused = check(root)
    if refused:
        listed = "\n".join(f"  {path}: {reason}" for path, reason in refused)
        raise ImportRefused(f"{as_text(str(root))}: refused, nothing was written ({len(refused)} problem(s)):\n{listed}")
    if not persons:
        raise ImportRefused(f"{as_text(str(root))}: no person folder could be read.")
    report = MultiprivImport(skipped=skipped)
    report.unknown_fields = sorted({f for p in persons for f in p.profile if fields.category_of(f) == fields.OTHER})
    storage = PersonImage._meta.get_field("file").storage
    created: list[str] = []
    try:
        with transaction.atomic():
            for checked in persons:
                _store_person(checked, report, storage, created)
            audit(user, "import_multipriv", None, folder=as_text(str(root.resolve())), **{
                k: v for k, v in report.as_json().items() if k not in ("skipped", "unknown_fields")})
    except BaseException:
        for name in created:
            storage.delete(name)
        raise
    return report


def _store_person(checked: CheckedPerson, report: MultiprivImport, storage, created: list[str]) -> None:
    report.persons += 1
    report.fields += sum(v is not None for v in checked.profile.values())
    person = Person.objects.filter(name=checked.name).first()
    values = {"profile": checked.profile, "raw_profile": checked.raw_profile, "profile_file": checked.profile_file,
              "profile_sha256": checked.profile_sha256}
    if person is None:
        person = Person.objects.create(name=checked.name, **values)
        report.added_persons += 1
    elif person.profile_sha256 != checked.profile_sha256 or person.profile != checked.profile:
        # the same file read under a changed field table (民族 became Ethnic Group) counts as changed too
        for key, value in values.items():
            setattr(person, key, value)
        person.save()
        report.updated_persons += 1
    stored = {(i.category, i.index): i for i in person.images.all()}
    for image in checked.images:
        report.images += 1
        name = f"{image.sha256[:2]}/{image.sha256}.{image.extension}"
        old = stored.get((image.category, image.index))
        if old is not None and old.sha256 == image.sha256:
            report.unchanged_images += 1
            continue
        if not storage.exists(name):
            storage.save(name, ContentFile(image.data))
            created.append(name)
        if old is None:
            PersonImage.objects.create(person=person, category=image.category, index=image.index, file=name,
                                       width=image.width, height=image.height, sha256=image.sha256)
            report.added_images += 1
        else:
            old.file.name, old.width, old.height, old.sha256 = name, image.width, image.height, image.sha256
            old.save()
            report.replaced_images += 1

