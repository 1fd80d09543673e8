"""Import VISPR: a release folder as its authors ship it, or a plain folder of images.

A release (`images/<split>/`, `annotations/<split>/`, `attributes.tsv`, `<split>.txt`) is imported by
`annotations.services.vispr_release.import_release`: every split present (train2017 only when asked),
mapped onto our splits (shown), each image's VISPR labels stored and mapped onto the `vispr` annotator.
A plain folder of images (`--split` required) is `annotations.services.vispr.import_folder`. What is
checked, refused and skipped is described in those modules; a refused folder becomes a CommandError
and nothing is written. Progress goes to stderr; `--json` prints the result as one JSON object.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotations.models import Image
from annotations.services.vispr import FolderRefused, as_text, import_folder
from annotations.services.vispr_labels import MappingError
from annotations.services.vispr_release import DEFAULT_SPLIT_MAP, import_release, is_release, not_release_reason, parse_split_map


class StderrProgress:
    """One line on stderr, rewritten at most every half second: done/total, images per second."""

    def __init__(self, stream, enabled: bool):
        # `stream`: the command's stderr (an OutputWrapper: write(text, ending="")).
        self.stream, self.enabled, self.started, self.shown = stream, enabled, time.monotonic(), 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self.shown < 0.5 and done < total):
            return
        self.shown = now
        rate = done / max(now - self.started, 1e-9)
        width = 30
        filled = int(width * done / total) if total else width
        end = "\n" if done >= total else ""
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files, {rate:.0f}/s", ending=end)
        self.stream.flush()


class Command(BaseCommand):
    help = (
        "Import VISPR: a release folder (images/<split>/, annotations/<split>/, attributes.tsv, <split>.txt) with its "
        "labels, or a plain folder of images (--split). A file that cannot be imported refuses the whole import "
        "(nothing is written; every such file is listed); other files are listed and skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder")
        parser.add_argument("--split", choices=[value for value, _ in Image.SPLITS],
                            help="A plain folder of images: the split its images belong to (required there; a release maps its own).")
        parser.add_argument("--vispr-split", action="append", dest="vispr_splits", metavar="SPLIT",
                            help="A release: import this VISPR split (repeatable); default every split present except train2017.")
        default = ", ".join(f"{k}={v}" for k, v in DEFAULT_SPLIT_MAP.items())
        parser.add_argument("--map", action="append", dest="split_map", default=[], metavar="VISPR_SPLIT=OURS",
                            help=f"A release: map a VISPR split onto test, train or other (repeatable; default {default}).")
        parser.add_argument("--json", action="store_true", help="Print the result as one JSON object.")
        parser.add_argument("--no-progress", action="store_true", help="No progress line on stderr.")

    def handle(self, *args, folder, split, vispr_splits, split_map, json: bool, no_progress: bool, **options):
        root = Path(folder)
        progress = StderrProgress(self.stderr, not (no_progress or json))
        try:
            if root.is_dir() and is_release(root):
                if split:
                    raise CommandError("--split is for a plain folder of images; a release maps its own splits (see --map): to "
                                       "import one VISPR split of it, give --vispr-split (e.g. --vispr-split test2017 for our test split).")
                try:
                    mapping = parse_split_map(split_map)
                except ValueError as exc:
                    raise CommandError(str(exc)) from None
                done = import_release(root, vispr_splits=vispr_splits, split_map=mapping, progress=progress)
                self._print_release(done, json)
                return
            why = not_release_reason(root) if root.is_dir() else ""
            if vispr_splits or split_map:
                raise CommandError(f"{as_text(folder)} is not a VISPR release folder (images/ and annotations/ expected){why}: "
                                   "--vispr-split and --map apply to a release only.")
            if not split:
                raise CommandError(f"{as_text(folder)} is not a VISPR release folder (images/ and annotations/ expected){why}; "
                                   "to import a plain folder of images, give --split test|train|other.")
            plain = import_folder(folder, split)
        except (FolderRefused, MappingError) as exc:
            raise CommandError(str(exc)) from None
        if json:
            self.stdout.write(_dumps({"added": plain.added, "attached": plain.attached,
                                      "skipped": [{"file": n, "reason": r} for n, r in plain.skipped]}))
            return
        self.stdout.write(f"Images added: {plain.added}; attached to existing records: {plain.attached}; files skipped: {len(plain.skipped)}.")
        for name, reason in plain.skipped:
            self.stdout.write(f"  skipped {name}: {reason}")

    def _print_release(self, done, as_json: bool) -> None:
        if as_json:
            self.stdout.write(_dumps(done.as_json()))
            return
        w = self.stdout.write
        w(f"VISPR release {done.root}: {done.attributes} attributes (attributes.tsv).")
        for link in done.links:
            w(f"Followed symbolic link {link['link']} -> {link['target']}.")
        w("Splits: " + ", ".join(f"{k} -> {v}" for k, v in done.splits.items())
          + (f"; present, not imported: {', '.join(done.not_imported)} (ask with --vispr-split)" if done.not_imported else "") + ".")
        w(f"Images added: {done.added}; attached to existing records: {done.attached}; labels updated: {done.labels_updated}; "
          f"unchanged: {done.unchanged}; files skipped: {len(done.skipped)}.")
        v = done.vispr_labels
        w(f"vispr annotator: {v.get('created', 0)} labels created, {v.get('changed', 0)} changed, {v.get('removed', 0)} removed.")
        if done.nothing_new:
            w("Nothing new: every image was already imported with the same labels.")
        for name, reason in done.skipped:
            w(f"  skipped {name}: {reason}")


def _dumps(data) -> str:
    return json.dumps(data, sort_keys=True)
