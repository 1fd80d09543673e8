"""Validation of everything the scoring pages accept: filters, parameters, downloads, adjudications.

Bad input never reaches a computation: the view answers 400 with these forms' messages.
"""
from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.validators import RegexValidator

from annotations.datasets import versions as dataset_versions
from annotations.faces import variants as face_variants
from annotations.datasets.models import DatasetVersion
from annotations.models import Image
from inference.models import Run

from .metrics import THRESHOLDS
from .models import REPO_ID_PATTERN, ExportJob, ScoringProfile

FORMATS = [("", "page"), ("html", "page"), ("csv", "CSV"), ("json", "JSON")]
SPLITS = [("", "all splits")] + Image.SPLITS
LEVEL_CHOICES = [("", "any level")] + [(str(lv), f"level {lv}") for lv in (1, 2, 3, 4)]
LABEL_CHOICES = [("0", "0 — absent"), ("0.5", "0.5 — ambiguous"), ("1", "1 — present")]
SORT_METRICS = [
    ("pearson", "Pearson r"), ("spearman", "Spearman ρ"), ("mae", "MAE"), ("bias", "|bias|"),
    ("level_acc", "level accuracy"), ("pairwise_acc", "pairwise accuracy"), ("inter_acc", "inter-level accuracy"),
    ("intra_acc", "intra-level accuracy"),
]
# Strategies of our runs plus the paper's fine-tuned rows ("sft"), which exist only as published values.
STRATEGIES = [("", "all strategies")] + [s for s in Run.STRATEGIES if s[0]] + [("sft", "fine-tuned (published only)")]


class ExportForm(forms.Form):
    """`format` (page, csv or json) and, for CSV, which `table` of the page."""

    format = forms.ChoiceField(choices=FORMATS, required=False, error_messages={
        "invalid_choice": "format must be csv or json (or absent for the page); got %(value)s."})
    table = forms.CharField(required=False, max_length=64)
    table_names: tuple[str, ...] = ()

    def __init__(self, data=None, *, table_names=None, **kwargs):
        super().__init__(data, **kwargs)
        if table_names is not None:
            self.table_names = tuple(table_names)

    def clean(self):
        cleaned = super().clean()
        fmt, table = cleaned.get("format") or "html", cleaned.get("table") or ""
        cleaned["format"] = fmt
        if table and table not in self.table_names:
            self.add_error("table", f"Unknown table {table!r}; this page has: {', '.join(self.table_names)}.")
        elif fmt == "csv" and not table and len(self.table_names) != 1:
            self.add_error("table", f"CSV needs one table: add table= one of {', '.join(self.table_names)}.")
        return cleaned


class LeaderboardForm(ExportForm):
    table_names = ("leaderboard", "not_ranked", "ablations", "paper")
    version = forms.ModelChoiceField(queryset=DatasetVersion.objects.all(), required=False, label="Dataset version",
                                     empty_label="any (no version)", error_messages={
                                         "invalid_choice": "version must be the id of a dataset version."})
    # "" is the default comparison set, the test split (scoring.services.leaderboard.DEFAULT_SPLIT); "all": every split
    split = forms.ChoiceField(choices=[("", "test (default)"), ("all", "all splits")] + Image.SPLITS, required=False, label="Split",
                              error_messages={"invalid_choice": "Unknown split %(value)s."})
    floor = forms.FloatField(required=False, min_value=0, max_value=100, label="Coverage floor (%)", error_messages={
        "invalid": "floor must be a percentage from 0 to 100.", "min_value": "floor must be a percentage from 0 to 100.",
        "max_value": "floor must be a percentage from 0 to 100."})
    strategy = forms.ChoiceField(choices=STRATEGIES, required=False, error_messages={
        "invalid_choice": "Unknown strategy %(value)s."})
    sort = forms.ChoiceField(choices=SORT_METRICS, required=False, error_messages={
        "invalid_choice": "Cannot sort by %(value)s."})


    def clean_floor(self):
        value = self.cleaned_data.get("floor")
        return 95.0 if value is None else value


ADJUSTMENTS = [("holm", "Holm (family-wise)"), ("bh", "Benjamini-Hochberg (false discovery rate)")]


def _adjust_field():
    return forms.ChoiceField(required=False, choices=ADJUSTMENTS, label="Multiple comparisons", error_messages={
        "invalid_choice": "adjust must be holm or bh; got %(value)s."})


class CompareForm(ExportForm):
    """Two finished judge runs to compare on their common images."""

    table_names = ("comparison",)
    adjust = _adjust_field()
    a = forms.IntegerField(required=False, min_value=1, label="Run A", error_messages={
        "invalid": "a must be a run id.", "min_value": "a must be a run id."})
    b = forms.IntegerField(required=False, min_value=1, label="Run B", error_messages={
        "invalid": "b must be a run id.", "min_value": "b must be a run id."})

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        a, b = cleaned.get("a"), cleaned.get("b")
        if a is None and b is None:
            if cleaned["format"] != "html":
                raise forms.ValidationError("Choose two runs (a and b) to download a comparison.")
            return cleaned
        if a is None or b is None:
            raise forms.ValidationError("Choose two runs: a and b.")
        if a == b:
            raise forms.ValidationError("Choose two different runs.")
        runs = {r.pk: r for r in Run.objects.filter(pk__in=[a, b], task=Run.TASK_JUDGE, status=Run.STATUS_FINISHED)
                .only("id", "provider", "model_name", "strategy")}
        if a not in runs or b not in runs:
            raise forms.ValidationError("a and b must both be finished judge runs.")
        cleaned["run_a"], cleaned["run_b"] = runs[a], runs[b]
        return cleaned


class CalibrationForm(ExportForm):
    table_names = ("human_majority", "consensus")
    adjust = _adjust_field()
    sort = forms.ChoiceField(required=False, choices=[("difference", "over-prediction first"), ("abs", "largest gap"),
                                                      ("level", "level"), ("attribute", "attribute"), ("model_rate", "model rate")],
                             error_messages={"invalid_choice": "Cannot sort by %(value)s."})


class RunForm(ExportForm):
    table_names = ("metrics", "significance", "excluded", "confusion", "per_level", "binary", "extremes", "predictions", "attributes",
                   "sensitivity")
    threshold = forms.IntegerField(required=False, min_value=min(THRESHOLDS), max_value=max(THRESHOLDS), error_messages={
        "invalid": "threshold must be a whole level number from 1 to 3 (levels up to it count as private).",
        "min_value": "threshold must be a level from 1 to 3 (levels up to it count as private).",
        "max_value": "threshold must be a level from 1 to 3 (levels up to it count as private).",
    })

    def clean_threshold(self):
        return self.cleaned_data.get("threshold") or 2


ASSISTED_CHOICES = [("exclude", "independent human labels only (default)"), ("include", "independent and assisted"),
                    ("only", "assisted human labels only")]


class AgreementForm(ExportForm):
    table_names = ("summary", "paper", "human_human", "pairs", "per_attribute", "per_level", "strict_consensus", "krippendorff")
    split = forms.ChoiceField(choices=SPLITS, required=False, error_messages={"invalid_choice": "Unknown split %(value)s."})
    assisted = forms.ChoiceField(choices=ASSISTED_CHOICES, required=False, label="Human labels", error_messages={
        "invalid_choice": "assisted must be exclude, include or only; got %(value)s."})

    def clean_assisted(self):
        return self.cleaned_data.get("assisted") or "exclude"


class DisagreementForm(ExportForm):
    table_names = ("disagreements",)
    SORTS = [("impact", "impact on the score"), ("level", "level change first"), ("disputed", "most disputed"), ("id", "image id")]
    split = forms.ChoiceField(choices=SPLITS, required=False, error_messages={"invalid_choice": "Unknown split %(value)s."})
    attribute = forms.ChoiceField(choices=(), required=False, error_messages={"invalid_choice": "Unknown attribute %(value)s."})
    level = forms.ChoiceField(choices=LEVEL_CHOICES, required=False, error_messages={"invalid_choice": "level must be 1, 2, 3 or 4."})
    pair = forms.CharField(required=False, max_length=64)
    sort = forms.ChoiceField(choices=SORTS, required=False, error_messages={"invalid_choice": "Cannot sort by %(value)s."})
    page = forms.IntegerField(required=False, min_value=1, error_messages={
        "invalid": "page must be a positive whole number.", "min_value": "page must be a positive whole number."})

    def __init__(self, data=None, *, attribute_keys=(), **kwargs):
        super().__init__(data, **kwargs)
        self.fields["attribute"].choices = [("", "any attribute")] + [(k, k) for k in attribute_keys]

    def clean_pair(self):
        """'<annotator id>-<annotator id>' (two different ids); whether they exist is checked against the data."""
        raw = self.cleaned_data.get("pair") or ""
        if not raw:
            return None
        parts = raw.split("-")
        if len(parts) != 2 or not all(p.isdigit() for p in parts) or parts[0] == parts[1]:
            raise forms.ValidationError("pair must be two different annotator ids joined by '-', e.g. 3-7.")
        return tuple(sorted(int(p) for p in parts))


class AdjudicationForm(forms.Form):
    attribute = forms.ChoiceField(choices=(), error_messages={"invalid_choice": "Unknown attribute %(value)s.",
                                                              "required": "Choose the attribute to adjudicate."})
    value = forms.ChoiceField(choices=LABEL_CHOICES, error_messages={
        "invalid_choice": "The final label must be 0, 0.5 or 1; got %(value)s.", "required": "Choose the final label."})
    note = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, data=None, *, attribute_keys=(), **kwargs):
        super().__init__(data, **kwargs)
        self.fields["attribute"].choices = [(k, k) for k in attribute_keys]

    def clean_value(self):
        return float(self.cleaned_data["value"])


def _run_id_field(name: str) -> forms.IntegerField:
    """An optional run id; a wrong value is refused with one message naming the field."""
    message = f"{name} must be a run id."
    return forms.IntegerField(required=False, min_value=1, error_messages={"invalid": message, "min_value": message})


def _drop_field() -> forms.FloatField:
    """The counterfactual pages' collapse threshold (blank: 0.3)."""
    return forms.FloatField(required=False, min_value=0.01, max_value=1.0, error_messages={
        "invalid": "drop must be a number between 0.01 and 1.",
        "min_value": "drop must be between 0.01 and 1.", "max_value": "drop must be between 0.01 and 1."})


class CounterfactualForm(ExportForm):
    table_names = ("summary", "changes", "groups")
    base = _run_id_field("base")
    cf = _run_id_field("cf")
    drop = _drop_field()

    def clean_drop(self):
        value = self.cleaned_data.get("drop")
        return 0.3 if value is None else value

    def clean(self):
        cleaned = super().clean()
        base, cf = cleaned.get("base"), cleaned.get("cf")
        if self.errors:
            return cleaned
        if (base is None) != (cf is None):
            raise forms.ValidationError("Give both base (the run without counterfactual faces) and cf (the run with it).")
        if base is None:
            if cleaned["format"] != "html":
                raise forms.ValidationError("Choose a pair of runs (base and cf) to download.")
            return cleaned
        runs = {r.pk: r for r in Run.objects.filter(pk__in=[base, cf], task=Run.TASK_JUDGE, status=Run.STATUS_FINISHED)}
        if base not in runs or cf not in runs:
            raise forms.ValidationError("base and cf must both be finished judge runs.")
        a, b = runs[base], runs[cf]
        if a.counterfactual_faces or not b.counterfactual_faces:
            raise forms.ValidationError("base must run without counterfactual faces and cf with them.")
        if (a.provider, a.model_name, a.strategy) != (b.provider, b.model_name, b.strategy):
            raise forms.ValidationError("base and cf must use the same provider, model and strategy.")
        cleaned["base_run"], cleaned["cf_run"] = a, b
        return cleaned


class ExportJobForm(forms.Form):
    """The export launch form (admins). Only splits that have images can be chosen; a Hub destination
    needs a valid `owner/name` and HF_TOKEN in the server's environment. The repository is private
    unless `public` is ticked."""

    splits = forms.MultipleChoiceField(choices=(), widget=forms.CheckboxSelectMultiple, error_messages={
        "required": "Choose at least one split.",
        "invalid_choice": "Unknown split %(value)s: choose among the splits that have images.",
    })
    profile = forms.ModelChoiceField(queryset=ScoringProfile.objects.all(), empty_label=None, error_messages={
        "required": "Choose a scoring profile.",
        "invalid_choice": "Unknown scoring profile: choose one of the list.",
    })
    dataset_version = forms.ChoiceField(required=False, label="Dataset version", help_text=(
        "Only the images of this dataset version; the card carries its Hub metadata."),
        error_messages={"invalid_choice": "There is no dataset version named %(value)s."})
    include_annotations = forms.BooleanField(
        required=False, label="Include annotations and model predictions",
        help_text="Adds the configurations `annotations` (every annotator's raw labels and rationales; people as pseudonyms) "
                  "and `predictions` (every judge run's results).",
    )
    include_images = forms.BooleanField(
        required=False, label="Include the images",
        help_text="Adds the configuration `images` with the image bytes of the exported rows.",
    )
    face_variant = forms.ChoiceField(
        required=False, label="Images exported",
        help_text="The originals, or their face-anonymized variants (faces removed; rows without a variant have no image).",
        error_messages={"invalid_choice": "Choose the originals or a face-anonymization setting that has variants."},
    )
    destination = forms.ChoiceField(choices=ExportJob.DESTINATIONS, initial=ExportJob.DESTINATION_ZIP, widget=forms.RadioSelect,
                                    error_messages={"required": "Choose a destination.",
                                                    "invalid_choice": "Unknown destination %(value)s: use zip or hub."})
    repo_id = forms.CharField(
        required=False, max_length=193, label="Hub repository",
        validators=[RegexValidator(REPO_ID_PATTERN, "A Hub repository id is owner/name: letters, digits, '.', '_', '-', "
                                                    "starting and ending with a letter or digit, e.g. my-lab/cprt-bench.")],
        help_text="owner/name, e.g. my-lab/cprt-bench (Hub destination only).",
    )
    public = forms.BooleanField(required=False, label="Public repository",
                                help_text="Unticked (the default): the repository is created private.")

    def __init__(self, data=None, **kwargs):
        super().__init__(data, **kwargs)
        present = set(Image.objects.values_list("split", flat=True).distinct())
        self.fields["splits"].choices = [(value, label) for value, label in Image.SPLITS if value in present]
        self.fields["splits"].initial = [value for value, _ in self.fields["splits"].choices if value != Image.SPLIT_OTHER]
        active = ScoringProfile.active_or_none()
        if active is not None:
            self.fields["profile"].initial = active.pk
        self.fields["face_variant"].choices = [("", "the original images")] + [
            (key, f"faces removed: {label}") for key, label, _ in face_variants.available_settings()]
        self.fields["dataset_version"].choices = [("", "— every image")] + dataset_versions.version_choices()

    @property
    def hub_available(self) -> bool:
        return bool(settings.HF_TOKEN)

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("destination") == ExportJob.DESTINATION_HUB:
            if not settings.HF_TOKEN:
                self.add_error("destination", "Pushing to the Hugging Face Hub needs HF_TOKEN in the server's environment, "
                                              "and it is not set: choose the zip file, or ask the operator to set HF_TOKEN.")
            if not cleaned.get("repo_id") and "repo_id" not in self.errors:
                self.add_error("repo_id", "Name the Hub repository (owner/name) to push to.")
        else:
            cleaned["repo_id"], cleaned["public"] = "", False
        if cleaned.get("face_variant") and not cleaned.get("include_images"):
            self.add_error("face_variant", "Anonymized images are exported only with “Include the images” ticked.")
        cleaned["face_variant"] = face_variants.parse_setting_key(cleaned["face_variant"]) if cleaned.get("face_variant") else {}
        cleaned["dataset_version"] = dataset_versions.by_name(cleaned["dataset_version"]) if cleaned.get("dataset_version") else None
        return cleaned


class ThreeWayForm(ExportForm):
    """Original vs prompt-level vs pixel-level counterfactual: three finished judge runs of one provider,
    model and strategy (original: plain; prompt: counterfactual faces; pixel: judged on anonymized images)."""

    table_names = ("overall", "by_level", "groups", "images")
    original = _run_id_field("original")
    prompt = _run_id_field("prompt")
    pixel = _run_id_field("pixel")
    drop = _drop_field()

    def clean_drop(self):
        value = self.cleaned_data.get("drop")
        return 0.3 if value is None else value

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        ids = [cleaned.get(k) for k in ("original", "prompt", "pixel")]
        if all(i is None for i in ids):
            return cleaned
        if any(i is None for i in ids):
            raise forms.ValidationError("Give all three runs: original, prompt (counterfactual faces) and pixel (anonymized images).")
        runs = {r.pk: r for r in Run.objects.filter(pk__in=ids, task=Run.TASK_JUDGE, status=Run.STATUS_FINISHED)}
        if any(i not in runs for i in ids):
            raise forms.ValidationError("original, prompt and pixel must all be finished judge runs.")
        a, b, c = (runs[i] for i in ids)
        if a.counterfactual_faces or a.face_variant:
            raise forms.ValidationError("original must judge the original images without counterfactual faces.")
        if not b.counterfactual_faces or b.face_variant:
            raise forms.ValidationError("prompt must run with counterfactual faces, on the original images.")
        if not c.face_variant or c.counterfactual_faces:
            raise forms.ValidationError("pixel must judge the anonymized images, without counterfactual faces.")
        if len({(r.provider, r.model_name, r.strategy) for r in (a, b, c)}) != 1:
            raise forms.ValidationError("The three runs must use the same provider, model and strategy.")
        cleaned["runs"] = (a, b, c)
        return cleaned


class BinaryViewForm(ExportForm):
    """The binary private/public view: which ground-truth levels count as private (1..threshold)."""
    table_names = ("classifiers", "judges", "binary", "confusion")
    DEFAULT_THRESHOLD = 2
    threshold = forms.IntegerField(required=False, min_value=min(THRESHOLDS), max_value=max(THRESHOLDS), error_messages={
        "invalid": "threshold must be a whole level number from 1 to 3 (levels up to it count as private).",
        "min_value": "threshold must be a level from 1 to 3 (levels up to it count as private).",
        "max_value": "threshold must be a level from 1 to 3 (levels up to it count as private).",
    })

    def clean_threshold(self):
        return self.cleaned_data.get("threshold") or self.DEFAULT_THRESHOLD
