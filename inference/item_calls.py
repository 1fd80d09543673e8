"""Asking the provider about one item of a run: retries with backoff, and what each failure means.

`process_image` never raises: it returns the item's outcome, or says why there is none yet (`Deferred`:
something that can pass), why the outcome may be the run's rather than the item's (`Rejected`), or that no
request of the run can succeed (`RunStop`). The chunk (inference.execution) decides what to do with each;
docs/background-jobs.md, "What a provider's answer means".
"""
from __future__ import annotations

import logging
import random
import threading
from dataclasses import dataclass

import kombu.exceptions
import redis.exceptions
from django.conf import settings
from django.db import InterfaceError as DatabaseInterfaceError
from django.db import OperationalError as DatabaseOperationalError

from annotations.images import mime_type
from annotations.models import Image
from core import metrics

from . import kinds
from .models import RunResult
from .providers import FatalProviderError, PermanentError, ProviderError, ProviderUnavailable, RetryableError
from .ratelimit import RateLimiter
from .results import Outcome, scrub_outcome

log = logging.getLogger("inference.execution")

# Errors of the infrastructure that pass when it is back: never an image's final outcome. OSError
# covers sockets (ConnectionError, TimeoutError); an unreadable image file is told apart (read first).
INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
    DatabaseOperationalError, DatabaseInterfaceError,
    kombu.exceptions.OperationalError, OSError,
)

# --- one item-----------------------------------------------------------------------------

class Stopped(Exception):
    """The run was cancelled while this request waited (rate limit or backoff)."""


class GaveUp(Exception):
    def __init__(self, last: ProviderError, attempts: list):
        super().__init__(str(last))
        self.last = last
        self.attempts = attempts


@dataclass
class Deferred:
    """No answer yet for this item, for a reason that can pass: the chunk tries it again later.
    `provider`: the provider failed it (5xx, 429, timeouts after every attempt), which counts towards
    pausing the run; else the infrastructure did (Redis, the database), which never pauses a run."""

    item: kinds.Item
    reason: str
    provider: bool = False


@dataclass
class Rejected:
    """A final error for this item that may be the run's (a plain 400, an unexpected exception): written
    once the provider answers another item; N in a row with no answer between pause the run instead."""

    outcome: Outcome


@dataclass
class RunStop:
    """An answer every request of the run would get (bad key, no such model, not the API): pause the run."""

    reason: str
    message: str


@dataclass
class Context:
    """Everything a worker thread needs; no ORM queries (threads never touch the database): the run's
    kind is bound and prepared in the main thread."""

    kind: kinds.Kind
    provider: object  # the run's provider and model (the first stage's)
    limiter: RateLimiter
    stop: threading.Event
    max_attempts: int
    stage_providers: dict | None = None  # stage -> provider, where the kind sends a stage to another model

    def provider_for(self, stage: str):
        return (self.stage_providers or {}).get(stage, self.provider)


def _read_image(file_name: str) -> tuple[bytes, str]:
    if not file_name:
        raise ValueError("This image has no anonymized variant under the run's setting (deleted since the launch?).")
    storage = Image._meta.get_field("file").storage
    with storage.open(file_name, "rb") as fh:
        data = fh.read()
    return data, mime_type(file_name)


def _call(ctx: Context, request, attempts: list):
    """One provider call with retries: backoff with jitter, or exactly Retry-After when the server says."""
    name = getattr(ctx.provider, "name", "") or "unknown"  # one provider per run (its stages may use other models of it)
    for attempt in range(1, ctx.max_attempts + 1):
        if not ctx.limiter.acquire(ctx.stop):
            raise Stopped()
        try:
            reply = request()
        except RetryableError as exc:
            metrics.provider_call(name, "retryable_error")
            metrics.provider_error(name, "rate_limit" if exc.status == 429 else "timeout" if exc.status is None else "server")
            attempts.append({"attempt": attempt, "error": str(exc), "status": exc.status, "retry_after": exc.retry_after, "body": exc.raw})
            if attempt == ctx.max_attempts:
                raise GaveUp(exc, attempts) from None
            metrics.provider_retry(name)
            if exc.retry_after is not None:
                ctx.limiter.hold(exc.retry_after)
                delay = exc.retry_after
            else:
                delay = min(settings.CPRT_PROVIDER_BACKOFF_MAX_S, settings.CPRT_PROVIDER_BACKOFF_S * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
            if ctx.stop.wait(delay):
                raise Stopped() from None
        except ProviderError:
            metrics.provider_call(name, "error")
            metrics.provider_error(name, "client")
            raise
        else:
            metrics.provider_call(name, "ok")
            return reply
    raise AssertionError("unreachable")  # pragma: no cover


def process_image(ctx: Context, item: kinds.Item) -> Outcome | Deferred | Rejected | RunStop | None:
    """Ask the model about one item, stage after stage as its kind says; never raises. Returns None
    when the run was cancelled before an answer came back, a `Deferred` when an error that can pass
    (see INFRASTRUCTURE_ERRORS, or a provider still failing with retryable errors after every attempt)
    kept it from an answer, a `RunStop` when no request of the run can succeed, a `Rejected` for a
    final error that may be the run's own (see Streak), else the final outcome. Every text in the
    outcome is scrubbed of configured secrets (a model may echo one)."""
    attempts: list = []
    out = Outcome(item_id=item.item_id, image_id=item.image_id, outcome=RunResult.OUTCOME_ERROR)
    try:
        images: tuple = tuple(_read_image(name) for name in item.files)
    except OSError as exc:  # the file itself: final
        out.error = f"image file unreadable: {exc}"
        return scrub_outcome(out)
    except Exception as exc:  # noqa: BLE001 - one bad image must not take the chunk down
        out.error = f"{type(exc).__name__}: {exc}"
        return scrub_outcome(out)
    try:
        carry = None
        for index, stage in enumerate(ctx.kind.stages):
            if index == 0:
                request = ctx.kind.request(stage, images, None, item)
            else:
                request = ctx.kind.request(stage, (), carry)
            provider = ctx.provider_for(stage)
            reply = _call(ctx, lambda: provider.ask(request.system, request.user, request.images, request.schema, request.schema_name), attempts)
            carry = ctx.kind.apply(stage, out, reply, carry)
            if carry is None:
                break
    except Stopped:
        return None
    except GaveUp as exc:
        return Deferred(item, f"gave up after {len(exc.attempts)} attempts: {exc.last}", provider=True)
    except FatalProviderError as exc:
        return RunStop(exc.reason, str(exc))
    except ProviderUnavailable as exc:
        return RunStop("unavailable", str(exc))
    except ProviderError as exc:
        out.outcome, out.error = RunResult.OUTCOME_ERROR, str(exc)
        out.raw["error"] = exc.raw
        if not (isinstance(exc, PermanentError) and exc.item_specific):
            return Rejected(_with_retries(out, attempts))
    except INFRASTRUCTURE_ERRORS as exc:
        log.warning("run item %s deferred: %s: %s", item.item_id, type(exc).__name__, exc)
        return Deferred(item, f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # noqa: BLE001 - one bad image must not take the chunk down
        log.exception("run item %s failed", item.item_id)
        out.outcome, out.error = RunResult.OUTCOME_ERROR, f"{type(exc).__name__}: {exc}"
        return Rejected(_with_retries(out, attempts))
    return _with_retries(out, attempts)


def _with_retries(out: Outcome, attempts: list) -> Outcome:
    if attempts:
        out.raw["retries"] = attempts
    return scrub_outcome(out)
