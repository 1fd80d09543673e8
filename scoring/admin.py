"""Admin pages of the scoring app. Scores are read-only (computed from labels); a profile change is
audited and rescores every stored score under it (scoring.profiles); export jobs are read-only."""
from django.contrib import admin

from annotations.admin import ReadOnlyAdmin
from core.audit import audit

from . import profiles
from .models import ExportJob, ImageScore, ScoringProfile


@admin.register(ScoringProfile)
class ScoringProfileAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "lo1", "lo2", "lo3", "provisional", "exclude_assisted", "is_active", "source")
    filter_horizontal = ("consensus_annotators",)
    # The version counts scoring changes; weights are the spec's; `activate` is an action (one active at a time).
    readonly_fields = ("version", "weights", "is_active", "fit_report", "created_at", "updated_at")
    actions = ["activate"]

    def has_delete_permission(self, request, obj=None):
        return False  # its scores and the exports that used it would go with it

    def save_model(self, request, obj, form, change):
        request._profile_before = profiles.snapshot(obj) if change else {}
        if change and any(name in form.changed_data for name in profiles.SCORING_FIELDS):
            obj.version += 1
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)  # the consensus set is saved here
        result = profiles.record_change(request.user, form.instance, request._profile_before)
        if result is not None:
            self.message_user(request, f"Rescored under {form.instance.label}: {result['scored']} image(s) scored, "
                                       f"{result['incomplete']} without a consensus.")

    @admin.action(description="Make active (the profile the pages use)")
    def activate(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Choose exactly one profile to activate.", level="error")
            return
        profile = queryset.get()
        before = ScoringProfile.objects.filter(is_active=True).first()
        profile.activate()
        audit(request.user, "profile.activate", profile, previous=before.label if before else None)
        self.message_user(request, f"{profile.label} is now the active profile.")


@admin.register(ImageScore)
class ImageScoreAdmin(ReadOnlyAdmin):
    """Read-only: a score is computed from the labels under its profile, never typed in."""

    list_display = ("image", "profile", "level", "score", "n1", "n2", "n3", "n4")
    list_filter = ("profile", "level")
    raw_id_fields = ("image",)


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    """Read-only: jobs are launched from /scoring/exports/ and written by the worker."""

    list_display = ("id", "status", "destination", "repo_id", "private", "include_annotations", "include_images", "created_by", "created_at")
    list_filter = ("status", "destination")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
