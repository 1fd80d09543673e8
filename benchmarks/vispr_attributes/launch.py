"""The launch fields this kind adds to the shared ones (split, dataset version, sample): which VISPR
split's images to ask about. Its cleaned_data is the run's `Run.options`."""
from __future__ import annotations

from django import forms

from . import attributes


class LaunchFields(forms.Form):
    vispr_split = forms.ChoiceField(
        required=False, label="VISPR split",
        help_text="Only the selected images of this VISPR split (blank: every imported VISPR image the selection keeps).",
        error_messages={"invalid_choice": "No imported VISPR image is in split %(value)s."},
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["vispr_split"].choices = [("", "— every imported split")] + [(s, s) for s in attributes.imported_splits()]


def clean(options: dict) -> dict:
    """The run's options from the launch fields (missing ones take their defaults); ValueError with
    the fields' messages for what is refused."""
    unknown = sorted(set(options) - set(LaunchFields.base_fields))
    if unknown:
        raise ValueError(f"Unknown option(s) {', '.join(unknown)}; this kind takes: {', '.join(LaunchFields.base_fields)}.")
    form = LaunchFields(data={k: ("" if v is None else v) for k, v in options.items()})
    if not form.is_valid():
        raise ValueError(" ".join(f"{name}: {message}" for name, errors in form.errors.items() for message in errors))
    return {"vispr_split": form.cleaned_data["vispr_split"] or ""}
