"""Import MultiPriv's individual-level data (persons, their images, their synthetic profiles) from the
user's copy of the release; the work is `benchmarks.multipriv.importer.import_multipriv`."""
from __future__ import annotations

import json as jsonlib

from django.core.management.base import BaseCommand, CommandError

from benchmarks.multipriv.importer import ImportRefused, import_multipriv


class Command(BaseCommand):
    help = ("Import MultiPriv individual-level persons (VLM/individual-level/person_<n>/: <A-G><index> images and one "
            "profile .json). A malformed file refuses the whole import (nothing written, every problem listed). "
            "The data are licensed CC BY-NC-SA: import your own copy; the project never ships them.")

    def add_arguments(self, parser):
        parser.add_argument("root", help="The release's root, its VLM/individual-level folder, or a folder of person_<n> folders.")
        parser.add_argument("--json", action="store_true", help="Print the result as JSON.")

    def handle(self, *args, root, json: bool = False, **options):
        try:
            done = import_multipriv(root)
        except ImportRefused as exc:
            raise CommandError(str(exc)) from None
        if json:
            self.stdout.write(_dumps(done.as_json()))
            return
        self.stdout.write(
            f"Persons: {done.persons} ({done.added_persons} added, {done.updated_persons} updated); images: {done.images} "
            f"({done.added_images} added, {done.replaced_images} replaced, {done.unchanged_images} unchanged); "
            f"profile fields present: {done.fields}.")
        if not (done.added_persons or done.updated_persons or done.added_images or done.replaced_images):
            self.stdout.write("Nothing new: everything in the folder was already imported.")
        if done.unknown_fields:
            self.stdout.write(f"Fields not in the category table (category 'other'): {', '.join(done.unknown_fields)}.")
        for path, reason in done.skipped:
            self.stdout.write(f"  skipped {path}: {reason}")


def _dumps(data) -> str:
    return jsonlib.dumps(data, ensure_ascii=False, sort_keys=True)
