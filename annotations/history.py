"""Autosave history, coalesced: one simple_history row per burst of draft saves, not one per save.

The labeling page saves the working copy every few seconds while a reviewer types; a full history row
per save (answers, rationales, note) grew the history table by megabytes per labeling. A save by the
same user within CPRT_HISTORY_COALESCE_S of the labeling's latest history row, changing neither status
nor flag, rewrites that row in place (its date moves to now, so a burst is saves with gaps shorter
than the window). Status and flag changes, other users' saves and saves after a pause get a new row.
"""
from __future__ import annotations

from django.conf import settings
from django.utils import timezone


_history_models: dict = {}


def _history_model(model):
    # simple_history's manager descriptor is costly to build; the historical model never changes.
    if model not in _history_models:
        _history_models[model] = model.history.model
    return _history_models[model]


def save_with_coalesced_history(instance, user) -> None:
    """Save `instance` (a Labeling: status and flag changes always get their own row), coalescing its history row."""
    window = settings.CPRT_HISTORY_COALESCE_S
    history = _history_model(type(instance))
    latest = None
    if window > 0 and instance.pk:
        latest = (
            history.objects.filter(id=instance.pk)
            .order_by("-history_id")
            .values("history_id", "history_type", "history_user_id", "history_date", "status", "flag")
            .first()
        )
    now = timezone.now()
    if (
        latest is None
        or latest["history_type"] != "~"
        or latest["history_user_id"] != getattr(user, "pk", None)
        or (now - latest["history_date"]).total_seconds() > window
        or latest["status"] != instance.status
        or latest["flag"] != instance.flag
    ):
        instance.save()
        return
    instance.skip_history_when_saving = True
    try:
        instance.save()
    finally:
        del instance.skip_history_when_saving
    tracked = {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}
    history.objects.filter(history_id=latest["history_id"]).update(history_date=now, **tracked)
