"""Its pages (admins only, like every run page): the leaderboard of runs on one comparison set, and a
run's figures as HTML, `?format=json`, or `?format=jsonl&download=predictions` (the predictions the
figures are computed from)."""
from __future__ import annotations

import json

from django.http import Http404, HttpResponseBadRequest, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from core.roles import ROLE_ADMIN, require_role
from inference import benchmarks
from inference.access import get_run_for_admin

from . import report
from .kind import VisprAttributesKind

FORMATS = ("html", "json", "jsonl")


def _run_of_kind(user, run_id: int):
    run = get_run_for_admin(user, run_id)
    if run.task != VisprAttributesKind.key:
        raise Http404("No such VISPR attribute run.")
    return run


@require_role(ROLE_ADMIN)
@require_GET
def leaderboard(request):
    board = report.leaderboard(VisprAttributesKind.key, request.GET.get("set", ""))
    return render(request, "vispr_attributes/leaderboard.html", {
        "board": board, "status": benchmarks.get(VisprAttributesKind.key).data_status(), "kind": VisprAttributesKind,
    })


@require_role(ROLE_ADMIN)
@require_GET
def figures(request, run_id: int):
    run = _run_of_kind(request.user, run_id)
    fmt, download = request.GET.get("format", "html"), request.GET.get("download", "")
    if fmt not in FORMATS:
        return HttpResponseBadRequest(f"Unknown format {fmt[:40]!r}: use html, json, or jsonl with download=predictions.",
                                      content_type="text/plain; charset=utf-8")
    if fmt == "jsonl" or download:
        if (fmt, download) != ("jsonl", "predictions"):
            return HttpResponseBadRequest("The predictions download is ?format=jsonl&download=predictions.",
                                          content_type="text/plain; charset=utf-8")
        lines = (json.dumps(line, ensure_ascii=False) + "\n" for line in report.prediction_lines(run))
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-vispr-attribute-predictions.jsonl"'
        return response
    figures = report.report(run)
    if fmt == "json":
        return JsonResponse(figures, json_dumps_params={"ensure_ascii": False})
    return render(request, "vispr_attributes/figures.html", {"run": run, "f": figures})
