"""SPY-Bench's launch fields (the launch page shows them for SPY-Bench runs only; their cleaned data
is the run's options: the set, distractors, the judge model)."""
from __future__ import annotations

from django import forms
from django.core.validators import RegexValidator

from .models import SpySet


class SpyLaunchForm(forms.Form):
    aliases = {"spy_set": "set"}  # the API's and launch_run's names for a field, where they differ
    flags = ("set", "distractors", "judge_model")  # also taken by name: launch_run --spy-set/--distractors/--judge-model, the API's keys

    set = forms.TypedChoiceField(coerce=int, label="SPY-Bench set", help_text="The imported set whose rows are asked.",
                                 error_messages={"required": "Choose an imported SPY-Bench set (manage.py spy_import, or the SPY-Bench page).",
                                                 "invalid_choice": "Choose an imported SPY-Bench set (there is none with id %(value)s)."})
    distractors = forms.BooleanField(required=False, help_text="One instruction line per label of other_labels.")
    judge_model = forms.CharField(required=False, max_length=200, validators=[
        RegexValidator(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]*\Z", "Letters, digits and . _ : / @ + - only.")],
        help_text="The text-only judge, a model of the same provider (blank: the run's model).")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        sets = list(SpySet.objects.order_by("name").values_list("pk", "name"))
        self.fields["set"].choices = [(pk, name) for pk, name in sets]
        if sets:  # the defaults launch: the first set (by name) is preselected
            self.fields["set"].initial = sets[0][0]
