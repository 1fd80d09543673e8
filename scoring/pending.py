"""The answer of a page whose figures a job is computing for the first time (scoring.services.cache.Pending).

A scoring page at scale does not compute figures it has never stored inside the request (issue 29): the
cache stores a placeholder, sends a refresh job and raises Pending, and this middleware answers for the
view, with 202 Accepted and Retry-After (as GitHub's statistics API answers while it computes): a person
gets a page that says what is being computed and reloads itself every RETRY_S seconds; the API and the
pages' CSV/JSON downloads get a JSON body (`"updating": true`, `"pending"`: the keys being computed),
never figures, so a client retries until it gets 200.
"""
from __future__ import annotations

from django.http import JsonResponse
from django.shortcuts import render

from .services.cache import Pending

RETRY_S = 5
KINDS = {  # the first part of a cache key -> what it holds, for the page
    "run-metrics": "a run's metrics", "run-page": "a run's charts", "sensitivity": "a run's weight-set sensitivity",
    "leaderboard": "the leaderboard's ranking", "agreement": "the agreement study", "disagreements": "the disagreement queue",
    "paired": "the paired comparison", "binary-view": "a run's binary view",
}


def wants_data(request) -> bool:
    return request.path.startswith("/api/") or request.GET.get("format") in ("csv", "json")


def describe(keys: list[str]) -> list[str]:
    return sorted({KINDS.get(key.split(":", 1)[0], key.split(":", 1)[0]) for key in keys})


class PendingMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, Pending):
            return None
        what = describe(exception.keys)
        detail = f"Being computed by a worker: {', '.join(what)}. Nothing was computed in this request; retry in a few seconds."
        if wants_data(request):
            response = JsonResponse({"detail": detail, "updating": True, "pending": exception.keys}, status=202)
        else:
            response = render(request, "scoring/pending.html", {"what": what, "retry_s": RETRY_S}, status=202)
        response["Retry-After"] = str(RETRY_S)
        response["Cache-Control"] = "private, no-store"
        return response
