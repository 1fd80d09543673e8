"""Pages: the image list, the protected image bytes, and the reviewer's labeling workflow."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.core.paginator import Paginator
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.accounts import ThrottledPasswordChangeMixin
from core.files import protected_file_response
from core.roles import ROLES, STAFF_ROLES, require_role, role_of

from . import blind, taxonomy
from .services import editing, image_list, labeling_queue, page, profiles
from .services import image_history as histories
from .hooks import consensus_scores
from .images import mime_type
from .access import get_image_for_user, get_labeling_for_user
from .forms import ImageFilterForm, LabelingForm, PreferencesForm
from .models import Annotator, Labeling


@require_role(*ROLES)
@require_GET
def home(request):
    """The image list, filtered and searched (services/image_list.py), with each image's consensus level
    and score under the active profile where the blind rule lets the user see it (reviewers: only images
    whose labeling they have submitted)."""
    profile = consensus_scores().active_profile()
    staff = role_of(request.user) in STAFF_ROLES
    form = ImageFilterForm(request.GET, attribute_keys=taxonomy.active().keys, staff=staff)
    if not form.is_valid():
        return render(request, "annotations/home.html", {"form": form, "rows": [], "page": None, "profile": profile, "filtered": True},
                      status=400)
    f = form.cleaned_data
    images = image_list.filtered_images(request.user, f)
    page = Paginator(images, f["page_size"]).get_page(f.get("page") or 1)
    ids = [image.pk for image in page.object_list]
    visible = blind.consensus_visible_ids(request.user, ids)
    shown = ids if visible is None else [i for i in ids if i in visible]
    scores = consensus_scores().scores_for(profile, shown) if profile is not None and shown else {}
    # Where a tile leads: staff to the review page; a reviewer to their own labeling of it, if any.
    mine = {} if visible is None else dict(
        Labeling.objects.filter(annotator__user=request.user, image_id__in=ids).values_list("image_id", "pk"))
    rows = [{"image": image, "score": scores.get(image.id), "visible": image.id in shown, "labeling_id": mine.get(image.id)}
            for image in page.object_list]
    query = request.GET.copy()
    query.pop("page", None)
    filtered = any(v not in (None, "") for k, v in f.items() if k not in ("page", "page_size"))
    return render(request, "annotations/home.html", {"page": page, "rows": rows, "profile": profile, "form": form,
                                                     "query": query.urlencode(), "filtered": filtered})


@require_role(*ROLES)
@require_GET
def image_bytes(request, image_id: int):
    """Image bytes: authenticated, permission-checked, never cached, never with the original name."""
    image = get_image_for_user(request.user, image_id)
    if not image.file:
        raise Http404("This image has no stored file.")
    return protected_file_response(
        "images",
        image.file.name,
        content_type=mime_type(image.file.name),
        download_name=f"image-{image.pk}{_suffix(image.file.name)}",
    )


def _suffix(name: str) -> str:
    return ".png" if mime_type(name) == "image/png" else ".jpg"


# --- labeling --------------------------------------------------------------------------------------


@require_role(*ROLES)
@require_GET
def queue(request):
    """The reviewer's start page: progress, open drafts, recent submissions, the "next image" button."""
    annotator = Annotator.for_user(request.user)
    mine = Labeling.objects.filter(annotator=annotator).select_related("image")
    return render(
        request,
        "annotations/queue.html",
        {
            "progress": labeling_queue.progress(request.user),
            "drafts": mine.filter(status=Labeling.STATUS_DRAFT).order_by("created_at")[:50],
            "recent": mine.filter(status=Labeling.STATUS_SUBMITTED).order_by("-submitted_at")[:20],
            "skipped": mine.filter(status=Labeling.STATUS_SKIPPED).order_by("-updated_at")[:50],
            "undo_skip": _undo_skip(request),
            "k": labeling_queue.labelings_per_image(),
        },
    )


@require_role(*ROLES)
@require_POST
def next_image(request):
    """Resume the reviewer's open draft or claim a slot on an image that still needs labels."""
    return _claim_and_redirect(request)


@require_role(*ROLES)
@require_GET
def labeling_page(request, labeling_id: int):
    labeling = get_labeling_for_user(request.user, labeling_id)
    return _render_labeling(request, labeling)


@require_role(*ROLES)
@require_POST
def labeling_draft(request, labeling_id: int):
    """Autosave (fetch from static/js/labeling.js): JSON in, JSON out; 409 on a stale version."""
    labeling = get_labeling_for_user(request.user, labeling_id)
    form = LabelingForm(request.POST, taxonomy=taxonomy.active())
    if not form.is_valid():
        return JsonResponse({"ok": False, "error": " ".join(form.error_messages_list())}, status=400)
    try:
        labeling = editing.save_draft(labeling, request.user, **form.labeling_data())
    except editing.LabelingError as exc:
        return JsonResponse({"ok": False, "error": exc.message, "reload": _labeling_url(labeling)}, status=exc.status)
    answered = len(labeling.draft_values)
    return JsonResponse({"ok": True, "version": labeling.version, "answered": answered, "saved_at": labeling.updated_at.isoformat()})


@require_role(*ROLES)
@require_POST
def labeling_submit(request, labeling_id: int):
    labeling = get_labeling_for_user(request.user, labeling_id)
    form = LabelingForm(request.POST, taxonomy=taxonomy.active(), require_all=True)
    if not form.is_valid():
        return _render_labeling(request, labeling, form=form, errors=form.error_messages_list(), status=400)
    try:
        editing.submit(labeling, request.user, **form.labeling_data())
    except editing.StaleVersion as exc:
        return render(request, "annotations/conflict.html", {"labeling": labeling, "message": exc.message}, status=409)
    except editing.LabelingError as exc:
        return _render_labeling(request, labeling, form=form, errors=[exc.message], status=exc.status)
    if profiles.stay_after_submit(request.user):
        messages.success(request, f"Submitted your labels for image {labeling.image.vispr_id}. "
                                  "Other annotators' labels, where there are any, are now shown beside each question.")
        return redirect("annotations:labeling", labeling_id=labeling.pk)
    messages.success(request, f"Submitted your labels for image {labeling.image.vispr_id}; here is the next image. "
                              "Your submitted labelings (with the others' labels) are listed on the Label page.")
    return _claim_and_redirect(request)


@require_role(*ROLES)
@require_POST
def labeling_skip(request, labeling_id: int):
    labeling = get_labeling_for_user(request.user, labeling_id)
    try:
        editing.skip(labeling, request.user)
    except editing.LabelingError as exc:
        messages.error(request, exc.message)
        return redirect("annotations:labeling", labeling_id=labeling.pk)
    messages.info(request, f"Skipped image {labeling.image.vispr_id}.")
    request.session[UNDO_SKIP_KEY] = labeling.pk  # the next page offers "Undo skip" once
    return _claim_and_redirect(request)


@require_role(*ROLES)
@require_POST
def labeling_unskip(request, labeling_id: int):
    """Undo a skip (or reopen an image from the skipped list): the labeling becomes a draft again, answers kept."""
    labeling = get_labeling_for_user(request.user, labeling_id)
    request.session.pop(UNDO_SKIP_KEY, None)
    try:
        labeling = editing.unskip(labeling, request.user)
    except editing.LabelingError as exc:
        messages.error(request, exc.message)
        return redirect("annotations:queue")
    # Leave the draft claimed by the last "next image" for later: it stays in the drafts list.
    messages.info(request, f"Image {labeling.image.vispr_id} is back as your draft.")
    return redirect("annotations:labeling", labeling_id=labeling.pk)


UNDO_SKIP_KEY = "cprt_undo_skip"


def _undo_skip(request):
    """The labeling just skipped (shown once as an "Undo skip" button), or None."""
    labeling_id = request.session.pop(UNDO_SKIP_KEY, None)
    if labeling_id is None:
        return None
    return Labeling.objects.filter(pk=labeling_id, annotator__user=request.user, status=Labeling.STATUS_SKIPPED).select_related("image").first()


def _claim_and_redirect(request):
    labeling = labeling_queue.claim_next(request.user)
    if labeling is None:
        messages.info(request, "No image needs your labels right now.")
        return redirect("annotations:queue")
    return redirect("annotations:labeling", labeling_id=labeling.pk)


def _labeling_url(labeling) -> str:
    return reverse("annotations:labeling", kwargs={"labeling_id": labeling.pk})


def _render_labeling(request, labeling, form=None, errors=None, status=200):
    values = rationales = None
    note, flag = labeling.note, labeling.flag
    version = labeling.version
    if form is not None:
        values, rationales = form.posted_values()
        note, flag = form.data.get("note", note), form.data.get("flag", flag)
        # Keep the version the page was loaded with: a refused submit must not turn a stale page fresh.
        version = form.data.get("version", version)
    groups, info = page.page_rows(labeling, values, rationales)
    locked = editing.is_locked(labeling)
    context = {
        "labeling": labeling,
        "image": labeling.image,
        "groups": groups,
        "info": info,
        "locked": locked,
        "editable": not locked and labeling.status == Labeling.STATUS_DRAFT,
        "note": note,
        "flag": flag,
        "version": version,
        "flags": Labeling.FLAGS[1:],
        "errors": errors or [],
        "missing": form.missing if form is not None else [],
        "blur": profiles.blur_default(request.user),
        "stay_after_submit": profiles.stay_after_submit(request.user),
        "progress": labeling_queue.progress(request.user, fresh=False),
        "undo_skip": _undo_skip(request),
    }
    return render(request, "annotations/labeling.html", context, status=status)


@require_role(*STAFF_ROLES)
@require_GET
def image_history(request, image_id: int):
    """Every label change of an image (who, when, old -> new): adjudicators and admins only."""
    image = get_image_for_user(request.user, image_id)
    changes = Paginator(histories.label_history(image), 200).get_page(request.GET.get("page"))
    return render(
        request,
        "annotations/image_history.html",
        {"image": image, "changes": changes, "events": histories.labeling_events(image),
         "adjudications": histories.adjudication_history(image)},
    )


@require_role(*ROLES)
@require_http_methods(["GET", "POST"])
def preferences(request):
    profile = profiles.profile_for(request.user)
    form = PreferencesForm(request.POST if request.method == "POST" else None, instance=profile)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Preferences saved.")
        return redirect("annotations:preferences")
    return render(request, "annotations/preferences.html", {"form": form}, status=400 if form.errors else 200)


class _PasswordChange(ThrottledPasswordChangeMixin, auth_views.PasswordChangeView):
    template_name = "annotations/password_change.html"
    success_url = reverse_lazy("annotations:preferences")

    def form_valid(self, form):
        messages.success(self.request, "Password changed.")
        return super().form_valid(form)

    def form_invalid(self, form):
        response = super().form_invalid(form)  # a wrong current password counts as a failed login
        response.status_code = 400
        return response


password_change = require_role(*ROLES)(require_http_methods(["GET", "POST"])(_PasswordChange.as_view()))
