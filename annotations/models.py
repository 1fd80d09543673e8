"""Images, annotators (humans and models), the taxonomy and the labels they give.

A label is one value in {0, 0.5, 1} per (image, annotator, attribute). A Labeling is the envelope
of one annotator's work on one image (draft/submitted, version for optimistic locking, note, flag).
"""
from __future__ import annotations

import re

from django.conf import settings
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from .storage import private_image_storage  # migrations name it here too (annotations.models.private_image_storage)
from core.secrets import ScrubbedTextField

LABEL_VALUES = (0.0, 0.5, 1.0)
# VISPR ids are file stems such as 2017_10000580; the pattern also keeps ids safe in file names.
# \Z, not $: "$" would accept an id followed by a newline.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
VISPR_ANNOTATOR = "vispr"  # the name of the dataset annotator holding VISPR's mapped labels


class TaxonomyVersion(models.Model):
    version = models.CharField(max_length=32, unique=True)
    name = models.CharField(max_length=64)
    source = models.JSONField(help_text="The taxonomy file as loaded.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.name} v{self.version}"


class Level(models.Model):
    taxonomy = models.ForeignKey(TaxonomyVersion, on_delete=models.CASCADE, related_name="levels")
    number = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=64)
    description = models.TextField()

    class Meta:
        ordering = ["number"]
        constraints = [
            models.UniqueConstraint(fields=["taxonomy", "number"], name="level_unique_per_taxonomy"),
            models.CheckConstraint(condition=Q(number__gte=1, number__lte=4), name="level_number_1_to_4"),
        ]

    def __str__(self):
        return f"Level {self.number}: {self.name}"


class Attribute(models.Model):
    taxonomy = models.ForeignKey(TaxonomyVersion, on_delete=models.CASCADE, related_name="attributes")
    key = models.SlugField(max_length=64)
    level = models.PositiveSmallIntegerField()
    order = models.PositiveSmallIntegerField()
    question = models.TextField()

    class Meta:
        ordering = ["order"]
        constraints = [
            models.UniqueConstraint(fields=["taxonomy", "key"], name="attribute_key_unique_per_taxonomy"),
            models.CheckConstraint(condition=Q(level__gte=1, level__lte=4), name="attribute_level_1_to_4"),
        ]

    def __str__(self):
        return self.key


class Batch(models.Model):
    """A group of images labeled together; admins decide whether its reviewers see model suggestions."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    show_model_suggestions = models.BooleanField(
        default=False,
        help_text="Show model labels to reviewers as clearly marked suggestions (never saved as their answers).",
    )
    suggestion_annotators = models.ManyToManyField(
        "Annotator",
        blank=True,
        related_name="suggested_in_batches",
        limit_choices_to={"kind": "model"},
        help_text="Which model annotators to show; none chosen means every model annotator.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "batches"

    def __str__(self):
        return self.name


class Image(models.Model):
    SPLIT_TRAIN, SPLIT_TEST, SPLIT_OTHER = "train", "test", "other"
    SPLITS = [(SPLIT_TRAIN, "train"), (SPLIT_TEST, "test"), (SPLIT_OTHER, "other")]

    vispr_id = models.CharField(max_length=64, unique=True, help_text="VISPR file id, e.g. 2017_10000580")
    split = models.CharField(max_length=8, choices=SPLITS, db_index=True)
    file = models.FileField(storage=private_image_storage, upload_to="", blank=True)
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    source = models.CharField(max_length=200, blank=True, help_text="Where the record came from (import, demo).")
    # VISPR's own annotation, as shipped (spec vispr-and-benchmarks.md §1): its split and its
    # presence-only attribute ids (e.g. ["a4_gender", "a9_face_complete"]); empty when not imported from VISPR.
    vispr_split = models.CharField(max_length=16, blank=True, db_index=True, help_text="VISPR split, e.g. test2017.")
    vispr_labels = models.JSONField(default=list, blank=True, help_text="VISPR attribute ids present on the image.")
    # Published CPRT-Bench ground truth, kept verbatim so exports reproduce it unchanged.
    published_level = models.PositiveSmallIntegerField(null=True, blank=True)
    published_score = models.FloatField(null=True, blank=True)
    batch = models.ForeignKey(Batch, null=True, blank=True, on_delete=models.SET_NULL, related_name="images")
    unsuitable = models.BooleanField(
        default=False, help_text="Set by an admin: the image is broken, a duplicate or not suitable, and leaves the labeling queue."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["vispr_id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(published_level__isnull=True) | Q(published_level__gte=1, published_level__lte=4),
                name="image_published_level_1_to_4",
            ),
            models.CheckConstraint(
                condition=Q(published_score__isnull=True) | Q(published_score__gte=0, published_score__lte=1),
                name="image_published_score_0_to_1",
            ),
        ]

    def __str__(self):
        return self.vispr_id

    @property
    def has_file(self) -> bool:
        return bool(self.file)


class Annotator(models.Model):
    KIND_HUMAN, KIND_MODEL, KIND_GROUND_TRUTH, KIND_DATASET = "human", "model", "ground_truth", "dataset"
    KINDS = [(KIND_HUMAN, "human"), (KIND_MODEL, "model"), (KIND_GROUND_TRUTH, "imported ground truth"),
             (KIND_DATASET, "a dataset's own labels, mapped (VISPR)")]

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=16, choices=KINDS)
    user = models.OneToOneField(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="annotator")
    provider = models.CharField(max_length=32, blank=True)
    model_name = models.CharField(max_length=200, blank=True)
    prompt_version = models.CharField(max_length=64, blank=True)
    is_demo = models.BooleanField(default=False, help_text="Synthetic demo data, never real research data.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "name"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(kind="human") | Q(user__isnull=False), name="human_annotator_has_user"
            ),
            models.CheckConstraint(
                condition=~Q(kind="model") | (~Q(provider="") & ~Q(model_name="")), name="model_annotator_has_model"
            ),
        ]

    def __str__(self):
        return self.name

    @classmethod
    def for_user(cls, user) -> "Annotator":
        annotator, _ = cls.objects.get_or_create(user=user, defaults={"kind": cls.KIND_HUMAN, "name": f"human:{user.username}"})
        return annotator

    @classmethod
    def for_model(cls, provider: str, model_name: str, prompt_version: str) -> "Annotator":
        name = f"model:{provider}/{model_name}@{prompt_version}"
        annotator, _ = cls.objects.get_or_create(
            name=name,
            defaults={"kind": cls.KIND_MODEL, "provider": provider, "model_name": model_name, "prompt_version": prompt_version},
        )
        return annotator

    @classmethod
    def vispr(cls) -> "Annotator":
        """VISPR's own labels mapped onto the CPRT attributes (annotations/services/vispr_labels.py)."""
        annotator, _ = cls.objects.get_or_create(name=VISPR_ANNOTATOR, defaults={"kind": cls.KIND_DATASET})
        return annotator

    @classmethod
    def ground_truth(cls, name: str = "cprt-bench") -> "Annotator":
        annotator, _ = cls.objects.get_or_create(name=f"ground-truth:{name}", defaults={"kind": cls.KIND_GROUND_TRUTH})
        return annotator


class VisprAttribute(models.Model):
    """One line of a VISPR release's attributes.tsv (idx, attribute id, description), as last imported."""

    attribute_id = models.CharField(max_length=64, unique=True, help_text="e.g. a9_face_complete")
    idx = models.PositiveIntegerField()
    description = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["idx", "attribute_id"]

    def __str__(self):
        return self.attribute_id


class Labeling(models.Model):
    """One annotator's work on one image: draft, submitted or skipped, versioned for conflict detection.

    A human's answers in progress live in `draft_values`/`draft_rationales` (the working copy the form
    shows); Label rows hold only what was submitted, so readers of Label never see half-done work.
    A draft holds one of the image's k queue slots; a skipped labeling gives its slot back.
    """

    STATUS_DRAFT, STATUS_SUBMITTED, STATUS_SKIPPED = "draft", "submitted", "skipped"
    STATUSES = [(STATUS_DRAFT, "draft"), (STATUS_SUBMITTED, "submitted"), (STATUS_SKIPPED, "skipped")]
    FLAGS = [("", "not flagged"), ("broken", "broken"), ("duplicate", "duplicate"), ("not_suitable", "not suitable")]

    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="labelings")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="labelings")
    status = models.CharField(max_length=16, choices=STATUSES, default=STATUS_DRAFT)
    version = models.PositiveIntegerField(default=1)
    note = models.TextField(blank=True)
    flag = models.CharField(max_length=16, choices=FLAGS, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    draft_values = models.JSONField(default=dict, blank=True, help_text="attribute key -> 0/0.5/1, the working copy")
    draft_rationales = models.JSONField(default=dict, blank=True, help_text="attribute key -> rationale, the working copy")
    # Assisted labels (docs/scoring.md): whether model suggestions were in view when the reviewer saved or submitted
    # this labeling, from which model annotators (their names), and the suggestion shown per attribute. Set by
    # services/editing.py on every write of the answers, never unset: a labeling once made with suggestions in
    # view stays assisted. Agreement and the consensus can leave assisted labelings out.
    assisted = models.BooleanField(default=False, help_text="Model suggestions were in view while the reviewer answered.")
    suggestions_seen = models.JSONField(default=list, blank=True, help_text="Names of the model annotators whose suggestions were in view.")
    suggested_values = models.JSONField(default=dict, blank=True, help_text="attribute key -> the suggestion shown (0/0.5/1)")
    history = HistoricalRecords()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["image", "annotator"], name="one_labeling_per_image_annotator")]
        indexes = [models.Index(fields=["annotator", "status"])]

    def answers_as_suggested(self) -> dict[str, bool]:
        """Per answered attribute that had a suggestion in view: does the answer equal it (accepted with the
        `a` key or typed, the same thing for the study)?"""
        values = self.draft_values or {}
        return {key: float(values[key]) == float(shown) for key, shown in sorted((self.suggested_values or {}).items())
                if values.get(key) is not None}


class Label(models.Model):
    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="labels")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="labels")
    attribute = models.ForeignKey(Attribute, on_delete=models.PROTECT, related_name="labels")
    value = models.FloatField()
    rationale = ScrubbedTextField(blank=True)  # a model's words too (annotate runs): never a configured secret
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["image", "annotator", "attribute"], name="one_label_per_image_annotator_attribute"),
            models.CheckConstraint(condition=Q(value__in=LABEL_VALUES), name="label_value_0_half_1"),
        ]
        indexes = [models.Index(fields=["annotator", "image"])]

    def __str__(self):
        return f"{self.image_id}/{self.annotator_id}/{self.attribute_id}={self.value}"


class Adjudication(models.Model):
    """A reviewer's final word on one (image, attribute); overrides the consensus, never the labels."""

    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="adjudications")
    attribute = models.ForeignKey(Attribute, on_delete=models.PROTECT, related_name="adjudications")
    value = models.FloatField()
    note = models.TextField(blank=True)
    adjudicator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["image", "attribute"], name="one_adjudication_per_image_attribute"),
            models.CheckConstraint(condition=Q(value__in=LABEL_VALUES), name="adjudication_value_0_half_1"),
        ]



class LabelWrites(models.Model):
    """Committed writes of labels, labelings and adjudications, counted per stream (an annotator's id; 0 for
    deletions and annotator edits; -1 for adjudications, so the version of the labels alone leaves them out):
    the label fingerprint is the sum, one read of a tiny table, exact.

    Every write path bumps its stream in its own transaction (annotations.label_version). A stream per
    annotator keeps a long import of one annotator's labels from blocking a reviewer's submission on one
    shared counter row; the sum only grows, so two states of the labels never share a fingerprint."""

    stream = models.IntegerField(primary_key=True)
    writes = models.BigIntegerField(default=0)


from .faces.models import AnonymizationJob, FaceVariant  # noqa: E402,F401 - registered with this app
from .datasets.models import DatasetBuild, DatasetVersion  # noqa: E402,F401 - registered with this app
