"""Register the images of a VISPR-style folder (`2017_10000580.jpg` -> id `2017_10000580`).

The import itself is `annotations.services.vispr.import_folder` (what is checked, refused and skipped is
described there); this command prints what it did, and a refused folder becomes a CommandError.
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotations.models import Image
from annotations.services.vispr import FolderRefused, import_folder


class Command(BaseCommand):
    help = (
        "Register the images of a VISPR-style folder. A file named like an image that is not an acceptable one "
        "refuses the whole folder (nothing is written; every such file is listed); other files and ids already "
        "imported are listed and skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder")
        parser.add_argument("--split", required=True, choices=[value for value, _ in Image.SPLITS])

    def handle(self, *args, folder, split, **options):
        try:
            done = import_folder(folder, split)
        except FolderRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Images added: {done.added}; attached to existing records: {done.attached}; files skipped: {len(done.skipped)}.")
        for name, reason in done.skipped:
            self.stdout.write(f"  skipped {name}: {reason}")
