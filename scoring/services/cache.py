"""The computed-metrics cache: a stored result per key, recomputed when its fingerprint changes.

The scoring pages' numbers come from scoring.metrics / scoring.agreement; the services read the ORM
(mostly through scoring.queries), compute, and keep the result here with a `spec` saying how to
compute it again.

[decision] A stale entry whose last computation took longer than CPRT_METRICS_INLINE_S is not
recomputed inside the request: the page shows the stored figures, says they are updating (Django
messages; `"updating": true` in the JSON meta and in the API's answers, `freshness`), and a job (`scoring.refresh_cached`, on commit)
recomputes them. One job per entry at a time: the request that sends it takes the entry's lease
(`refresh_owner` = "queued"), the worker takes it over with its own (core.jobs.Lease), and a lease
that expired (CPRT_METRICS_REFRESH_STALE_S) may be taken again. A computation that was quick runs inline,
while the quick ones a request recomputes add up to at most CPRT_METRICS_INLINE_S (their last times): ten
runs' figures of about 0.4 s each made the first request after an adjudication take about 3.5 s at
30,000 images (bench/scale.py); past that budget they are served stale like slow ones.

[decision] An entry computed for the first time inside a web request runs inline only when the rows it
reads (`size`, an estimate the caller has for free or from one count) are at most
CPRT_METRICS_INLINE_ROWS. A larger one is not computed in the request: a placeholder entry
(fingerprint PENDING) is stored, a refresh job sent, and `Pending` raised; the page answers "being
computed" (scoring.pending.PendingMiddleware: 202 with Retry-After, a page that reloads itself or, for
the API and downloads, a JSON body without figures) until the job has stored the figures. Outside a request (a worker, a
command, a refresh job) everything is computed inline.
"""
from __future__ import annotations

import contextvars
import math
import time
import numpy as np
from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.core.signals import request_finished, request_started
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from core.dispatch import send_on_commit
from core.jobs import Heartbeat, Lease

from ..models import ComputedMetrics

QUEUED = "queued"
PENDING = "pending"  # the fingerprint of a placeholder entry whose first computation a job is doing
# spec["kind"] -> the function(spec) that recomputes an entry of that kind (through its service).
REFRESHERS = {
    "run_metrics": "scoring.services.run_metrics.refresh_entry",
    "run_page": "scoring.services.run_page.refresh_entry",
    "sensitivity": "scoring.services.run_metrics.refresh_sensitivity",
    "binary_view": "scoring.services.binary_view.refresh_entry",
    "leaderboard": "scoring.services.leaderboard.refresh_entry",
    "agreement": "scoring.services.agreement.refresh_entry",
    "disagreements": "scoring.services.disagreements.refresh_entry",
    "paired": "scoring.services.comparison.refresh_entry",
}
# Set while a refresh job computes: everything is computed inline then.
_inline = contextvars.ContextVar("scoring_cache_inline", default=False)
# Stale entries served in this request (key -> computed_at), for the page to say so; None outside a web
# request (from request_finished on), where first computations are never left to a job.
_served_stale: contextvars.ContextVar[dict | None] = contextvars.ContextVar("scoring_cache_stale", default=None)
# Seconds (their last computation times) of the stale entries this request recomputes inline, in a list so
# that in_background adds to it in place; None outside a web request.
_inline_spent: contextvars.ContextVar[list | None] = contextvars.ContextVar("scoring_cache_inline_spent", default=None)


class Pending(Exception):
    """Figures a page needs are being computed for the first time by a job (see the module's docstring)."""

    def __init__(self, keys):
        self.keys = sorted(keys)
        super().__init__(f"being computed by a job: {', '.join(self.keys)}")


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
    """Begin recording the stale entries served and the inline recomputations (at the start of every
    request: request_started)."""
    _served_stale.set({})
    _inline_spent.set([0.0])


def stop_collecting(**_) -> None:
    _served_stale.set(None)
    _inline_spent.set(None)


def in_request() -> bool:
    return _served_stale.get() is not None


request_started.connect(start_collecting, dispatch_uid="scoring.cache.start_collecting")
request_finished.connect(stop_collecting, dispatch_uid="scoring.cache.stop_collecting")


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
    """Whether a stale `entry` is served as it is while a job recomputes it (a placeholder: inside a
    request, Pending; elsewhere it is computed inline): when its last computation was slow, or when a
    request's inline recomputations would pass CPRT_METRICS_INLINE_S with it (see the module's docstring).
    An entry answered False for is counted as recomputed inline by the caller."""
    if entry is None or not entry.spec or _inline.get():
        return False
    if entry.fingerprint == PENDING:
        return in_request()
    if entry.seconds > settings.CPRT_METRICS_INLINE_S:
        return True
    spent = _inline_spent.get()
    if spent is None:  # outside a request: computed inline
        return False
    if spent[0] + entry.seconds > settings.CPRT_METRICS_INLINE_S:
        return True
    spent[0] += entry.seconds
    return False


def first_in_background(spec: dict | None, size) -> bool:
    """Whether an entry computed for the first time is left to a job: inside a web request, with a spec,
    when `size()` (the rows the computation reads) is above CPRT_METRICS_INLINE_ROWS."""
    return bool(spec) and in_request() and not _inline.get() and size is not None and size() > settings.CPRT_METRICS_INLINE_ROWS


def gather(*parts) -> list:
    """Call every part (a callable reading cached figures) and return their results; when some are being
    computed (Pending), the others still start theirs, and one Pending names them all, so that a page
    waits for its jobs once, not one after the other."""
    out, pending = [], []
    for part in parts:
        try:
            out.append(part())
        except Pending as exc:
            pending += exc.keys
            out.append(None)
    if pending:
        raise Pending(pending)
    return out


def start_pending(entries: dict[str, dict]) -> None:
    """Store a placeholder for each key (-> its spec) that has no entry, send one refresh job each, and
    raise Pending: the page says the figures are being computed."""
    for key, spec in entries.items():
        ComputedMetrics.objects.get_or_create(key=key, defaults={"fingerprint": PENDING, "data": {}, "spec": spec, "seconds": 0})
        request_refresh(key)
    raise Pending(entries)


def serve_stale(entry: ComputedMetrics) -> dict:
    """Record that the stale entry is served, and have a job recompute it (once); a placeholder has no
    figures to serve: Pending."""
    if entry.fingerprint == PENDING:
        request_refresh(entry.key)  # sent again only when the job holding it was lost (its lease expired)
        raise Pending([entry.key])
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
    """The job: recompute the entry `key` from its spec, inline; nothing when another job holds it. A refresher
    that answers True has stored part of the figures and is sent again, behind the jobs already queued."""
    rows = ComputedMetrics.objects.filter(key=key)
    lease = Lease(rows, settings.CPRT_METRICS_REFRESH_STALE_S, owner_field="refresh_owner", expiry_field="refresh_expires_at")
    taken = rows.filter(Q(refresh_owner=QUEUED) | lease.free_condition()).update(**lease.holding())
    entry = rows.only("spec").first()
    if not taken or entry is None:
        return {"key": key, "refreshed": False}
    token = _inline.set(True)
    again = False
    try:
        with Heartbeat(lease.renew, every=max(1.0, settings.CPRT_METRICS_REFRESH_STALE_S / 4), name="metrics-refresh"):
            again = bool(import_string(REFRESHERS[entry.spec["kind"]])(entry.spec))
    except ObjectDoesNotExist:  # the run or profile it was computed for is gone: so is the entry
        rows.delete()
    finally:
        _inline.reset(token)
        lease.release()
    if again:  # a refresher that stored part of the figures (run_metrics' point estimates): one more job, queued last
        request_refresh(key)
    return {"key": key, "refreshed": True, "again": again}


def cached(key: str, fingerprint: str, compute, spec: dict | None = None, size=None) -> dict:
    """The stored result for `key` if its fingerprint matches; else compute, store and return it, or,
    for a slow computation with a spec, the stored result while a job recomputes it. `size`: a callable
    giving the rows the computation reads, asked only when there is no entry yet (first_in_background)."""
    entry = ComputedMetrics.objects.filter(key=key).only("key", "fingerprint", "data", "seconds", "spec", "computed_at").first()
    if entry is not None and entry.fingerprint == fingerprint:
        return entry.data
    if in_background(entry):
        return serve_stale(entry)
    if entry is None and first_in_background(spec, size):
        start_pending({key: spec})
    started = time.perf_counter()
    data = jsonable(compute())
    ComputedMetrics.objects.update_or_create(
        key=key, defaults={"fingerprint": fingerprint, "data": data, "seconds": time.perf_counter() - started, "spec": spec or {}}
    )
    return data
