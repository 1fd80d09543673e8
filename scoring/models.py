"""Scoring profiles (weights + boundaries + consensus set), the computed score per image, export jobs."""
from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from core.jobs import Job

from . import engine


class ScoringProfile(models.Model):
    """A named, versioned set of boundaries and the annotators whose labels form the consensus."""

    name = models.SlugField(max_length=64, unique=True)
    version = models.PositiveIntegerField(default=1)
    weights = models.JSONField(default=list)
    lo1 = models.FloatField()
    lo2 = models.FloatField()
    lo3 = models.FloatField()
    provisional = models.BooleanField(default=True)
    source = models.TextField(help_text="Where the boundaries came from.")
    fit_report = models.JSONField(default=dict, blank=True)
    consensus_annotators = models.ManyToManyField("annotations.Annotator", blank=True, related_name="+")
    exclude_assisted = models.BooleanField(
        default=False, verbose_name="leave assisted human labels out of the consensus",
        help_text="A human labeling made with model suggestions in view neither votes nor is waited for on its image "
                  "(the image's consensus comes from the other annotators of the set; none left: no consensus).")
    is_active = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["is_active"], condition=Q(is_active=True), name="one_active_profile"),
            models.CheckConstraint(condition=Q(lo1__lt=1, lo1__gt=models.F("lo2")), name="profile_lo1_range"),
            models.CheckConstraint(condition=Q(lo2__gt=models.F("lo3"), lo3__gt=0), name="profile_lo_order"),
        ]

    def __str__(self):
        return f"{self.name} v{self.version}{' (provisional)' if self.provisional else ''}"

    @property
    def bounds(self) -> engine.Bounds:
        return engine.Bounds.from_inner(self.lo1, self.lo2, self.lo3)

    def a6_check(self) -> list[dict]:
        """The paper's two Appendix A.6 examples under this profile's weights and boundaries."""
        return engine.a6_check(self.bounds, self.weights) if self.weights else []

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}" + (" — PROVISIONAL boundaries" if self.provisional else "")

    @property
    def assisted_rule(self) -> str:
        """How the consensus treats assisted human labels (shown wherever the consensus is described)."""
        if self.exclude_assisted:
            return "assisted human labels (made with model suggestions in view) are left out of the consensus"
        return "assisted human labels (made with model suggestions in view) count in the consensus like any other"

    # The active-profile rule: at most one profile is active (a constraint). `active_or_none()` is
    # that profile or None (pages that show consensus "under the active profile": home, image API).
    # `active()` is for computations that need *a* profile: the active one, else the oldest (a
    # fresh install before any activation), else DoesNotExist. No other fallback exists.
    @classmethod
    def active_or_none(cls) -> "ScoringProfile | None":
        return cls.objects.filter(is_active=True).first()

    @classmethod
    def active(cls) -> "ScoringProfile":
        profile = cls.active_or_none()
        if profile is None:
            profile = cls.objects.order_by("id").first()
        if profile is None:
            raise cls.DoesNotExist("No scoring profile: run `python manage.py migrate`.")
        return profile

    def activate(self) -> None:
        ScoringProfile.objects.filter(is_active=True).exclude(pk=self.pk).update(is_active=False)
        self.is_active = True
        self.save(update_fields=["is_active", "updated_at"])


class ImageScore(models.Model):
    """The consensus of one image under one profile: binary labels, level counts, level, score."""

    image = models.ForeignKey("annotations.Image", on_delete=models.CASCADE, related_name="scores")
    profile = models.ForeignKey(ScoringProfile, on_delete=models.CASCADE, related_name="image_scores")
    binary_labels = models.JSONField(help_text="attribute key -> 0/1")
    n1 = models.PositiveSmallIntegerField()
    n2 = models.PositiveSmallIntegerField()
    n3 = models.PositiveSmallIntegerField()
    n4 = models.PositiveSmallIntegerField()
    level = models.PositiveSmallIntegerField()
    score = models.FloatField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["image", "profile"], name="one_score_per_image_profile"),
            models.CheckConstraint(condition=Q(level__gte=1, level__lte=4), name="score_level_1_to_4"),
            models.CheckConstraint(condition=Q(score__gte=0, score__lte=1), name="score_0_to_1"),
        ]
        indexes = [models.Index(fields=["profile", "level"])]

    @property
    def counts(self) -> tuple[int, int, int, int]:
        return (self.n1, self.n2, self.n3, self.n4)


class ComputedMetrics(models.Model):
    """A cached computation (run metrics, agreement study, disagreement queue) and the fingerprint of
    the data it was computed from; a different fingerprint means the entry is stale."""

    key = models.CharField(max_length=200, unique=True)
    fingerprint = models.CharField(max_length=64)
    data = models.JSONField()
    seconds = models.FloatField(default=0, help_text="How long the computation took.")
    computed_at = models.DateTimeField(auto_now=True)
    # How to compute it again (scoring.services.cache.REFRESHERS), and the lease of the job doing so.
    spec = models.JSONField(default=dict, blank=True)
    refresh_owner = models.CharField(max_length=120, blank=True, default="")
    refresh_expires_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.key} @ {self.computed_at:%Y-%m-%d %H:%M}"


class DisputedImage(models.Model):
    """One image of a stored disagreement queue (scoring.services.disagreements): one row per image,
    so that a page of the queue reads one page of rows (filters and order in SQL), never the whole queue.

    `queue` is the ComputedMetrics key the rows belong to; the entry holds the annotators and the
    order of the attribute and pair bits. `attribute_mask` / `pair_mask`: bit j set when attribute j
    (of the entry's `keys`) is disputed / when pair j (of the entry's `pairs`) disagrees on the image.
    """

    queue = models.CharField(max_length=200)
    image = models.ForeignKey("annotations.Image", on_delete=models.CASCADE, related_name="+", db_constraint=True)
    impact = models.FloatField()
    n_disputed = models.PositiveSmallIntegerField()
    level_changes = models.BooleanField()
    score_lo = models.FloatField()
    score_hi = models.FloatField()
    level_lo = models.PositiveSmallIntegerField()
    level_hi = models.PositiveSmallIntegerField()
    disputed = models.JSONField(default=list, help_text="The disputed attribute keys, for display.")
    pairs = models.JSONField(default=list, help_text="The disagreeing annotator id pairs, for display.")
    attribute_mask = models.BigIntegerField(default=0)
    pair_mask = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["queue", "image"], name="one_disputed_row_per_queue_image")]
        indexes = [models.Index(fields=["queue", "-impact", "image"], name="dispute_queue_impact")]


# A Hugging Face repository id: owner/name, each part starting and ending with a letter or digit, no '--' or '..'.
REPO_ID_PATTERN = r"^(?!.*(?:--|\.\.))[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?/[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?\Z"


class ExportJob(Job):
    """One dataset export launched from the browser and run by a worker (scoring/exports.py), on the
    job base (core/jobs.py): status, lease, heartbeat, progress and a scrubbed error come from there.

    Progress (`done` / `total`) is written by the worker and read by the job page. The finished zip
    lives under CPRT_EXPORT_ROOT and is served only through the admin-only download view.
    """

    DESTINATION_ZIP, DESTINATION_HUB = "zip", "hub"
    DESTINATIONS = [(DESTINATION_ZIP, "zip file to download"), (DESTINATION_HUB, "Hugging Face Hub dataset repository")]
    KIND_DATASET, KIND_SFT = "dataset", "sft"
    KINDS = [(KIND_DATASET, "CPRT-Bench dataset"), (KIND_SFT, "fine-tuning pairs (scoring/sft)")]

    kind = models.CharField(max_length=16, choices=KINDS, default=KIND_DATASET)
    options = models.JSONField(default=dict, blank=True, help_text="Fine-tuning pairs: format, prompt version, training split, faces, stages.")
    splits = models.JSONField(default=list, help_text="The splits exported, e.g. [\"train\", \"test\"].")
    dataset_version = models.ForeignKey(
        "annotations.DatasetVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="export_jobs",
        help_text="Only this dataset version's images (and its Hub metadata on the card); empty: every image.")
    profile = models.ForeignKey(ScoringProfile, on_delete=models.PROTECT, related_name="export_jobs")
    include_annotations = models.BooleanField(
        default=False, help_text="Add the `annotations` (raw labels and rationales) and `predictions` (model runs) configurations."
    )
    include_images = models.BooleanField(default=False, help_text="Add the `images` configuration with the image bytes.")
    face_variant = models.JSONField(default=dict, blank=True, help_text=(
        "With include_images: the face-anonymization setting whose variants replace the originals; empty: the originals."))
    destination = models.CharField(max_length=8, choices=DESTINATIONS, default=DESTINATION_ZIP)
    repo_id = models.CharField(max_length=193, blank=True, validators=[RegexValidator(REPO_ID_PATTERN, "Use owner/name.")])
    private = models.BooleanField(default=True, help_text="Hub destination: create the repository private.")
    summary = models.JSONField(default=dict, blank=True, help_text="Rows per split and level, files written.")
    zip_path = models.CharField(max_length=300, blank=True, help_text="The zip file, relative to CPRT_EXPORT_ROOT.")
    hub_url = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(destination="zip") | ~Q(repo_id=""), name="hub_export_has_repo_id"),
        ]

    def __str__(self):
        return f"export #{self.pk} ({self.status})"

    @property
    def download_name(self) -> str:
        if self.kind == self.KIND_SFT:
            return f"cprt-sft-{self.options.get('format', 'pairs')}-{self.pk}.zip"
        return f"cprt-bench-export-{self.pk}.zip"

    @property
    def downloadable(self) -> bool:
        return self.status == self.STATUS_FINISHED and bool(self.zip_path)


class ImportJob(Job):
    """An import started from the browser (/scoring/imports/), run by a worker (scoring/imports.py) on
    the job base: a VISPR folder (annotations.services.vispr_release) or a CPRT-Bench file
    (scoring.cprt_bench), read from under settings.CPRT_IMPORT_ROOT only."""

    KIND_VISPR, KIND_CPRT_BENCH = "vispr", "cprt_bench"
    KINDS = [(KIND_VISPR, "VISPR release folder"), (KIND_CPRT_BENCH, "CPRT-Bench file")]

    kind = models.CharField(max_length=16, choices=KINDS)
    path = models.CharField(max_length=500, help_text="Relative to CPRT_IMPORT_ROOT.")
    options = models.JSONField(default=dict, blank=True, help_text="vispr: vispr_splits; cprt_bench: split.")
    result = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"import #{self.pk} {self.kind} {self.path} ({self.status})"
