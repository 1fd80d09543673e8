"""SPY-Bench data: a benchmark set imported from the user's files, its items (one per benchmark item,
on an imported VISPR image) and their expanded rows (upstream gen_eval_file; a row is one item of a
`spy-bench` run), and results computed elsewhere, imported for comparison.

The tables keep the names they had when these models lived in the inference app (`Meta.db_table`,
inference_spy*): the move into this folder changed no row (migrations: this app's 0001_initial and
inference's 0018_spy_moves_out, both state only).
"""
from __future__ import annotations

import json

from django.conf import settings
from django.db import models

from core.secrets import ScrubbedJSONField


class SpySet(models.Model):
    name = models.CharField(max_length=200, unique=True)
    label2text = models.JSONField(help_text="label -> its text (label2text.json), as imported.")
    source = models.JSONField(default=dict, blank=True, help_text="The imported files (names, sha256) and what was skipped.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "inference_spyset"
        ordering = ["name"]

    def __str__(self):
        return self.name


class SpyItem(models.Model):
    spy_set = models.ForeignKey(SpySet, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField(help_text="Its place in the benchmark file's benchmark_list.")
    benchmark_id = models.CharField(max_length=100, help_text="Upstream's benchmark_id, as text (data keeps its JSON type).")
    label = models.CharField(max_length=64, db_index=True)
    image = models.ForeignKey("annotations.Image", on_delete=models.CASCADE, related_name="spy_items",
                              help_text="The VISPR test image its question_item.image_path names.")
    # Text, not JSON: PostgreSQL's jsonb reorders keys, and the order of other_labels is the order of
    # the distractor lines in the prompt.
    source = models.TextField(help_text="The benchmark item, verbatim (JSON text, key order kept).")

    @property
    def data(self) -> dict:
        """The benchmark item, with its keys in the file's order."""
        cached = self.__dict__.get("_data")
        if cached is None:
            cached = self.__dict__["_data"] = json.loads(self.source)
        return cached

    class Meta:
        db_table = "inference_spyitem"
        ordering = ["spy_set", "position"]
        constraints = [models.UniqueConstraint(fields=["spy_set", "benchmark_id"], name="one_spy_item_per_benchmark_id")]

    def __str__(self):
        return f"{self.spy_set} item {self.benchmark_id}"


class SpyRow(models.Model):
    """One expanded row of an item: an instruction (1 private, 0 not) without or within a scenario.
    Its id is the run item id of a `spy-bench` run; `index` is its place in upstream's expansion."""

    item = models.ForeignKey(SpyItem, on_delete=models.CASCADE, related_name="rows")
    index = models.PositiveSmallIntegerField()
    is_privacy = models.PositiveSmallIntegerField()
    scenario = models.CharField(max_length=100, blank=True, help_text="The scenario id; empty: no scenario.")
    scenario_is_privacy = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        db_table = "inference_spyrow"
        ordering = ["item", "index"]
        constraints = [models.UniqueConstraint(fields=["item", "index"], name="one_spy_row_per_item_index")]


class SpyImport(models.Model):
    """Evaluated rows computed elsewhere (upstream's format), shown beside our runs, marked imported."""

    name = models.CharField(max_length=200)
    spy_set = models.ForeignKey(SpySet, null=True, blank=True, on_delete=models.SET_NULL, related_name="imports")
    model_name = models.CharField(max_length=200)
    judge_model = models.CharField(max_length=200, blank=True)
    distractors = models.BooleanField(default=False)
    rows = ScrubbedJSONField(default=list, help_text="The evaluated rows, as imported.")
    report = models.JSONField(default=dict, help_text="Metrics, per label, per scenario and intervals (computed on import).")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "inference_spyimport"
        ordering = ["-created_at"]
