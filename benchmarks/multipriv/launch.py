"""MultiPriv re-identification's launch fields: the pairs' seed and a balanced subset of that many
pairs (its cleaned data is the run's options; the CPRT image selection does not apply)."""
from __future__ import annotations

from django import forms


class ReidLaunchForm(forms.Form):
    aliases = {"sample_size": "limit"}  # the API's and launch_run's names for a field, where they differ

    seed = forms.IntegerField(initial=0, min_value=0, max_value=2**31 - 1, required=False,
                              help_text="Which negative pairs are drawn (same seed, same pairs).")
    limit = forms.IntegerField(min_value=2, max_value=1_000_000, required=False, label="Pairs",
                               help_text="A balanced subset of this many pairs (blank: all pairs).")

    def clean_seed(self):
        return self.cleaned_data.get("seed") or 0
