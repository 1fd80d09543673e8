"""Forms that validate what reviewers post: the labeling form (drafts and submissions) and preferences."""
from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from . import blind
from .models import Labeling

from core.models import Profile
from .taxonomy import Taxonomy

VALUE_CHOICES = [("0", "No"), ("0.5", "Unsure"), ("1", "Yes")]
VALUE_OF = {"0": 0.0, "0.5": 0.5, "1": 1.0}
VALUE_PREFIX, RATIONALE_PREFIX = "value-", "rationale-"
MAX_RATIONALE, MAX_NOTE = 2000, 5000


class LabelingForm(forms.Form):
    """One field pair per attribute of the taxonomy (value-<key>, rationale-<key>) plus version, note and flag.

    Values must be exactly "0", "0.5" or "1"; names for attributes the taxonomy does not have are
    refused (not ignored), so a stale page or a crafted request cannot write something unexpected.
    With `require_all` every attribute needs an answer and the error names the missing ones.
    """

    version = forms.IntegerField(
        min_value=1,
        error_messages={"required": "The form did not say which version it was loaded with; reload the page."},
    )
    note = forms.CharField(required=False, max_length=MAX_NOTE, strip=False)
    flag = forms.ChoiceField(
        choices=Labeling.FLAGS,
        required=False,
        error_messages={"invalid_choice": "%(value)s is not a flag: use broken, duplicate or not_suitable."},
    )

    def __init__(self, *args, taxonomy: Taxonomy, require_all: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.taxonomy = taxonomy
        self.require_all = require_all
        self.missing: list[str] = []
        for attribute in taxonomy.attributes:
            self.fields[VALUE_PREFIX + attribute.key] = forms.ChoiceField(
                choices=VALUE_CHOICES,
                required=False,
                label=attribute.key,
                error_messages={"invalid_choice": f"%(value)s is not a valid answer for {attribute.key}: use 0 (No), 0.5 (Unsure) or 1 (Yes)."},
            )
            self.fields[RATIONALE_PREFIX + attribute.key] = forms.CharField(required=False, max_length=MAX_RATIONALE,
                                                                            label=f"rationale for {attribute.key}")

    def clean(self):
        cleaned = super().clean()
        known = set(self.taxonomy.keys)
        unknown = sorted(
            {name.split("-", 1)[1] for name in self.data if name.startswith((VALUE_PREFIX, RATIONALE_PREFIX)) and name.split("-", 1)[1] not in known}
        )
        if unknown:
            raise ValidationError(f"Unknown attribute(s): {', '.join(unknown)}. Nothing was saved; reload the page.")
        if self.require_all:
            self.missing = [k for k in self.taxonomy.keys if not cleaned.get(VALUE_PREFIX + k) and not self.has_error(VALUE_PREFIX + k)]
            if self.missing:
                raise ValidationError(f"Answer every question before submitting. Missing ({len(self.missing)}): {', '.join(self.missing)}.")
        return cleaned

    def labeling_data(self) -> dict:
        """Keyword arguments for services.editing.save_draft / submit."""
        c = self.cleaned_data
        values = {k: VALUE_OF[c[VALUE_PREFIX + k]] for k in self.taxonomy.keys if c.get(VALUE_PREFIX + k)}
        rationales = {k: c[RATIONALE_PREFIX + k].strip() for k in self.taxonomy.keys if c.get(RATIONALE_PREFIX + k, "").strip()}
        return {"version": c["version"], "values": values, "rationales": rationales, "note": c.get("note", ""), "flag": c.get("flag", "")}

    def posted_values(self) -> tuple[dict, dict]:
        """What the reviewer posted (valid answers only), to show the form again after an error."""
        values, rationales = {}, {}
        for k in self.taxonomy.keys:
            raw = self.data.get(VALUE_PREFIX + k)
            if raw in VALUE_OF:
                values[k] = VALUE_OF[raw]
            text = self.data.get(RATIONALE_PREFIX + k, "")
            if text:
                rationales[k] = text[:MAX_RATIONALE]
        return values, rationales

    def error_messages_list(self) -> list[str]:
        """All errors as plain sentences, field errors prefixed with the attribute or field they concern."""
        out = list(self.non_field_errors())
        for name, errors in self.errors.items():
            if name == "__all__":
                continue
            for error in errors:
                out.append(error if name.startswith(VALUE_PREFIX) else f"{self.fields[name].label or name}: {error}")
        return out


class _RawCheckboxInput(forms.CheckboxInput):
    def value_from_datadict(self, data, files, name):
        return data.get(name)  # Django's CheckboxInput turns any value into True; let the field judge it


class StrictCheckbox(forms.BooleanField):
    """A checkbox that accepts what a browser sends (absent, or "on") and refuses anything else."""

    widget = _RawCheckboxInput

    def to_python(self, value):
        if value in (None, "", False):
            return False
        if value in ("on", True):
            return True
        raise forms.ValidationError("A checkbox is either ticked or not; this value is neither.", code="invalid")


class PreferencesForm(forms.ModelForm):
    blur_images_by_default = StrictCheckbox(required=False, label="Blur images by default (reveal each with a click or the b key)")
    stay_after_submit = StrictCheckbox(required=False, label="After submitting, stay on the image to compare with others' labels "
                                                             "(instead of opening the next image)")

    class Meta:
        model = Profile
        fields = ["blur_images_by_default", "stay_after_submit"]


class ImageFilterForm(forms.Form):
    """The Images page's filters and search (GET). Unknown parameters are refused, like the API's."""

    COVERAGE = [("", "any coverage"), ("none", "no human labeling yet"), ("partial", "fewer than needed"),
                ("complete", "enough human labelings"), ("models", "labelled by a model")]
    PAGE_SIZES = [("48", "48 a page"), ("96", "96 a page"), ("200", "200 a page")]

    q = forms.CharField(required=False, max_length=64, label="Image id", strip=True,
                        widget=forms.TextInput(attrs={"placeholder": "e.g. 2017_10000580", "type": "search"}))
    split = forms.ChoiceField(required=False, choices=[("", "all splits"), ("train", "train"), ("test", "test"), ("other", "other")])
    dataset = forms.ModelChoiceField(queryset=None, required=False, empty_label="any dataset version", label="Dataset version")
    level = forms.TypedChoiceField(required=False, coerce=int, empty_value=None, label="Consensus level",
                                   choices=[("", "any")] + [(str(n), str(n)) for n in (1, 2, 3, 4)])
    attribute = forms.ChoiceField(required=False, label="Consensus attribute")
    coverage = forms.ChoiceField(required=False, choices=COVERAGE, label="Annotator coverage")
    vispr_label = forms.RegexField(required=False, max_length=64, regex=r"^[A-Za-z0-9_.-]+\Z", label="VISPR label",
                                   error_messages={"invalid": "A VISPR label id is letters, digits, _ . - only (e.g. a17_color)."},
                                   widget=forms.TextInput(attrs={"placeholder": "e.g. a17_color"}))
    page_size = forms.TypedChoiceField(required=False, coerce=int, empty_value=48, choices=PAGE_SIZES, label="Page size")
    page = forms.IntegerField(required=False, min_value=1, max_value=10**6)

    def __init__(self, *args, attribute_keys=(), staff: bool = False, **kwargs):
        from .datasets.models import DatasetVersion

        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = DatasetVersion.objects.order_by("name")
        self.fields["attribute"].choices = [("", "any attribute")] + [(k, k) for k in attribute_keys]
        if not staff:
            # Blind rule (blind.restrict_by_others_labels): a reviewer filters by anything derived from others'
            # labels only among the images they have submitted, and never by a consensus attribute (as in the API).
            del self.fields["attribute"]
            for name in blind.OTHERS_LABEL_FILTERS:
                if name in self.fields:
                    self.fields[name].help_text = "Among the images you have labelled."
        self.unknown = sorted(set(self.data) - set(self.fields)) if self.is_bound else []

    def clean(self):
        data = super().clean()
        if self.unknown:
            raise ValidationError(f"Unknown filter(s): {', '.join(u[:32] for u in self.unknown[:10])}.")
        return data
