"""The SFT export launch form on the exports page (admins)."""
from __future__ import annotations

from django import forms

from annotations.datasets import versions as dataset_versions
from annotations.models import Image
from inference import prompts
from scoring.models import ScoringProfile

from . import export
from .images import FACES_ORIGINAL, ImageReader, ImageUnavailable, face_settings

FORMAT_LABELS = {
    "hf": "Hugging Face dataset (TRL's vision-language chat format)",
    "llamafactory": "LLaMA-Factory (ShareGPT JSON + dataset_info.json)",
    "openai": "OpenAI chat fine-tuning JSONL (images as data URLs; needs the images)",
}


class SFTExportForm(forms.Form):
    format = forms.ChoiceField(choices=[(f, FORMAT_LABELS.get(f, f)) for f in export.FORMATS], initial="hf", widget=forms.RadioSelect,
                               error_messages={"required": "Choose a format.",
                                               "invalid_choice": "Unknown format %(value)s: use hf, llamafactory or openai."})
    prompt_version = forms.ChoiceField(choices=(), label="Judge prompt version", error_messages={
        "required": "Choose a judge prompt version.", "invalid_choice": "Unknown judge prompt version %(value)s."})
    split = forms.ChoiceField(choices=(), label="Training split", error_messages={
        "required": "Choose the training split.",
        "invalid_choice": "%(value)s cannot be training data: the test split is the evaluation side, and the split must have images."})
    profile = forms.ModelChoiceField(queryset=ScoringProfile.objects.all(), empty_label=None, error_messages={
        "required": "Choose a scoring profile.", "invalid_choice": "Unknown scoring profile: choose one of the list."})
    include_images = forms.BooleanField(required=False, label="Include the images")
    faces = forms.ChoiceField(choices=(), initial=FACES_ORIGINAL, label="Faces", error_messages={
        "invalid_choice": "Unknown faces option %(value)s: choose the originals or an anonymization setting that has variants."})
    annotation_stages = forms.BooleanField(required=False, label="Also pairs for the two annotation stages")
    dataset_version = forms.ChoiceField(required=False, label="Dataset version", help_text="Only this version's images, on both sides.",
                                        error_messages={"invalid_choice": "There is no dataset version named %(value)s."})

    def __init__(self, data=None, **kwargs):
        super().__init__(data, prefix="sft", **kwargs)
        self.fields["prompt_version"].choices = [(v, v) for v in reversed(prompts.JUDGE_VERSIONS)]
        self.fields["prompt_version"].initial = prompts.DEFAULT_VERSION["judge"]
        present = set(Image.objects.values_list("split", flat=True).distinct())
        self.fields["split"].choices = [(s, s) for s in export.TRAINING_SPLITS if s in present]
        self.fields["split"].initial = Image.SPLIT_TRAIN
        self.fields["faces"].choices = [(FACES_ORIGINAL, "original images")] + [
            (key, f"face-anonymized variants: {label}") for key, label in face_settings()
        ]
        self.fields["dataset_version"].choices = [("", "— every image")] + dataset_versions.version_choices()
        active = ScoringProfile.objects.filter(is_active=True).first()
        if active is not None:
            self.fields["profile"].initial = active.pk

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            export.check_options(cleaned["format"], cleaned["prompt_version"], cleaned["split"], cleaned["include_images"], cleaned["faces"])
            if cleaned["faces"] != FACES_ORIGINAL:
                ImageReader(cleaned["faces"])
        except (export.SFTError, ImageUnavailable) as exc:
            raise forms.ValidationError(str(exc)) from None
        cleaned["dataset_version"] = dataset_versions.by_name(cleaned["dataset_version"]) if cleaned.get("dataset_version") else None
        return cleaned
