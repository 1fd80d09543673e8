"""The computed-metrics cache: a stored result per key, recomputed when its fingerprint changes.

The scoring pages' numbers come from scoring.metrics / scoring.agreement; the services read the ORM
(mostly through scoring.queries), compute, and keep the result here with a `spec` saying how to
compute it again.

[decision] A stale entry whose last computation took longer than CPRT_METRICS_INLINE_S is not
recomputed inside the request: the page shows the stored figures, says they are updating (Django
messages; `"updating": true` in the JSON meta and in the API's answers, `freshness`), and a job (`scoring.refresh_cached`, on commit)
recomputes them. One job per entry at a time: the request that sends it takes the entry's lease
(`refresh_owner` = "queued"), the worker takes it over with its own (core.jobs.Lease), and a lease
that expired (CPRT_METRICS_REFRESH_STALE_S) may be taken again. A computation that was quick, or an
entry computed for the first time, runs inline as before.
"""
from __future__ import annotations

import contextvars
import math
import time
import numpy as np
from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.core.signals import request_started
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from core.dispatch import send_on_commit
from core.jobs import Heartbeat, Lease

from ..models import ComputedMetrics

QUEUED = "queued"
# spec["kind"] -> the function(spec) that recomputes an entry of that kind (through its service).
REFRESHERS = {
    "run_metrics": "scoring.services.run_metrics.refresh_entry",
    "run_page": "scoring.services.run_page.refresh_entry",
    "leaderboard": "scoring.services.leaderboard.refresh_entry",
    "agreement": "scoring.services.agreement.refresh_entry",
    "disagreements": "scoring.services.disagreements.refresh_entry",
    "paired": "scoring.services.comparison.refresh_entry",
}
# Set while a refresh job computes: everything is computed inline then.
_inline = contextvars.ContextVar("scoring_cache_inline", default=False)
# Stale entries served in this request or task (key -> computed_at), for the page to say so.
_served_stale: contextvars.ContextVar[dict | None] = contextvars.ContextVar("scoring_cache_stale", default=None)


def jsonable(value):
    """numpy scalars and arrays to Python; NaN and infinities to None (PostgreSQL's jsonb refuses NaN)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def start_collecting(**_) -> None:
    """Begin recording the stale entries served (at the start of every request: request_started)."""
    _served_stale.set({})


request_started.connect(start_collecting, dispatch_uid="scoring.cache.start_collecting")


def served_stale() -> dict:
    """key -> computed_at of the stale entries served in this request."""
    return dict(_served_stale.get() or {})


def freshness(keys) -> dict[str, dict]:
    """key -> {"updating": whether this request served the entry's stored figures while a job recomputes
    them, "computed_at": when the figures served were computed} (for the API; one query)."""
    keys = list(keys)
    stale = served_stale()
    stamps = dict(ComputedMetrics.objects.filter(key__in=keys).values_list("key", "computed_at"))
    return {key: {"updating": key in stale, "computed_at": stale.get(key, stamps.get(key))} for key in keys}


def in_background(entry: ComputedMetrics | None) -> bool:
    """Whether a stale `entry` is served as it is while a job recomputes it."""
    return entry is not None and bool(entry.spec) and not _inline.get() and entry.seconds > settings.CPRT_METRICS_INLINE_S


def serve_stale(entry: ComputedMetrics) -> dict:
    """Record that the stale entry is served, and have a job recompute it (once)."""
    seen = _served_stale.get()
    if seen is not None:
        seen[entry.key] = entry.computed_at
    request_refresh(entry.key)
    return entry.data


def request_refresh(key: str) -> bool:
    """Send one refresh job for `key` unless one is queued or working (its lease alive)."""
    lease = Lease(ComputedMetrics.objects.filter(key=key), settings.CPRT_METRICS_REFRESH_STALE_S, owner=QUEUED,
                  owner_field="refresh_owner", expiry_field="refresh_expires_at")
    # Free, or its holder's lease expired; a queued refresh holds it too (unlike Lease.claim's own-owner rule).
    if not lease.claim(where=~Q(refresh_owner=QUEUED) | Q(refresh_expires_at__lt=timezone.now())):
        return False  # a refresh is queued or running (or this row is gone)
    send_on_commit("scoring.refresh_cached", [key])
    return True


def refresh(key: str) -> dict:
    """The job: recompute the entry `key` from its spec, inline; nothing when another job holds it."""
    rows = ComputedMetrics.objects.filter(key=key)
    lease = Lease(rows, settings.CPRT_METRICS_REFRESH_STALE_S, owner_field="refresh_owner", expiry_field="refresh_expires_at")
    taken = rows.filter(Q(refresh_owner=QUEUED) | lease.free_condition()).update(**lease.holding())
    entry = rows.only("spec").first()
    if not taken or entry is None:
        return {"key": key, "refreshed": False}
    token = _inline.set(True)
    try:
        with Heartbeat(lease.renew, every=max(1.0, settings.CPRT_METRICS_REFRESH_STALE_S / 4), name="metrics-refresh"):
            import_string(REFRESHERS[entry.spec["kind"]])(entry.spec)
    except ObjectDoesNotExist:  # the run or profile it was computed for is gone: so is the entry
        rows.delete()
    finally:
        _inline.reset(token)
        lease.release()
    return {"key": key, "refreshed": True}


def cached(key: str, fingerprint: str, compute, spec: dict | None = None) -> dict:
    """The stored result for `key` if its fingerprint matches; else compute, store and return it, or,
    for a slow computation with a spec, the stored result while a job recomputes it."""
    entry = ComputedMetrics.objects.filter(key=key).only("key", "fingerprint", "data", "seconds", "spec", "computed_at").first()
    if entry is not None and entry.fingerprint == fingerprint:
        return entry.data
    if in_background(entry):
        return serve_stale(entry)
    started = time.perf_counter()
    data = jsonable(compute())
    ComputedMetrics.objects.update_or_create(
        key=key, defaults={"fingerprint": fingerprint, "data": data, "seconds": time.perf_counter() - started, "spec": spec or {}}
    )
    return data
