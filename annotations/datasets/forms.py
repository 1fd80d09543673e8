"""The dataset pages' forms (admins): launch a build (a preset or an uploaded recipe, the VISPR split,
the seed, the version's name) and make a labeling batch from a version."""
from __future__ import annotations

from django import forms

from annotations.models import Image

from . import recipes
from .models import DatasetVersion

UPLOAD = "upload"


def free_name(base: str) -> str:
    """`base`, or `base-2`, `base-3`... : the first name no version has (the name field's default)."""
    taken = set(DatasetVersion.objects.filter(name__startswith=base).values_list("name", flat=True))
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


class BuildForm(forms.Form):
    source = forms.ChoiceField(label="Recipe", choices=(), error_messages={
        "required": "Choose a recipe preset or an uploaded recipe.",
        "invalid_choice": "Unknown recipe %(value)s: choose a preset or “upload a recipe file”."})
    recipe_file = forms.FileField(required=False, label="Recipe file (JSON)", help_text="Only with “upload a recipe file”.")
    vispr_split = forms.ChoiceField(required=False, label="VISPR split", choices=(), error_messages={
        "invalid_choice": "Unknown split %(value)s: choose one that has VISPR images, or the recipe's own."})
    seed = forms.IntegerField(required=False, min_value=0, max_value=2**63 - 1,
                              help_text="Seeds the quotas' samples (blank: the recipe's seed).",
                              error_messages={"invalid": "The seed is a whole number.", "min_value": "The seed is 0 or more.",
                                              "max_value": "The seed is at most 2^63-1."})
    name = forms.CharField(max_length=100, label="Version name", help_text="Letters, digits, - and _; a version's name is never reused.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        presets = recipes.preset_names()
        self.fields["source"].choices = [(p, f"preset: {p}") for p in presets] + [(UPLOAD, "upload a recipe file")]
        if presets:
            self.fields["source"].initial = "cprt-paper" if "cprt-paper" in presets else presets[0]
        ours = set(Image.objects.exclude(vispr_split="").values_list("split", flat=True).distinct())
        vispr = sorted(Image.objects.exclude(vispr_split="").values_list("vispr_split", flat=True).distinct())
        self.fields["vispr_split"].choices = [("", "the recipe's splits")] + [
            (v, f"{v} (our {v} split)") for v, _ in Image.SPLITS if v in ours] + [(s, f"VISPR {s}") for s in vispr]
        self.fields["name"].initial = free_name(self.fields["source"].initial or "dataset")

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        upload = data.get("recipe_file")
        try:
            if data["source"] == UPLOAD:
                if not upload:
                    self.add_error("recipe_file", "Choose the recipe file to upload.")
                    return data
                recipe = recipes.parse_text(upload.read(recipes.MAX_RECIPE_BYTES + 1))
            else:
                if upload:
                    self.add_error("recipe_file", "A recipe file goes with “upload a recipe file”, not with a preset.")
                    return data
                recipe = recipes.preset(data["source"])
        except recipes.RecipeError as exc:
            self.add_error("recipe_file" if data["source"] == UPLOAD else "source", str(exc))
            return data
        if not recipes.NAME.match(data["name"]):
            self.add_error("name", "Use letters, digits, - and _ (starting with a letter or digit).")
        data["recipe"] = recipe
        return data


class BatchFromVersionForm(forms.Form):
    name = forms.CharField(max_length=200, label="Batch name", error_messages={"required": "Name the batch."})
