"""Build a dataset version from a recipe, in this process, on the build job's own code
(annotations/datasets/build.py): what the Datasets page launches, for scripts and CI.

--recipe is a preset name (annotations/data/dataset_recipes/<name>.json, e.g. cprt-paper) or the path
of a recipe JSON file. --vispr-split (repeatable) replaces the recipe's VISPR splits: our split name
(test, train: the VISPR splits its images came from) or a VISPR split name (test2017). --seed and
--name replace the recipe's seed and target name. --vispr-root: the VISPR release folder, whose files'
checksums are then recorded beside those of the stored labels. --json prints the version.
"""
from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotations.datasets import build, recipes, versions
from annotations.datasets.models import DatasetBuild


class Command(BaseCommand):
    help = ("Build a named, frozen dataset version from a recipe over the stored VISPR labels "
            "(a preset such as cprt-paper, or a recipe JSON file).")

    def add_arguments(self, parser):
        parser.add_argument("--recipe", required=True, help=f"A preset ({', '.join(recipes.preset_names())}) or a recipe JSON file.")
        parser.add_argument("--vispr-split", action="append", help="test, train, or a VISPR split such as test2017 (repeatable; "
                                                                   "default: the recipe's).")
        parser.add_argument("--seed", help="The quotas' seed (default: the recipe's).")
        parser.add_argument("--name", help="The version's name (default: the recipe's target).")
        parser.add_argument("--vispr-root", help="The VISPR release folder: record its files' checksums too.")
        parser.add_argument("--json", action="store_true", help="Print the version as JSON.")

    def handle(self, *args, recipe, vispr_split, seed, name, vispr_root, json: bool, **options):
        chosen = self._recipe(recipe)
        if seed is not None and not (seed.isdigit() and int(seed) < 2**63):
            raise CommandError(f"--seed: {seed!r} is not a whole number from 0 to 2^63-1.")
        if vispr_root is not None and not Path(vispr_root).is_dir():
            raise CommandError(f"--vispr-root: {vispr_root} is not a folder.")
        try:
            splits = build.resolve_splits(vispr_split) if vispr_split else None
            chosen = recipes.with_overrides(chosen, vispr_splits=splits, seed=int(seed) if seed is not None else None)
        except (build.BuildError, recipes.RecipeError) as exc:
            raise CommandError(f"--vispr-split: {exc}" if isinstance(exc, recipes.RecipeError) else str(exc)) from None
        target = name or chosen.target
        if not target:
            raise CommandError("--name: name the dataset version (the recipe has no target name).")
        try:
            job = build.start_build(None, chosen, target, dispatch=False)
        except build.BuildError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"Build #{job.pk} of {target}: reading {job.total} images of {', '.join(chosen.vispr_splits)}.")
        result = build.run_build(job.pk, vispr_root=vispr_root)
        job = DatasetBuild.objects.select_related("version").get(pk=job.pk)
        if job.status != DatasetBuild.STATUS_FINISHED or job.version is None:
            raise CommandError(f"Build #{job.pk} ended {job.status}: {job.error or result}")
        out = versions.summary(job.version)
        if json:
            self.stdout.write(_json(out))
            return
        self.stdout.write(f"Dataset version {out['name']}: {out['count']} images from {', '.join(out['vispr_splits'])} (seed {out['seed']}).")
        for rule, count in out["rules"].items():
            self.stdout.write(f"  {rule}: {count} selected of {out['candidates'].get(rule, count)} candidates")
        for pair, count in out["overlaps"].items():
            self.stdout.write(f"  overlap {pair}: {count}")

    @staticmethod
    def _recipe(value: str) -> recipes.Recipe:
        try:
            if value in recipes.preset_names():
                return recipes.preset(value)
            path = Path(value)
            if path.suffix == ".json" and path.is_file():
                return recipes.parse_text(path.read_bytes())
        except recipes.RecipeError as exc:
            raise CommandError(f"--recipe: {exc}") from None
        raise CommandError(f"--recipe: {value!r} is neither a preset ({', '.join(recipes.preset_names())}) nor a recipe JSON file.")


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False)
