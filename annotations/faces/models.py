"""Face-anonymized variants of images, and the background jobs that make them.

A FaceVariant is one image with every detected face removed under one setting (method, threshold,
margin): its bytes are stored like the originals (private storage, re-encoded, no metadata), with the
boxes and scores that were found and the faces a second detector pass still finds on the variant
(the residual). It is unique per (image, setting), so a job that runs twice stores nothing twice.
"""
from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from annotations.storage import private_image_storage
from core.jobs import Job

METHOD_CHOICES = [("blur", "blur"), ("pixelate", "pixelate"), ("fill", "fill (solid black)")]


class VariantSetting(models.Model):
    """Fields shared by a variant and the job that makes it."""

    method = models.CharField(max_length=16, choices=METHOD_CHOICES, default="blur")
    threshold = models.FloatField(default=0.5, validators=[MinValueValidator(0.01), MaxValueValidator(0.99)],
                                  help_text="Detector score above which a face is removed.")
    margin = models.FloatField(default=0.2, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
                               help_text="Added on each side of a box, as a fraction of its width and height.")

    class Meta:
        abstract = True

    @property
    def setting_label(self) -> str:
        return f"{self.method}, threshold {self.threshold:g}, margin {self.margin:g}"


class FaceVariant(VariantSetting):
    image = models.ForeignKey("annotations.Image", on_delete=models.CASCADE, related_name="face_variants")
    file = models.FileField(storage=private_image_storage, upload_to="")
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    detector = models.CharField(max_length=200, help_text="Detector, weights and input size that found the boxes.")
    boxes = models.JSONField(default=list, help_text="[x1, y1, x2, y2, score] per face, in the original's pixels.")
    faces = models.PositiveIntegerField(default=0)
    residual_boxes = models.JSONField(default=list, help_text="Faces a second detector pass still finds on the variant.")
    residual_faces = models.PositiveIntegerField(default=0)
    job = models.ForeignKey("AnonymizationJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="variants")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "annotations"
        ordering = ["image_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["image", "method", "threshold", "margin"], name="one_face_variant_per_setting"),
        ]

    def __str__(self):
        return f"{self.image} ({self.setting_label})"


class AnonymizationJob(VariantSetting, Job):
    """Make variants for a frozen list of images, on the job base (core/jobs.py: status, lease,
    heartbeat, progress, scrubbed error); progress is written by the worker, read by the page."""

    split = models.CharField(max_length=8, blank=True, help_text="The split chosen, or empty for every split.")
    image_ids = models.JSONField(default=list, help_text="The frozen list of images to anonymize.")
    faces = models.PositiveIntegerField(default=0)
    images_without_face = models.PositiveIntegerField(default=0)
    residual_faces = models.PositiveIntegerField(default=0)
    failures = models.JSONField(default=list, blank=True, help_text="[image id, message] for images that could not be processed.")

    class Meta:
        app_label = "annotations"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(method__in=["blur", "pixelate", "fill"]), name="anonymization_job_method"),
        ]

    def __str__(self):
        return f"anonymization #{self.pk} ({self.status})"
