"""Launches happen once: a replayed POST gets the job of the first one, never a second job.

A launch costs money (every job pays a provider or a worker's hours), so the same request sent twice
(a double click, a browser that resends a form, an API client that retries after a timeout) must not
launch twice. One decorator per kind of view:

- pages: `@once_per_submission` on the view; the form includes `core/_submission_token.html`, a hidden
  one-time token made when the form is rendered. The first POST with a token that ends in a redirect
  (the job's page) keeps that redirect; every later POST with the token is sent to the same page.
  A POST without a token is refused with a 400 and launches nothing (every launch page: runs,
  exports, SFT exports, imports, dataset builds, anonymizations), since a script that posts the page
  form would otherwise launch once per post; scripts use the API (`POST /api/runs/`, `/api/exports/`
  ..., with `Idempotency-Key`).
- API: `@once_per_key` on the `post` method of an `ApiView`; the client may send an `Idempotency-Key`
  header (1 to 128 visible ASCII characters). The first 2xx answer is kept (status and body); a replay
  with the same body gets it again (`Idempotent-Replayed: true`), with another body a 422.

Keys are per user and endpoint (the URL name), kept `KEEP` (24 h). Only a launch that succeeded is
kept: a refused request (400) keeps nothing, so the same token or key can be sent again, corrected.

Why it holds under concurrency: the key's row is inserted first, under a unique constraint, in the
same transaction as the job. Of several concurrent requests exactly one inserts it; the others wait
on that insert (PostgreSQL: the unique index; SQLite: the one writer's lock, transactions are
IMMEDIATE) until the first commits, then find its row, which already holds the answer. Had the first
failed, its row is gone with its transaction, and the next request launches.
"""
from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta
from functools import wraps

from django.contrib import messages
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.http import HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.utils import timezone
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from .models import IdempotencyKey

KEEP = timedelta(hours=24)
HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
KEY_PATTERN = re.compile(r"[!-~]{1,128}")  # visible ASCII: a UUID, a hash, a client's own id
SUBMISSION_FIELD = "submission_token"
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,128}")


def purge_expired() -> int:
    """Delete keys older than KEEP; returns how many."""
    return IdempotencyKey.objects.filter(created_at__lt=timezone.now() - KEEP).delete()[0]


def _scope(request) -> str:
    match = getattr(request, "resolver_match", None)
    return match.view_name if match is not None else request.path


def _once(request, key: str, fingerprint: str, run, keep, replay):
    """Run `run()` unless (user, endpoint, key) was done before; `keep(response)` -> what to store,
    or None to store nothing; `replay(row)` -> the answer to a repeat."""
    purge_expired()
    with transaction.atomic():
        try:
            with transaction.atomic():
                row = IdempotencyKey.objects.create(user=request.user, scope=_scope(request), key=key, fingerprint=fingerprint)
        except IntegrityError:
            return replay(IdempotencyKey.objects.get(user=request.user, scope=_scope(request), key=key))
        response = run()
        kept = keep(response)
        if kept is None:
            row.delete()
        else:
            row.status_code, row.response = response.status_code, kept
            row.save(update_fields=["status_code", "response"])
        return response


MISSING_TOKEN = ("This form was sent without its submission token (the hidden field the page adds): nothing was launched. "
                 "Reload the page and submit the form again; a script uses the API (docs/api.md) with an Idempotency-Key.")


def once_per_submission(view):
    """For a page view that launches a job and redirects to it. Put it under the role and method checks.
    A POST without the form's token is refused (400), not launched; a GET passes through."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        token = request.POST.get(SUBMISSION_FIELD)
        if token is None:
            return HttpResponseBadRequest(MISSING_TOKEN, content_type="text/plain; charset=utf-8")
        if not TOKEN_PATTERN.fullmatch(token):
            return HttpResponseBadRequest("The form's submission token is malformed; reload the page and submit the form again. "
                                          "Nothing was launched.", content_type="text/plain; charset=utf-8")

        def replay(row: IdempotencyKey):
            messages.info(request, "This form had already been submitted: here is what it launched (nothing was launched again). "
                                   "Open the form again to launch another.")
            return HttpResponseRedirect(row.response)

        return _once(request, token, "", lambda: view(request, *args, **kwargs),
                     keep=lambda response: response["Location"] if response.status_code in (302, 303) else None,
                     replay=replay)

    return wrapper


def body_fingerprint(data) -> str:
    """SHA-256 of a parsed JSON body, independent of key order and spacing."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":"), cls=DjangoJSONEncoder).encode()).hexdigest()


def once_per_key(method):
    """For the `post` of an ApiView that launches a job. The schema documents the header and the 422
    (core.api.ApiSchema reads the `idempotent` mark)."""

    @wraps(method)
    def wrapper(self, request, *args, **kwargs):
        key = request.headers.get(HEADER)
        if key is None:
            return method(self, request, *args, **kwargs)
        if not KEY_PATTERN.fullmatch(key):
            return Response({"detail": f"The {HEADER} header must be 1 to 128 visible ASCII characters (no spaces); nothing was launched."},
                            status=status.HTTP_400_BAD_REQUEST)
        fingerprint = body_fingerprint(request.data)  # a body that is not JSON is refused here, before anything is stored

        def replay(row: IdempotencyKey):
            if row.fingerprint != fingerprint:
                return Response({"detail": f"This {HEADER} was already used with a different request body; nothing was launched. "
                                           "Send a new key for a new request."}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
            return HttpResponse(row.response, status=row.status_code, content_type="application/json",
                                headers={REPLAYED_HEADER: "true"})

        def keep(response):
            return JSONRenderer().render(response.data).decode() if 200 <= response.status_code < 300 else None

        return _once(request, key, fingerprint, lambda: method(self, request, *args, **kwargs), keep=keep, replay=replay)

    wrapper.idempotent = True  # type: ignore[attr-defined]
    return wrapper
