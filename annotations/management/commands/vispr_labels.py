"""The `vispr` annotator's labels: show the mapping file, or rewrite every VISPR image's labels under it.

After replacing the mapping file (settings.CPRT_VISPR_MAPPING_FILE), `--rewrite` writes the labels the new
mapping gives (history rows for what changed, labels removed where an attribute no longer maps, profiles
whose consensus includes `vispr` rescored). See annotations/services/vispr_labels.py.
"""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotations.models import VisprAttribute
from annotations.services.vispr_labels import MappingError, check_known, read_mapping, rewrite_all


class Command(BaseCommand):
    help = "Show the VISPR -> CPRT mapping, or (--rewrite) rewrite the vispr annotator's labels of every VISPR image under it."

    def add_arguments(self, parser):
        parser.add_argument("--rewrite", action="store_true", help="Rewrite the labels of every image imported from VISPR.")
        parser.add_argument("--json", action="store_true", help="Print the result as one JSON object.")

    def handle(self, *args, rewrite: bool, **options):
        try:
            mapping = read_mapping()
        except MappingError as exc:
            raise CommandError(str(exc)) from None
        known = list(VisprAttribute.objects.values_list("attribute_id", flat=True))
        missing = check_known(mapping, known) if known else []
        if not rewrite:
            if options["json"]:
                self.stdout.write(json.dumps({"mapping": str(mapping.path), "version": mapping.version,
                                              "attributes": {k: list(v) for k, v in mapping.by_attribute.items()},
                                              "not_in_attributes_tsv": missing}, sort_keys=True))
                return
            self.stdout.write(f"Mapping {mapping.path} (version {mapping.version or '-'}):")
            for key, ids in mapping.by_attribute.items():
                self.stdout.write(f"  {key}: {', '.join(ids) if ids else '(none: no label)'}")
            if missing:
                self.stdout.write(f"Not in the imported attributes.tsv: {', '.join(missing)}")
            return
        result = rewrite_all(mapping=mapping)
        result["not_in_attributes_tsv"] = missing
        if options["json"]:
            self.stdout.write(json.dumps(result, sort_keys=True))
            return
        self.stdout.write(f"Rewrote the vispr labels of {result['images']} image(s) under {result['mapping']}: "
                          f"{result['created']} created, {result['changed']} changed, {result['unchanged']} unchanged, "
                          f"{result['removed']} removed.")
        if missing:
            self.stdout.write(f"Warning: the mapping names VISPR ids the imported attributes.tsv lacks: {', '.join(missing)}")
