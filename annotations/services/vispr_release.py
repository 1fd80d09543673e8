"""The VISPR import of a release folder as its authors ship it (spec vispr-and-benchmarks.md §1):

    images/<split>/<id>.jpg   annotations/<split>/<id>.json {"id", "image_path", "labels"}
    attributes.tsv (idx TAB attribute_id TAB description)   <split>.txt (lists of annotation files)

What is read:
- attributes.tsv: the attribute ids of this release (never a hard-coded list); a header line starting
  with `idx` is allowed. Stored as `VisprAttribute` rows (the mapping page shows their descriptions).
- the splits: every split folder present, except train2017 unless asked (`vispr_splits`); each is mapped
  to our split (`DEFAULT_SPLIT_MAP`, replaceable); the choice is shown in the result.
- each annotation: strict JSON, an object whose `id` equals its file name, `labels` a list of ids
  that attributes.tsv lists, `image_path` (when given) naming the same id.
- each image: as the plain-folder import checks it (services/vispr.py `check_folder`: links, FIFOs,
  odd names, byte and pixel limits, full decode, metadata stripped, duplicate content).
- `<split>.txt`, when present: an annotation it does not list, or a listed one without a file, is skipped.
- symbolic links [decision]: `images/`, `annotations/`, `images/<split>/` and `annotations/<split>/`
  may be links to folders (images kept on another disk): they are followed and listed in the result
  (`links`, printed and audited); one that leads to no folder refuses the import naming it. Links to
  single files (an image, an annotation, `<split>.txt`) are never followed (skipped, listed).
- skip reasons name the real cause: an annotation whose image file was skipped (e.g. the same pixels
  as another image) says so, as does an image whose annotation file was skipped (e.g. not listed in
  `<split>.txt`); "no image file" / "no annotation file" only when there is none.

Refused (the whole import stops, nothing is written, every problem is listed): attributes.tsv missing
or malformed, a split asked for that is absent or has no mapping, an image that is not an acceptable
image, an annotation that is not valid (JSON, id, labels). Skipped (listed; the rest goes on): files
that are not candidates, an image without annotation and an annotation without image, ids already in
another split.

Idempotent: an image already imported is not stored again; its VISPR labels and split are updated
when its annotation changed (counted). The `vispr` annotator's labels (services/vispr_labels.py) are
written for the images added or changed, in the same transaction.
"""
from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.db import transaction

from core import strictjson
from core.audit import audit

from ..models import ID_PATTERN, Image, VisprAttribute
from . import vispr_labels
from .vispr import Accepted, FolderRefused, as_text, check_folder, parking_folder, point_at_stored, save_parked

DEFAULT_SPLIT_MAP = {"test2017": Image.SPLIT_TEST, "val2017": Image.SPLIT_TRAIN, "train2017": Image.SPLIT_TRAIN}
ASKED_ONLY = ("train2017",)  # imported only when asked (spec §1 [decision])
SPLIT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,15}\Z")
MAX_ANNOTATION_BYTES = 1024 * 1024
OUR_SPLITS = [value for value, _ in Image.SPLITS]
NEW_IMAGES_BATCH = 500  # new Image rows a single INSERT writes

Progress = Callable[[int, int], None]  # (done, total)


def is_release(root: Path) -> bool:
    """A folder in VISPR's layout: `images/` and `annotations/` folders at its top (a symbolic link to a
    folder counts: it is followed, see `followed_links`)."""
    return all((root / name).is_dir() for name in ("images", "annotations"))


def not_release_reason(root: Path) -> str:
    """Why `root` is not a release, naming a symbolic link that leads nowhere (empty when none does)."""
    for name in ("images", "annotations"):
        if (root / name).is_symlink() and not (root / name).is_dir():
            return f" ({name}/ is a symbolic link to {as_text(os.readlink(root / name))!r}, which does not lead to a folder)"
    return ""


def _link_target(path: Path) -> str:
    return as_text(str(path.resolve()))


def linked_folders(root: Path) -> list[Path]:
    """Every symbolic link at `images/`, `annotations/` or directly under them (relative to `root`):
    what an import may follow, whichever splits it reads (the page checks where they lead)."""
    out = [Path(base) for base in ("images", "annotations") if (root / base).is_symlink()]
    for base in ("images", "annotations"):
        if (root / base).is_dir():
            out += [Path(base) / p.name for p in sorted((root / base).iterdir()) if p.is_symlink()]
    return out


def followed_links(root: Path, splits: Iterable[str]) -> list[dict[str, str]]:
    """The symbolic links the import follows [decision]: `images/`, `annotations/` and their
    `<split>/` folders may be links to folders elsewhere (images kept on another disk); each is
    followed and named in the result. Links to single files are never followed."""
    candidates = [Path(base) for base in ("images", "annotations")]
    candidates += [Path(base) / split for split in splits for base in ("images", "annotations")]
    return [{"link": p.as_posix(), "target": _link_target(root / p)} for p in candidates if (root / p).is_symlink()]


def parse_split_map(pairs: Iterable[str]) -> dict[str, str]:
    """`test2017=test` items -> the default mapping with those replaced; ValueError with a message."""
    mapping = dict(DEFAULT_SPLIT_MAP)
    for pair in pairs:
        vispr_split, sep, ours = pair.partition("=")
        if not sep or not SPLIT_NAME.match(vispr_split) or ours not in OUR_SPLITS:
            raise ValueError(f"--map {pair!r}: expected VISPR_SPLIT=OURS with OURS one of {', '.join(OUR_SPLITS)} (e.g. test2017=test).")
        mapping[vispr_split] = ours
    return mapping


@dataclass
class ReleaseImport:
    root: str
    splits: dict[str, str]  # VISPR split -> our split, as imported
    not_imported: list[str]  # split folders present but not asked for
    attributes: int
    links: list[dict[str, str]] = field(default_factory=list)  # symbolic links followed: {"link", "target"}
    added: int = 0
    attached: int = 0
    labels_updated: int = 0
    unchanged: int = 0
    vispr_labels: dict = field(default_factory=dict)  # the vispr annotator's label writes
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def nothing_new(self) -> bool:
        return not (self.added or self.attached or self.labels_updated)

    def as_json(self) -> dict:
        data = asdict(self)
        data["skipped"] = [{"file": name, "reason": reason} for name, reason in self.skipped]
        data["nothing_new"] = self.nothing_new
        return data


def read_attributes(root: Path) -> list[tuple[int, str, str]]:
    """(idx, attribute id, description) of attributes.tsv; FolderRefused naming the line otherwise."""
    path = root / "attributes.tsv"
    if path.is_symlink() or not path.is_file():
        raise FolderRefused(f"{as_text(str(root))}: refused, nothing was written: attributes.tsv is missing (or not a regular file).")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FolderRefused(f"{as_text(str(path))}: refused, nothing was written: unreadable: {exc}") from None
    rows: list[tuple[int, str, str]] = []
    problems = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or (number == 1 and line.lower().startswith("idx")):
            continue
        parts = line.split("\t")
        if len(parts) < 2 or not parts[0].strip().isdigit() or not ID_PATTERN.match(parts[1].strip()):
            problems.append(f"  line {number}: expected idx<TAB>attribute_id<TAB>description, got {line[:80]!r}")
            continue
        attribute_id = parts[1].strip()
        if attribute_id in seen:
            problems.append(f"  line {number}: {attribute_id} again (also line {seen[attribute_id]})")
            continue
        seen[attribute_id] = number
        rows.append((int(parts[0]), attribute_id, "\t".join(parts[2:]).strip()[:300]))
    if not rows and not problems:
        problems.append("  no attribute listed")
    if problems:
        raise FolderRefused(f"{as_text(str(path))}: refused, nothing was written:\n" + "\n".join(problems))
    return rows


def _broken_split_links(root: Path) -> dict[str, list[str]]:
    """Split name -> the `images/<split>` / `annotations/<split>` symbolic links that lead to no folder."""
    broken: dict[str, list[str]] = {}
    for base in ("images", "annotations"):
        for p in (root / base).iterdir():
            if p.is_symlink() and not p.is_dir() and SPLIT_NAME.match(p.name):
                broken.setdefault(p.name, []).append(f"{base}/{p.name} (a symbolic link to {as_text(os.readlink(p))!r})")
    return broken


def choose_splits(root: Path, asked: list[str] | None, split_map: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    present = sorted({
        p.name for base in ("images", "annotations") for p in (root / base).iterdir()
        if p.is_dir() and SPLIT_NAME.match(p.name)  # a link to a folder is followed (see followed_links)
    })
    broken = _broken_split_links(root)
    if asked:
        missing = [s for s in asked if s not in present]
        if missing:
            links = [link for s in missing for link in broken.get(s, [])]
            raise FolderRefused(f"{as_text(str(root))}: refused, nothing was written: split(s) {', '.join(missing)} not found "
                                f"(present: {', '.join(present) or 'none'})"
                                + (f"; {', '.join(links)} does not lead to a folder." if links else "."))
        chosen = list(dict.fromkeys(asked))
    else:
        chosen = [s for s in present if s not in ASKED_ONLY]
    links = [link for s in chosen for link in broken.get(s, [])]
    if links:
        raise FolderRefused(f"{as_text(str(root))}: refused, nothing was written: {', '.join(links)} does not lead to a folder "
                            f"(fix the link, or remove it to import the split without those files).")
    unmapped = [s for s in chosen if s not in split_map]
    if unmapped:
        raise FolderRefused(f"{as_text(str(root))}: refused, nothing was written: no mapping for split(s) {', '.join(unmapped)}: "
                            f"give --map SPLIT=test|train|other.")
    if not chosen:
        raise FolderRefused(f"{as_text(str(root))}: refused, nothing was written: no split folder to import under images/ and annotations/.")
    return {s: split_map[s] for s in chosen}, [s for s in present if s not in chosen]


def read_annotation(path: Path, attribute_ids: set[str]) -> list[str]:
    """The sorted VISPR labels of one annotation file; ValueError with the reason otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_size > MAX_ANNOTATION_BYTES:
            raise ValueError(f"file is {info.st_size:,} bytes, over the {MAX_ANNOTATION_BYTES:,}-byte limit for an annotation")
        raw = fh.read()
    try:
        data = strictjson.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except ValueError as exc:
        raise ValueError(f"malformed JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError('expected a JSON object with "id" and "labels"')
    if data.get("id") != path.stem:
        raise ValueError(f"its id {str(data.get('id'))[:80]!r} disagrees with its file name ({path.stem})")
    image_path = data.get("image_path")
    if image_path is not None and (not isinstance(image_path, str) or Path(image_path).stem != path.stem):
        raise ValueError(f"its image_path {str(image_path)[:120]!r} names another image than {path.stem}")
    labels = data.get("labels")
    if not isinstance(labels, list) or not all(isinstance(v, str) for v in labels):
        raise ValueError('"labels" must be a list of attribute ids')
    unknown = sorted(set(labels) - attribute_ids)
    if unknown:
        raise ValueError(f"unknown attribute id(s) {', '.join(v[:64] for v in unknown[:10])} (not in attributes.tsv)")
    return sorted(set(labels))


def read_annotations(folder: Path, attribute_ids: set[str], listed: set[str] | None, tick) -> tuple[dict, list, list]:
    """id -> labels for every valid annotation file of `folder`, with (file, reason) skipped and refused."""
    found: dict[str, list[str]] = {}
    skipped, refused = [], []
    rel = f"annotations/{folder.name}"
    entries = sorted(folder.iterdir()) if folder.is_dir() else []  # a linked split folder is followed
    for path in entries:
        tick()
        name = f"{rel}/{as_text(path.name)}"
        if path.is_symlink():
            skipped.append((name, "a symbolic link (not followed)"))
        elif path.is_dir():
            skipped.append((name, "a folder (annotations are read from the split folder only)"))
        elif not stat.S_ISREG(path.lstat().st_mode):
            skipped.append((name, "not a regular file (a FIFO, socket or device)"))
        elif path.suffix != ".json":
            skipped.append((name, "not an annotation file name (<id>.json expected)"))
        elif not ID_PATTERN.match(path.stem):
            skipped.append((name, "file name is not a VISPR id (letters, digits, '_', '.', '-')"))
        elif listed is not None and path.stem not in listed:
            skipped.append((name, f"not listed in {folder.name}.txt"))
        else:
            try:
                found[path.stem] = read_annotation(path, attribute_ids)
            except (OSError, ValueError) as exc:
                refused.append((name, getattr(exc, "strerror", None) or str(exc)))
    return found, skipped, refused


def read_list(root: Path, split: str) -> tuple[set[str] | None, list[tuple[str, str]]]:
    path = root / f"{split}.txt"
    if path.is_symlink():
        return None, [(f"{split}.txt", "a symbolic link (not followed): the split's annotations are not filtered by a list")]
    if not path.is_file():
        return None, []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return None, [(f"{split}.txt", f"unreadable, not used: {exc}")]
    return {Path(line.strip()).stem for line in lines if line.strip()}, []


def import_release(root: Path | str, *, vispr_splits: list[str] | None = None, split_map: dict[str, str] | None = None,
                   progress: Progress | None = None, user=None, before_commit: Callable[[], None] | None = None) -> ReleaseImport:
    """Check everything, then write it in one transaction (see the module's text). `progress(done, total)`
    counts the files read; `before_commit()` runs last inside the transaction: raising there (a job that
    was cancelled) writes nothing."""
    root = Path(root)
    if not root.is_dir() or not is_release(root):
        raise FolderRefused(f"{as_text(str(root))} is not a VISPR release folder (images/ and annotations/ expected){not_release_reason(root)}.")
    attributes = read_attributes(root)
    attribute_ids = {a for _, a, _ in attributes}
    mapping = vispr_labels.read_mapping()
    chosen, not_imported = choose_splits(root, vispr_splits, split_map or DEFAULT_SPLIT_MAP)
    result = ReleaseImport(str(root), chosen, not_imported, len(attributes), links=followed_links(root, chosen))
    total = sum(len(os.listdir(root / base / s)) for s in chosen for base in ("images", "annotations") if (root / base / s).is_dir())
    done = [0]

    def tick(n: int = 1) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], total)

    rows = Image.objects.values_list("vispr_id", "split", "vispr_split", "vispr_labels", "file")
    known = {vid: (s, vs, labels, bool(f)) for vid, s, vs, labels, f in rows}
    refused: list[tuple[str, str]] = []
    to_store: list[tuple[Accepted, str, str, list[str]]] = []  # (image, our split, VISPR split, labels)
    to_update: dict[str, tuple[str, list[str]]] = {}  # id already stored -> (VISPR split, labels)
    claimed: dict[str, str] = {}  # id -> VISPR split that claimed it in this run
    seen_hashes: dict[str, str] = {}
    with parking_folder() as parking:
        for vispr_split, ours in chosen.items():
            listed, notes = read_list(root, vispr_split)
            result.skipped += notes
            annotations, skipped, bad = read_annotations(root / "annotations" / vispr_split, attribute_ids, listed, tick)
            result.skipped += skipped
            refused += bad
            annotation_skips = _skips_by_id(skipped, ".json")
            img_dir = root / "images" / vispr_split
            if img_dir.is_dir():  # a linked split folder is followed
                accepted, skipped, bad = check_folder(img_dir, ours, Path(parking), progress=tick, seen_hashes=seen_hashes)
            else:
                accepted, skipped, bad = [], [], []
            # Name a file of an earlier split by its path ("same content as images/test2017/x.jpg"), not its bare name.
            seen_hashes.update({h: f"images/{vispr_split}/{n}" for h, n in seen_hashes.items() if "/" not in n})
            image_skips = _skips_by_id([(f"images/{vispr_split}/{n}", r) for n, r in skipped if not r.startswith("already imported")])
            # An image already stored is not news: its annotation is compared below (unchanged or updated).
            result.skipped += [(f"images/{vispr_split}/{name}", reason) for name, reason in skipped if not reason.startswith("already imported")]
            refused += [(f"images/{vispr_split}/{name}", reason) for name, reason in bad]
            with_image = set()
            for item in accepted:
                with_image.add(item.vispr_id)
                name = f"images/{vispr_split}/{item.file_name}"
                if item.vispr_id not in annotations:
                    result.skipped.append((name, _no_annotation(vispr_split, item.vispr_id, annotation_skips)))
                elif item.vispr_id in claimed:
                    result.skipped.append((name, f"{item.vispr_id} is also in {claimed[item.vispr_id]}; kept there"))
                else:
                    claimed[item.vispr_id] = vispr_split
                    to_store.append((item, ours, vispr_split, annotations[item.vispr_id]))
            for vid, labels in annotations.items():
                if vid in with_image:
                    continue
                name = f"annotations/{vispr_split}/{vid}.json"
                stored = known.get(vid)
                if stored is None or not stored[3]:
                    result.skipped.append((name, _no_image(vispr_split, vid, image_skips)))
                elif stored[1] not in ("", vispr_split) or (not stored[1] and stored[0] != ours) or vid in claimed:
                    result.skipped.append((name, f"{vid} is registered in split {stored[1] or stored[0]}, not {vispr_split}"))
                else:
                    claimed[vid] = vispr_split
                    if stored[1] != vispr_split or list(stored[2]) != labels:
                        to_update[vid] = (vispr_split, labels)
                    else:
                        result.unchanged += 1
            if listed is not None:
                present = {p.stem for p in (root / "annotations" / vispr_split).glob("*.json")}
                result.skipped += [(f"{vispr_split}.txt", f"lists {vid}, which has no annotation file") for vid in sorted(listed - present)[:1000]]
        if refused:
            listed_lines = "\n".join(f"  {name}: {reason}" for name, reason in refused)
            raise FolderRefused(f"{as_text(str(root))}: refused, nothing was written: {len(refused)} file(s) cannot be imported "
                                f"(fix or remove them and run again):\n{listed_lines}")
        _write(result, attributes, to_store, to_update, mapping, user, before_commit)
    return result


def _skips_by_id(skipped: list[tuple[str, str]], suffix: str | None = None) -> dict[str, tuple[str, str]]:
    """VISPR id -> (file, reason) of the skipped files named like an id (the first one of each id)."""
    out: dict[str, tuple[str, str]] = {}
    for name, reason in skipped:
        path = Path(name)
        if (suffix is None or path.suffix == suffix) and ID_PATTERN.match(path.stem):
            out.setdefault(path.stem, (name, reason))
    return out


def _no_annotation(vispr_split: str, vid: str, annotation_skips: dict[str, tuple[str, str]]) -> str:
    """Why an image has no annotation: its annotation file was skipped (e.g. not listed in <split>.txt), or there is none."""
    if vid in annotation_skips:
        name, reason = annotation_skips[vid]
        return f"its annotation {name} was skipped: {reason}"
    return f"no annotation file (annotations/{vispr_split}/{vid}.json)"


def _no_image(vispr_split: str, vid: str, image_skips: dict[str, tuple[str, str]]) -> str:
    """Why an annotation has no image: its image file was skipped (e.g. the same pixels as another), or there is none."""
    if vid in image_skips:
        name, reason = image_skips[vid]
        return f"its image {name} was not imported: {reason}"
    return f"no image file (images/{vispr_split}/{vid}.jpg)"


def _write(result: ReleaseImport, attributes, to_store, to_update, mapping, user, before_commit=None) -> None:
    """Everything in one transaction; files this call stored are removed again if it fails."""
    storage = Image._meta.get_field("file").storage
    created_files: list[str] = []
    try:
        with transaction.atomic():
            _store_attributes(attributes)
            save_parked([item for item, *_ in to_store], created_files)  # the files first, on threads
            new_images: list[Image] = []
            for item, ours, vispr_split, labels in to_store:
                if item.existing_pk is not None:
                    image = Image.objects.select_for_update().get(pk=item.existing_pk)
                    result.attached += 1
                else:
                    image = Image(vispr_id=item.vispr_id, split=ours, source=f"import_vispr {vispr_split}")
                    result.added += 1
                point_at_stored(image, item)
                image.vispr_split, image.vispr_labels = vispr_split, labels
                if image.pk is None:
                    new_images.append(image)  # inserted together below: one INSERT per NEW_IMAGES_BATCH, not per image
                else:
                    image.save()
            Image.objects.bulk_create(new_images, batch_size=NEW_IMAGES_BATCH)
            for vid, (vispr_split, labels) in to_update.items():
                Image.objects.filter(vispr_id=vid).update(vispr_split=vispr_split, vispr_labels=labels)
            result.labels_updated = len(to_update)
            ids = [item.vispr_id for item, *_ in to_store] + list(to_update)
            rows = [(pk, labels) for pk, labels in Image.objects.filter(vispr_id__in=ids).values_list("id", "vispr_labels")] if ids else []
            written, removed = vispr_labels.write_vispr_labels(rows, mapping)
            result.vispr_labels = {"created": written.created, "changed": written.changed, "unchanged": written.unchanged, "removed": removed}
            audit(user, "import_vispr", None, folder=as_text(str(Path(result.root).resolve())), splits=result.splits, links=result.links,
                  added=result.added, attached=result.attached, labels_updated=result.labels_updated, unchanged=result.unchanged,
                  skipped=len(result.skipped), skipped_files=[{"file": n, "reason": r} for n, r in result.skipped[:500]],
                  vispr_labels=result.vispr_labels)
            if before_commit is not None:
                before_commit()
    except BaseException:
        for name in created_files:
            storage.delete(name)
        raise


def _store_attributes(attributes: list[tuple[int, str, str]]) -> None:
    """attributes.tsv as last imported: rows updated, new ones added, ones the file no longer lists removed."""
    stored = {a.attribute_id: a for a in VisprAttribute.objects.all()}
    for idx, attribute_id, description in attributes:
        row = stored.pop(attribute_id, None)
        if row is None:
            VisprAttribute.objects.create(attribute_id=attribute_id, idx=idx, description=description)
        elif (row.idx, row.description) != (idx, description):
            row.idx, row.description = idx, description
            row.save(update_fields=["idx", "description"])
    VisprAttribute.objects.filter(pk__in=[a.pk for a in stored.values()]).delete()
