"""The anonymization launch form (staff): which split, how faces are removed, detector threshold, margin."""
from __future__ import annotations

from django import forms

from annotations.models import Image

from . import detector, pixels
from .models import METHOD_CHOICES


class AnonymizeForm(forms.Form):
    split = forms.ChoiceField(choices=(), required=False, error_messages={"invalid_choice": "Choose a split that has images."})
    method = forms.ChoiceField(choices=METHOD_CHOICES, initial=pixels.DEFAULT_METHOD,
                               error_messages={"invalid_choice": "method must be blur, pixelate or fill."})
    threshold = forms.FloatField(initial=detector.DEFAULT_THRESHOLD, min_value=0.01, max_value=0.99,
                                 help_text="Detector score above which a face is removed (lower removes more, with more false alarms).",
                                 error_messages={"invalid": "threshold must be a number between 0.01 and 0.99.",
                                                 "min_value": "threshold must be between 0.01 and 0.99.",
                                                 "max_value": "threshold must be between 0.01 and 0.99."})
    margin = forms.FloatField(initial=pixels.DEFAULT_MARGIN, min_value=0.0, max_value=pixels.MAX_MARGIN,
                              help_text="Added on each side of a box, as a fraction of its width and height.",
                              error_messages={"invalid": "margin must be a number between 0 and 1.",
                                              "min_value": "margin must be between 0 and 1.", "max_value": "margin must be between 0 and 1."})

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        present = set(Image.objects.exclude(file="").values_list("split", flat=True).distinct())
        self.fields["split"].choices = [("", "every split")] + [(v, label) for v, label in Image.SPLITS if v in present]
