"""A dataset version (a frozen, named set of images and how it was chosen) and its build job.

A version never changes after its build finishes: its members, the recipe as it was applied, the
count each rule gave, the overlaps between rules, the seed and the checksums of the VISPR files
read. Labeling batches, runs, metrics, the leaderboard and exports can be scoped to one.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models

from core.jobs import Job


class DatasetVersion(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    recipe = models.JSONField(default=dict, help_text="The recipe as applied: rules, VISPR splits, seed, target name.")
    seed = models.BigIntegerField(default=0)
    vispr_splits = models.JSONField(default=list, help_text="The VISPR splits the rules drew from, e.g. ['test2017'].")
    rule_counts = models.JSONField(default=dict, help_text="rule name -> images it selected.")
    overlaps = models.JSONField(default=dict, help_text="'rule a & rule b' -> images selected by both.")
    checksums = models.JSONField(default=dict, help_text="VISPR file -> sha256, of the files the build read.")
    members = models.ManyToManyField("annotations.Image", related_name="dataset_versions", blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "annotations"
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.name


class DatasetBuild(Job):
    """Build one dataset version from a recipe, on the job base (core/jobs.py)."""

    name = models.SlugField(max_length=100, help_text="The dataset version this build creates.")
    recipe = models.JSONField(default=dict)
    seed = models.BigIntegerField(default=0)
    version = models.OneToOneField(DatasetVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="build")

    class Meta:
        app_label = "annotations"
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"dataset build #{self.pk} {self.name} ({self.status})"
