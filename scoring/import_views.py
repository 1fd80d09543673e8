"""Imports from the page (admins): start a VISPR folder or CPRT-Bench file import on the server as a job
(scoring/imports.py), follow its progress, cancel or resume it."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from core import jobviews
from core.idempotency import once_per_submission
from core.roles import ROLE_ADMIN, require_role, role_of

from . import cprt_bench, imports
from .models import ImportJob

IMPORT_CARD = jobviews.JobCard(
    element_id="import-progress", progress_url="scoring:import_progress", cancel_url="scoring:import_cancel",
    resume_url="scoring:import_resume", page_url="scoring:import", unit="files read",
    resume_label="Run it again", details="scoring/_import_result.html",
)
VISPR_SPLITS = [("test2017", "test2017 → test"), ("val2017", "val2017 → train"), ("train2017", "train2017 → train")]


class ImportForm(forms.Form):
    kind = forms.ChoiceField(choices=ImportJob.KINDS, initial=ImportJob.KIND_VISPR, widget=forms.RadioSelect,
                             error_messages={"required": "Choose what to import.", "invalid_choice": "Choose a VISPR folder or a CPRT-Bench file."})
    path = forms.CharField(max_length=500, label="Path under the import folder",
                           error_messages={"required": "Give the path of the folder or file under the import folder."})
    vispr_splits = forms.MultipleChoiceField(choices=VISPR_SPLITS, required=False, widget=forms.CheckboxSelectMultiple,
                                             label="VISPR splits", help_text="None ticked: every split present except train2017.",
                                             error_messages={"invalid_choice": "Unknown VISPR split %(value)s: choose among the three."})
    split = forms.ChoiceField(choices=[(s, s) for s in cprt_bench.SPLITS], initial="test", label="CPRT-Bench split",
                              help_text="The split of the images a CPRT-Bench file creates.",
                              error_messages={"invalid_choice": "Unknown split %(value)s: choose test or train."})

    def clean(self):
        data = super().clean()
        if "kind" in data and "path" in data:
            try:
                imports.resolve_path(data["path"], data["kind"])
            except imports.PathRefused as exc:
                self.add_error("path", str(exc))
        return data

    def options(self) -> dict:
        data = self.cleaned_data
        if data["kind"] == ImportJob.KIND_VISPR:
            return {"vispr_splits": data["vispr_splits"]}
        return {"split": data["split"]}


def get_import_for_admin(user, job_id: int) -> ImportJob:
    if role_of(user) != ROLE_ADMIN:
        raise Http404("No such import.")
    try:
        return ImportJob.objects.select_related("created_by").get(pk=job_id)
    except ImportJob.DoesNotExist:
        raise Http404("No such import.") from None


@require_role(ROLE_ADMIN)
@require_http_methods(["GET", "POST"])
@once_per_submission
def import_list(request):
    form = ImportForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            job = imports.start_import(request.user, form.cleaned_data["kind"], form.cleaned_data["path"], form.options())
        except imports.PathRefused as exc:  # changed between the form's check and now
            form.add_error("path", str(exc))
        else:
            messages.success(request, f"Import #{job.pk} queued; a worker runs it.")
            return redirect("scoring:import", job_id=job.pk)
    page = Paginator(ImportJob.objects.select_related("created_by"), 25).get_page(request.GET.get("page"))
    context = {"form": form, "page": page, "root": imports.import_root(), "candidates": imports.candidates()}
    return render(request, "scoring/imports.html", context, status=400 if form.is_bound else 200)


@require_role(ROLE_ADMIN)
@require_GET
def import_detail(request, job_id: int):
    job = get_import_for_admin(request.user, job_id)
    return render(request, "scoring/import_detail.html", jobviews.card_context(IMPORT_CARD, job, imports.can_resume(job)))


import_progress = require_role(ROLE_ADMIN)(jobviews.progress_view(IMPORT_CARD, get_import_for_admin, imports.can_resume))


import_cancel = require_role(ROLE_ADMIN)(jobviews.action_view(
    IMPORT_CARD, get_import_for_admin, imports.cancel_import, can_resume=imports.can_resume,
    done="Import #{job.pk}: {result}; nothing is written (a running worker stops before it writes).",
    refused="Import #{job.pk} is {status}; there is nothing to cancel."))


import_resume = require_role(ROLE_ADMIN)(jobviews.action_view(
    IMPORT_CARD, get_import_for_admin, imports.resume_import, can_resume=imports.can_resume,
    done="Import #{job.pk} queued again; a worker runs it from the start.",
    refused="Import #{job.pk} is {status}; only a failed or cancelled import can be run again."))
