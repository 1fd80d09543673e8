from django.contrib import admin

from .models import ExportJob, ImageScore, ScoringProfile


@admin.register(ScoringProfile)
class ScoringProfileAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "lo1", "lo2", "lo3", "provisional", "is_active", "source")
    filter_horizontal = ("consensus_annotators",)


@admin.register(ImageScore)
class ImageScoreAdmin(admin.ModelAdmin):
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
