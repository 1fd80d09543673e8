"""Who has which role (Profile) and who did what (AuditEvent).

Both tables were created by the annotations app and keep their names (``db_table``); the move to
core changed only Django's state (migrations core.0001 and annotations.0004).
"""
from __future__ import annotations

from django.conf import settings
from django.db import models

from .secrets import ScrubbedJSONField, ScrubbedTextField


class Profile(models.Model):
    """A reviewer account's role and preferences. Accounts without a profile have no access."""

    ROLES = [("reviewer", "reviewer"), ("adjudicator", "adjudicator"), ("admin", "admin")]

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    role = models.CharField(max_length=16, choices=ROLES, default="reviewer")
    blur_images_by_default = models.BooleanField(default=True)
    stay_after_submit = models.BooleanField(
        default=False, help_text="After submitting, stay on the image (showing others' labels) instead of opening the next one."
    )

    class Meta:
        db_table = "annotations_profile"  # created by annotations; moved here without copying data

    def __str__(self):
        return f"{self.user} ({self.role})"


class AuditEvent(models.Model):
    """Who did what, when: job launches, exports, imports, adjudications (label edits also have history rows)."""

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=64, db_index=True)
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    data = ScrubbedJSONField(default=dict, blank=True)  # never holds a configured secret (core.secrets)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        db_table = "annotations_auditevent"  # created by annotations; moved here without copying data

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target_type}#{self.target_id}"


class ProcessHeartbeat(models.Model):
    """The last sign of life of a background process, read by /readyz (core/health.py).

    A worker writes one row per queue it consumes (kind "worker", its node name) when it is ready and
    every CPRT_WORKER_HEARTBEAT_S after, and deletes them when it stops; beat's tick task writes the
    row of kind "beat". Kept in the database, so that it works on either broker and while Redis is down.
    """

    KINDS = [("worker", "worker"), ("beat", "beat")]

    kind = models.CharField(max_length=16, choices=KINDS)
    queue = models.CharField(max_length=64, blank=True)
    node = models.CharField(max_length=255)
    seen_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "queue", "node"], name="core_heartbeat_unique")]

    def __str__(self):
        return f"{self.kind} {self.queue} {self.node} {self.seen_at:%H:%M:%S}"
class IdempotencyKey(models.Model):
    """A launch request that has been carried out once (core.idempotency): its replays get its answer.

    One row per (user, scope, key): the unique constraint, not a check-then-insert, is what lets exactly
    one of several concurrent requests through. The row is written in the same transaction as the job
    it launched, so a committed row always holds the answer. Rows older than `core.idempotency.KEEP`
    are deleted and no longer protect.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    scope = models.CharField(max_length=200, help_text="The endpoint: its URL name (api:run-list, inference:run_new).")
    key = models.CharField(max_length=128, help_text="The Idempotency-Key header (API) or the form's one-time submission token (pages).")
    fingerprint = models.CharField(max_length=64, blank=True, help_text="SHA-256 of the request body (API), to refuse a key reused for another body.")
    status_code = models.PositiveSmallIntegerField(default=0)
    # Text, not JSON: PostgreSQL's jsonb would reorder the keys, and a replay answers the first body byte for byte.
    response = ScrubbedTextField(blank=True, help_text="The first answer: the API's JSON body as sent, or a page's redirect location.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "scope", "key"], name="idempotency_key_once_per_user_and_scope")]

    def __str__(self):
        return f"{self.user_id} {self.scope} {self.key[:16]}"
