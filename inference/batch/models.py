"""Batch-mode bookkeeping: the provider batches of a run, and one ledger row per request.

`ProviderBatch` is one batch at the provider (one uploaded file or one inline list). Its ingest is
claimed with a lease (`core.jobs.Lease` on `ingest_owner` / `ingest_expires_at`), so that two
pollers, a redelivered task or a restarted worker never ingest the same output twice; a claim whose
worker died expires after CPRT_BATCH_INGEST_STALE_S and may be taken over. `BatchRequest` is one (run, item, stage)
request: it moves submitted -> done | failed in the same transaction as the result it produces,
from the batch it was last submitted in only. The RunResult unique constraint is the last guard.
"""
from __future__ import annotations

from django.db import models

from core.secrets import ScrubbedJSONField, ScrubbedTextField


class ProviderBatch(models.Model):
    STAGES = [("judge", "judge"), ("stage1", "stage 1"), ("stage2", "stage 2")]
    # Our view of the provider's state: "building" until the provider accepted it.
    BUILDING, ACTIVE, ENDED = "building", "active", "ended"

    run = models.ForeignKey("inference.Run", on_delete=models.CASCADE, related_name="batches")
    stage = models.CharField(max_length=8, choices=STAGES)
    round = models.PositiveSmallIntegerField(default=0, help_text="0: first submission; 1+: follow-up batches of failed requests.")
    part = models.PositiveSmallIntegerField(default=0, help_text="Index of this file among the round's parts (provider per-file limits).")
    phase = models.CharField(max_length=8, default=BUILDING, db_index=True)
    provider_batch_id = models.CharField(max_length=200, blank=True)
    input_file_id = models.CharField(max_length=200, blank=True)
    output_file_id = models.CharField(max_length=200, blank=True)
    error_file_id = models.CharField(max_length=200, blank=True)
    provider_state = models.CharField(max_length=40, blank=True, help_text="As the provider names it.")
    request_count = models.PositiveIntegerField(default=0)
    input_bytes = models.PositiveBigIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True, help_text="Counts the provider reports (total, completed, failed).")
    ingest_owner = models.CharField(max_length=200, blank=True, help_text="The poller holding the ingest lease; empty when none.")
    ingest_expires_at = models.DateTimeField(null=True, blank=True, help_text="When the ingest lease runs out (its worker died).")
    ingested_at = models.DateTimeField(null=True, blank=True)
    ingest_report = models.JSONField(default=dict, blank=True, help_text="Stored, failed and refused lines (with reasons).")
    submit_claimed_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="End of the provider's completion window.")
    polled_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    error = ScrubbedTextField(blank=True)  # never holds a configured secret (core.secrets)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "stage", "round", "part"]
        constraints = [models.UniqueConstraint(fields=["run", "stage", "round", "part"], name="one_provider_batch_per_part")]

    def __str__(self):
        return f"run {self.run_id} {self.stage} r{self.round} p{self.part} {self.provider_batch_id or '(unsent)'}"


class BatchRequest(models.Model):
    SUBMITTED, DONE, FAILED, ONLINE = "submitted", "done", "failed", "online"
    STATES = [(s, s) for s in (SUBMITTED, DONE, FAILED, ONLINE)]

    run = models.ForeignKey("inference.Run", on_delete=models.CASCADE, related_name="batch_requests")
    item_id = models.PositiveBigIntegerField(help_text="The run's item (its kind defines it; annotate, judge: the image id).")
    image = models.ForeignKey("annotations.Image", on_delete=models.CASCADE, related_name="+", null=True, blank=True,
                              help_text="The item's primary image (empty for items that are not CPRT images, as a benchmark's pairs or persons).")
    stage = models.CharField(max_length=8, choices=ProviderBatch.STAGES)
    batch = models.ForeignKey(ProviderBatch, on_delete=models.CASCADE, related_name="requests")
    state = models.CharField(max_length=10, choices=STATES, default=SUBMITTED)
    attempts = models.PositiveSmallIntegerField(default=1)
    error = ScrubbedTextField(blank=True)
    # A multi-stage kind's carry (annotate: stage 1's reply record and parsed answers), kept until the
    # next stage is back; the model's words, so scrubbed of configured secrets.
    reply = ScrubbedJSONField(default=dict, blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "item_id", "stage"], name="one_batch_request_per_item_stage")]
        indexes = [models.Index(fields=["batch", "state"]), models.Index(fields=["run", "stage", "state"])]
