"""Registered local classifiers: an ONNX file under the data folder, checked once at registration.

A row is written only by `registry.register` (`manage.py register_classifier`), after the file was
loaded and a dummy batch run through it; the provider reads the row in the main thread and the file
in its workers. The preprocessing and the class order are stored with the model because the file
cannot say them: both come from the code the model was trained with (docs/classifiers.md).
"""
from __future__ import annotations

from django.conf import settings
from django.db import models


class ClassifierModel(models.Model):
    OUTPUT_PROBABILITIES, OUTPUT_LOGITS = "probabilities", "logits"
    OUTPUTS = [(OUTPUT_PROBABILITIES, "probabilities (rows sum to 1)"), (OUTPUT_LOGITS, "logits (softmax applied here)")]

    name = models.CharField(max_length=200, unique=True, help_text="What a run names as its model (launch_run --model NAME).")
    file = models.CharField(max_length=300, help_text="The ONNX file, relative to CPRT_DATA_DIR.")
    sha256 = models.CharField(max_length=64, help_text="Of the file as registered; checked again before a run uses it.")
    size_bytes = models.BigIntegerField()
    input_name = models.CharField(max_length=200)
    input_shape = models.JSONField(help_text='e.g. [null, 3, 448, 448]: null is a dynamic batch dimension.')
    output_name = models.CharField(max_length=200)
    output_kind = models.CharField(max_length=16, choices=OUTPUTS)
    classes = models.JSONField(help_text='The order of the output columns, e.g. ["private", "public"].')
    preprocessing = models.JSONField(help_text="Resize, scale, mean and std the image goes through before the model.")
    source = models.TextField(blank=True, help_text="Where the file came from (the converter's note in the file, if any).")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        app_label = "inference"
        ordering = ["name"]

    def __str__(self):
        return f"{self.name} ({self.sha256[:12]})"

    @property
    def path(self):
        return settings.DATA_DIR / self.file

    @property
    def batch_size(self) -> int | None:
        """The fixed batch size of the input, or None when it is dynamic."""
        first = self.input_shape[0]
        return first if isinstance(first, int) else None

    @property
    def private_index(self) -> int:
        return self.classes.index("private")
