"""The pages' side of the job base: one progress card (`templates/_job_progress.html`) and one view
helper for its Cancel and Resume buttons, shared by runs, exports and face anonymization.

A kind of job describes how it shows with a `JobCard` (its URL names, the unit it counts, the
template of its own lines). Its polled progress view is `progress_view(card, fetch, can_resume)`, one
view for every kind (runs, exports, imports, dataset builds, face anonymization): fetch the job
through the kind's access helper, render the card. Its buttons' views are `action_view(card, fetch,
action, ...)` (or, where the card or the action depends on the job, a thin view: fetch the job, then
`act(...)`). The work (and its audit) is the service's cancel/resume function, called with the user
and the job.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from django.contrib import messages
from django.http import HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

PARTIAL = "_job_progress.html"


@dataclass(frozen=True)
class JobCard:
    """How one kind of job shows in the progress card. URL names take the job's pk as their one argument."""

    element_id: str  # the card's HTML id (htmx swaps it; journeys find it)
    progress_url: str  # polled while the job is active
    cancel_url: str
    resume_url: str
    page_url: str  # where a button answers a plain (non-htmx) POST
    unit: str  # what done / total count ("images")
    resume_label: str  # the Resume button's text
    details: str = ""  # the kind's own lines (counts, results), rendered inside the card
    done_field: str = "done"
    total_field: str = "total"


def card_context(card: JobCard, job, can_resume: bool, **extra: Any) -> dict:
    """The progress card's context: the job (also under `extra` names, e.g. run=run, for its details)."""
    return {
        "card": card, "job": job, "can_resume": can_resume,
        "done": getattr(job, card.done_field), "total": getattr(job, card.total_field), **extra,
    }


def progress(request, card: JobCard, job, can_resume: bool, *, refresh_when_over: bool = False, **extra: Any) -> HttpResponse:
    """The card alone (htmx polls it). `refresh_when_over`: once the job is over, an htmx poll reloads
    the whole page, whose other parts show what the job made."""
    response = render(request, PARTIAL, card_context(card, job, can_resume, **extra))
    if refresh_when_over and request.htmx and not job.is_active:
        response["HX-Refresh"] = "true"
    return response


def progress_view(card: JobCard, fetch: Callable[[Any, int], Any], can_resume: Callable[[Any], bool], *,
                  extra: Callable[[Any], dict] | None = None, refresh_when_over: bool = False,
                  card_for: Callable[[Any], JobCard] | None = None):
    """The progress view of one kind of job (GET; its URL's one argument is the job's pk): `fetch(user,
    pk)` is the kind's access helper (404 for a job the user may not see), `extra(job)` the names its
    details template reads beyond `job`, `card_for(job)` the card of one job where it varies (a run's
    unit is its kind's). The caller adds the kind's role check (`require_role`)."""

    @require_GET
    def view(request, **kwargs):
        (pk,) = kwargs.values()
        job = fetch(request.user, pk)
        return progress(request, card_for(job) if card_for else card, job, can_resume(job), refresh_when_over=refresh_when_over,
                        **(extra(job) if extra else {}))

    view.__doc__ = f"The progress card of one job ({card.element_id}), polled by htmx while the job is active."
    view.job_card = card  # type: ignore[attr-defined]  # which kind's card this view renders (tests/core/test_jobviews.py)
    return view


def act(request, card: JobCard, job, action: Callable[[Any, Any], Any], *, done: str, refused: str,
        can_resume: Callable[[Any], bool], **extra: Any) -> HttpResponse:
    """Answer a Cancel or Resume button: POST only; `action(user, job)` is the service's cancel or
    resume (it audits); None or False means refused. `done` and `refused` are the messages, formatted
    with `job`, the action's `result` and the `status` before it ("Run #{job.pk}: re-dispatched {result} images"). An htmx
    request gets the card back; a plain POST is redirected to the job's page."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    status = job.status
    result = action(request.user, job)
    if result is not None and result is not False:
        messages.info(request, done.format(job=job, result=result, status=status))
    else:
        messages.error(request, refused.format(job=job, result=result, status=status))
    if request.htmx:
        job.refresh_from_db()
        return render(request, PARTIAL, card_context(card, job, can_resume(job), **extra))
    return redirect(card.page_url, job.pk)


def action_view(card: JobCard, fetch: Callable[[Any, int], Any], action: Callable[[Any, Any], Any], *, done: str, refused: str,
                can_resume: Callable[[Any], bool]):
    """The view of one kind of job's Cancel or Resume button (POST; its URL's one argument is the job's pk):
    `fetch(user, pk)` the kind's access helper, then `act(...)` with the service's `action` and the
    messages. The caller adds the kind's role check (`require_role`)."""

    @require_POST
    def view(request, **kwargs):
        (pk,) = kwargs.values()
        return act(request, card, fetch(request.user, pk), action, done=done, refused=refused, can_resume=can_resume)

    view.__doc__ = f"{action.__name__} for one job ({card.element_id}), from its button."
    return view
