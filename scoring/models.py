"""Scoring profiles (weights + boundaries + consensus set) and the computed score per image."""
from __future__ import annotations

from django.db import models
from django.db.models import Q

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

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}" + (" — PROVISIONAL boundaries" if self.provisional else "")

    @classmethod
    def active(cls) -> "ScoringProfile":
        profile = cls.objects.filter(is_active=True).first()
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

    def __str__(self):
        return f"{self.key} @ {self.computed_at:%Y-%m-%d %H:%M}"
