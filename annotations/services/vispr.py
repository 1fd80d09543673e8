"""The VISPR import: register the images of a VISPR-style folder (`2017_10000580.jpg` -> id `2017_10000580`).

Every file goes through annotations.images.clean_image (byte and pixel limits, full decode,
metadata stripped), a few at a time on threads, their hashes looked up a chunk at a time. All files
are checked first; then the accepted ones are stored in one transaction.

Two kinds of files are not imported:
- refused: a file named like an image whose bytes are not an acceptable one (empty, truncated, not
  a JPEG or PNG, over the byte or pixel limit, unreadable). One such file refuses the whole folder:
  nothing is written, and every refused file is listed with the reason (fix or remove them, run again);
- skipped: files that are not candidates (other names, folders, links, FIFOs and other non-regular files), ids already imported or
  registered in another split, a second file for the same id or with the same content. They are
  listed with the reason; the rest is imported, so running the command again is harmless.

`import_folder` does it all; `manage.py import_vispr` is a thin wrapper that prints the result.
"""
from __future__ import annotations

import os
import stat
import tempfile
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction

from core.audit import audit

from ..images import CleanImage, ImageRejected, clean_image, storage_name
from ..models import ID_PATTERN, Image

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png"}


@dataclass
class Accepted:
    vispr_id: str
    file_name: str
    clean_path: Path  # cleaned bytes, parked in a temporary folder until the write pass
    extension: str
    width: int
    height: int
    sha256: str
    existing_pk: int | None  # an Image record without a file (e.g. created by import_cprt)


def as_text(name: str) -> str:
    """A file name or path as text: bytes that are not UTF-8 (possible on Linux) shown as \\xNN escapes."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def check_folder(folder: Path, split: str, parking: Path, progress: Callable[[int], None] | None = None,
                 seen_hashes: dict[str, str] | None = None) -> tuple[list[Accepted], list[tuple[str, str]], list[tuple[str, str]]]:
    """Validate every file of `folder`; returns (accepted, [(file name, reason skipped)], [(file name, reason refused)]).

    `progress(n)` is called as entries are done (the ones skipped by their name at once, then each image
    once it is cleaned); `seen_hashes` (sha256 -> file name) is shared between the
    folders of one import so that the same picture in two of them is stored once."""
    accepted: list[Accepted] = []
    skipped: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    known = {vid: (pk, s, bool(f)) for vid, pk, s, f in Image.objects.values_list("vispr_id", "id", "split", "file")}
    seen_ids: dict[str, str] = {}
    seen_hashes = {} if seen_hashes is None else seen_hashes
    candidates: list[tuple[Path, str, str, int | None]] = []  # (path, name, VISPR id, pk of its file-less record)
    entries = sorted(folder.iterdir())
    for path in entries:
        name = as_text(path.name)
        if path.is_symlink():
            skipped.append((name, "a symbolic link (not followed)"))
            continue
        if path.is_dir():
            skipped.append((name, "a folder (only the top level is imported)"))
            continue
        if not stat.S_ISREG(path.lstat().st_mode):
            # A FIFO, socket or device named x.jpg: reading it could block forever or never end.
            skipped.append((name, "not a regular file (a FIFO, socket or device)"))
            continue
        if path.suffix.lower() not in IMAGE_SUFFIXES:
            skipped.append((name, "not an image file name (.jpg, .jpeg or .png expected)"))
            continue
        vispr_id = path.stem
        if not ID_PATTERN.match(vispr_id):
            skipped.append((name, "file name is not a VISPR id (letters, digits, '_', '.', '-')"))
            continue
        if vispr_id in seen_ids:
            skipped.append((name, f"duplicate id {vispr_id} (also {seen_ids[vispr_id]})"))
            continue
        seen_ids[vispr_id] = name
        existing = known.get(vispr_id)
        if existing is not None:
            pk, existing_split, has_file = existing
            if has_file:
                skipped.append((name, f"already imported as {vispr_id}"))
                continue
            if existing_split != split:
                skipped.append((name, f"{vispr_id} is registered in split {existing_split}, not {split}"))
                continue
        candidates.append((path, name, vispr_id, existing[0] if existing else None))
    if progress is not None and len(entries) > len(candidates):
        progress(len(entries) - len(candidates))  # the entries skipped by name; an image counts once it is cleaned
    clean = partial(_read_clean_and_park, parking=parking)
    chunks = [candidates[start:start + CLEAN_CHUNK] for start in range(0, len(candidates), CLEAN_CHUNK)]
    with ThreadPoolExecutor(CLEAN_WORKERS) as pool:
        # One chunk handed out ahead: the threads clean it while this one's hashes are looked up and its
        # outcomes sorted (no pause at each chunk's end), and an import that stops waits for two chunks at most.
        following = [pool.submit(clean, path) for path, *_ in chunks[0]] if chunks else []
        for i, chunk in enumerate(chunks):
            pending, following = following, ([pool.submit(clean, path) for path, *_ in chunks[i + 1]] if i + 1 < len(chunks) else [])
            outcomes = [future.result() for future in pending]
            stored = _stored_with_hashes({o.sha256 for o in outcomes if isinstance(o, CleanImage)})
            for (path, name, vispr_id, existing_pk), outcome in zip(chunk, outcomes):
                if progress is not None:
                    progress(1)
                if not isinstance(outcome, CleanImage):
                    (skipped if outcome[0] == "skipped" else refused).append((name, outcome[1]))
                    continue
                same = seen_hashes.get(outcome.sha256) or stored.get(outcome.sha256)
                if same:
                    skipped.append((name, f"same content as {same}"))
                    continue
                seen_hashes[outcome.sha256] = name
                parked = parking / f"{outcome.sha256}.{outcome.extension}"
                accepted.append(Accepted(vispr_id, name, parked, outcome.extension, outcome.width, outcome.height, outcome.sha256, existing_pk))
    return accepted, skipped, refused


# Decoding, cleaning and re-encoding run on a few threads: Pillow releases the GIL while it decodes and
# encodes, and hashlib while it hashes, which is most of an image's time (issue 37: 9.9 of 19 s single-
# threaded at 2,000 images). Threads, not processes: an import also runs inside a Celery worker's
# process, where forking is not safe, and the results are bytes the caller needs anyway. At most two
# chunks of CLEAN_CHUNK images are in hand at once (their cleaned bytes go to the parking folder as they
# are made), and a chunk's hashes are looked up in one query.
CLEAN_WORKERS = max(2, min(8, os.cpu_count() or 1))
CLEAN_CHUNK = 64


def _read_clean_and_park(path: Path, parking: Path) -> CleanImage | tuple[str, str]:
    """The cleaned image of `path` (without its bytes: they are parked as `parking/<sha256>.<ext>`), or
    ("skipped" | "refused", reason). Parked on the cleaning thread, so that the loop reading the outcomes
    never holds the pool up with file writes."""
    outcome = _read_and_clean(path)
    if isinstance(outcome, CleanImage):
        target = parking / f"{outcome.sha256}.{outcome.extension}"
        if not target.exists():
            # Written under a name of its own, then renamed: two files with the same content on two threads
            # never write into one file. Created as the storage creates files (0o666 less the umask).
            partial_name = parking / f".{uuid.uuid4().hex}"
            with os.fdopen(os.open(partial_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb") as fh:
                fh.write(outcome.data)
            os.replace(partial_name, target)
        outcome.data = b""
    return outcome


def _read_and_clean(path: Path) -> CleanImage | tuple[str, str]:
    """The cleaned image of `path`, or ("skipped" | "refused", reason)."""
    try:
        raw = read_regular_file(path)
        if raw is None:
            return "skipped", "not a regular file (a FIFO, socket or device)"
        if isinstance(raw, int):
            # Refused before reading: an oversized file never reaches memory.
            return "refused", f"file is {raw:,} bytes, over the {settings.CPRT_MAX_IMAGE_BYTES:,}-byte limit"
        return clean_image(raw)
    except ImageRejected as exc:
        return "refused", str(exc)
    except OSError as exc:
        return "refused", f"unreadable: {exc.strerror or exc}"


def parking_folder() -> tempfile.TemporaryDirectory:
    """A temporary folder for cleaned bytes until the write pass. Inside the image storage's own folder
    when that is a folder on this machine (a hidden `.import-vispr-*`, never a stored name), so that a
    parked file goes into place by a rename rather than a copy; the system's temporary folder otherwise."""
    location = getattr(Image._meta.get_field("file").storage, "location", None)
    if location:
        os.makedirs(location, exist_ok=True)
        return tempfile.TemporaryDirectory(prefix=".import-vispr-", dir=location)
    return tempfile.TemporaryDirectory(prefix="import-vispr-")


def save_parked(accepted: list[Accepted], created: list[str]) -> None:
    """Put the parked cleaned bytes of `accepted` into the image storage, each under its content name:
    renamed into place when the parking folder is in the storage's folder (see `parking_folder`),
    copied on a few threads otherwise (file writes release the GIL). The names this call created are
    appended to `created` (the caller removes them if its transaction fails)."""
    storage = Image._meta.get_field("file").storage
    location = getattr(storage, "location", None)

    def save(item: Accepted) -> None:
        name = stored_name(item)
        if storage.exists(name):
            return
        if location and item.clean_path.parent.parent == Path(location):
            target = Path(storage.path(name))
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(item.clean_path, target)
            if storage.file_permissions_mode is not None:
                os.chmod(target, storage.file_permissions_mode)
            created.append(name)
        else:
            created.append(storage.save(name, ContentFile(item.clean_path.read_bytes())))

    with ThreadPoolExecutor(CLEAN_WORKERS) as pool:
        list(pool.map(save, accepted))


def stored_name(item: Accepted) -> str:
    return storage_name(CleanImage(b"", item.extension, item.width, item.height, item.sha256))


def point_at_stored(image: Image, item: Accepted) -> None:
    """Fill `image`'s file name, dimensions and hash from an accepted item that `save_parked` stored."""
    image.file.name = stored_name(item)
    image.width, image.height, image.sha256 = item.width, item.height, item.sha256


def read_regular_file(path: Path) -> bytes | int | None:
    """The bytes of `path`; its size instead when over the byte limit; None when it is not a regular
    file by the time it is opened (non-blocking and without following links, so a FIFO swapped in
    after the first check cannot hang the import)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > settings.CPRT_MAX_IMAGE_BYTES:
            return info.st_size
        return fh.read()


def _stored_with_hashes(hashes: set[str]) -> dict[str, str]:
    """sha256 -> the VISPR id of the first stored image (by id) with that content, in one query."""
    found: dict[str, str] = {}
    if hashes:
        for sha256, vispr_id in Image.objects.filter(sha256__in=hashes).order_by("pk").values_list("sha256", "vispr_id"):
            found.setdefault(sha256, vispr_id)
    return found


def store(accepted: list[Accepted], split: str, source: str, audit_data: dict) -> tuple[int, int]:
    """Write accepted images and the audit event in one transaction; on failure, remove the files this call created."""
    created_files: list[str] = []
    added = attached = 0
    storage = Image._meta.get_field("file").storage
    try:
        with transaction.atomic():
            save_parked(accepted, created_files)  # the files first, on threads
            for item in accepted:
                if item.existing_pk is not None:
                    image = Image.objects.select_for_update().get(pk=item.existing_pk)
                    point_at_stored(image, item)
                    image.save(update_fields=["file", "width", "height", "sha256"])
                    attached += 1
                else:
                    image = Image(vispr_id=item.vispr_id, split=split, source=source)
                    point_at_stored(image, item)
                    image.save()
                    added += 1
            audit(None, "import_vispr", None, split=split, added=added, attached=attached, **audit_data)
    except BaseException:
        for name in created_files:
            storage.delete(name)
        raise
    return added, attached


class FolderRefused(ValueError):
    """The folder cannot be imported (not a folder, or a file in it that is not an acceptable image);
    nothing was written. The message says why, listing every refused file."""


@dataclass
class VisprImport:
    added: int
    attached: int  # files attached to existing Image records (created by import_cprt)
    skipped: list[tuple[str, str]]  # (file name, reason)


def import_folder(folder: Path | str, split: str) -> VisprImport:
    """Check every file of `folder`, then store the accepted ones and the audit event in one transaction."""
    root = Path(folder)
    if not root.is_dir():
        raise FolderRefused(f"{as_text(str(folder))} is not a folder.")
    with parking_folder() as parking:
        accepted, skipped, refused = check_folder(root, split, Path(parking))
        if refused:
            listed = "\n".join(f"  {name}: {reason}" for name, reason in refused)
            raise FolderRefused(
                f"{as_text(str(root))}: refused, nothing was written: {len(refused)} file(s) cannot be imported as images "
                f"(fix or remove them and run again):\n{listed}"
            )
        audit_data = {
            "folder": as_text(str(root.resolve())),
            "skipped": len(skipped),
            "skipped_files": [{"file": name, "reason": reason} for name, reason in skipped[:500]],
        }
        added, attached = store(accepted, split, f"import_vispr {as_text(root.name)}", audit_data)
    return VisprImport(added, attached, skipped)
