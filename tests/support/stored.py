"""The stored state of every model, for tests that a refusal changed nothing: `stored_data()` is the row
count and a hash of every row of every model (and, for imports, the stored image files)."""
from __future__ import annotations

import hashlib
from pathlib import Path

from django.apps import apps
from django.conf import settings as django_settings

# Request bookkeeping, not data: a session or a login-attempt log may change on any request.
BOOKKEEPING = {"sessions.Session", "axes.AccessAttempt", "axes.AccessAttemptExpiration", "axes.AccessFailureLog", "axes.AccessLog"}


def stored_data(with_files: bool = False) -> dict:
    """Row count and a hash of all rows, per model (ordered by pk); with_files: the stored image files too."""
    state = {}
    for model in apps.get_models(include_auto_created=True):
        if model._meta.proxy or model._meta.label in BOOKKEEPING:
            continue
        rows = list(model._base_manager.order_by("pk").values_list())
        state[model._meta.label] = (len(rows), hashlib.sha256(repr(rows).encode()).hexdigest())
    if with_files:
        root = Path(django_settings.PRIVATE_IMAGE_ROOT)
        state["stored files"] = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    return state


def changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
