"""Who has which role (Profile) and who did what (AuditEvent).

Both tables were created by the annotations app and keep their names (``db_table``); the move to
core changed only Django's state (migrations core.0001 and annotations.0004).
"""
from __future__ import annotations

from django.conf import settings
from django.db import models

from .secrets import ScrubbedJSONField


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
