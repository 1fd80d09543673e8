"""Admin pages. Labels, labelings and adjudications are read-only here: they change only through the
labeling and adjudication services (history, audit, rescore); images change through audited actions."""
from django import forms
from django.contrib import admin
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.forms.models import model_to_dict
from django.shortcuts import render
from simple_history.admin import SimpleHistoryAdmin

from core.audit import audit
from core.paging import LargeTableAdmin

from . import label_version
from .models import Adjudication, Annotator, Attribute, Batch, Image, Label, Labeling, TaxonomyVersion


class ReadOnlyAdmin(LargeTableAdmin, admin.ModelAdmin):
    """Browse and search only: no add, change or delete, and (with simple_history) no revert, whose
    POST would otherwise save an old version without going through the services. Labels, labelings
    and adjudications are the largest tables (8.36M labels at 100,000 images): never counted whole."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def history_form_view(self, request, object_id, version_id, extra_context=None):
        if request.method != "GET":
            raise PermissionDenied("Read-only: change this through the workbench's pages, not the admin.")
        return super().history_form_view(request, object_id, version_id, extra_context)


class ReadOnlyHistoryAdmin(ReadOnlyAdmin, SimpleHistoryAdmin):
    pass


class AssignBatchForm(forms.Form):
    batch = forms.ModelChoiceField(Batch.objects.all(), required=False, empty_label="(no batch)")


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ("name", "show_model_suggestions", "created_at")
    list_filter = ("show_model_suggestions",)
    filter_horizontal = ("suggestion_annotators",)


@admin.register(Image)
class ImageAdmin(LargeTableAdmin, admin.ModelAdmin):
    list_display = ("vispr_id", "split", "batch", "unsuitable", "width", "height", "source", "published_level", "published_score")
    list_filter = ("split", "unsuitable", "batch", "source", "labelings__flag")
    # No list_editable: batch and suitability change through the audited actions below.
    search_fields = ("vispr_id", "sha256")
    readonly_fields = ("sha256", "width", "height", "file")
    # At 100,000 images (issues 29, 37): no COUNT of the whole table (LargeTableAdmin), and 50 rows a page.
    list_per_page = 50
    actions = ["mark_unsuitable", "mark_suitable", "assign_batch"]

    def save_model(self, request, obj, form, change):
        """The change form: saved, and audited field by field (old -> new)."""
        old = model_to_dict(Image.objects.get(pk=obj.pk), fields=form.changed_data) if change else {}
        super().save_model(request, obj, form, change)
        if change and "split" in form.changed_data:
            label_version.bump([label_version.ADJUDICATIONS])  # the pages read the labels of one split
        if form.changed_data:
            new = model_to_dict(obj, fields=form.changed_data)
            changes = {k: {"old": _plain(old.get(k)), "new": _plain(new.get(k))} for k in form.changed_data}
            audit(request.user, "image.change" if change else "image.create", obj, vispr_id=obj.vispr_id, changes=changes)

    @admin.action(description="Assign to a batch…")
    def assign_batch(self, request, queryset):
        """Put the selected images into one batch (or none): a confirmation page first."""
        form = AssignBatchForm(request.POST if "apply" in request.POST else None)
        if form.is_bound and form.is_valid():
            batch = form.cleaned_data["batch"]
            ids = list(queryset.values_list("pk", flat=True))
            Image.objects.filter(pk__in=ids).update(batch=batch)
            audit(request.user, "image.batch", batch, image_ids=ids, batch=batch.name if batch else None)
            self.message_user(request, f"{len(ids)} image(s) now in {f'batch {batch.name}' if batch else 'no batch'}.")
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Assign images to a batch",
            "opts": self.model._meta,
            "form": form,
            "images": queryset[:50],
            "count": queryset.count(),
            "selected": queryset.values_list("pk", flat=True),
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return render(request, "admin/annotations/image/assign_batch.html", context, status=400 if form.is_bound else 200)

    @admin.action(description="Mark unsuitable (leave the labeling queue)")
    def mark_unsuitable(self, request, queryset):
        self._set_unsuitable(request, queryset, True)

    @admin.action(description="Mark suitable (back in the labeling queue)")
    def mark_suitable(self, request, queryset):
        self._set_unsuitable(request, queryset, False)

    def _set_unsuitable(self, request, queryset, value: bool):
        ids = list(queryset.exclude(unsuitable=value).values_list("pk", flat=True))
        Image.objects.filter(pk__in=ids).update(unsuitable=value)
        audit(request.user, "image.unsuitable" if value else "image.suitable", None, image_ids=ids)
        self.message_user(request, f"{len(ids)} image(s) marked {'unsuitable' if value else 'suitable'}.")


def _plain(value):
    """A form value as JSON can store it (files by name)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


@admin.register(Annotator)
class AnnotatorAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "provider", "model_name", "prompt_version", "is_demo")
    list_filter = ("kind", "is_demo")


@admin.register(Label)
class LabelAdmin(ReadOnlyHistoryAdmin):
    list_display = ("image", "annotator", "attribute", "value", "updated_at")
    list_filter = ("annotator",)
    raw_id_fields = ("image",)


@admin.register(Labeling)
class LabelingAdmin(ReadOnlyHistoryAdmin):
    list_display = ("image", "annotator", "status", "version", "flag", "updated_at")
    list_filter = ("status", "flag")
    search_fields = ("image__vispr_id", "annotator__name")
    raw_id_fields = ("image",)


@admin.register(Adjudication)
class AdjudicationAdmin(ReadOnlyHistoryAdmin):
    list_display = ("image", "attribute", "value", "adjudicator", "updated_at")
    raw_id_fields = ("image",)


admin.site.register(TaxonomyVersion)
admin.site.register(Attribute)
