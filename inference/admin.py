from django.contrib import admin

from .models import ClassifierModel, Run, RunResult


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "task", "provider", "model_name", "strategy", "status", "total_images", "created_at")
    list_filter = ("task", "provider", "status")
    readonly_fields = [f.name for f in Run._meta.fields]


@admin.register(RunResult)
class RunResultAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "image", "outcome", "score", "created_at")
    list_filter = ("outcome",)
    readonly_fields = [f.name for f in RunResult._meta.fields]


@admin.register(ClassifierModel)
class ClassifierModelAdmin(admin.ModelAdmin):
    """Read-only: a classifier is registered by `manage.py register_classifier`, which checks the file."""
    list_display = ("name", "file", "output_kind", "created_at")
    readonly_fields = [f.name for f in ClassifierModel._meta.fields]

    def has_add_permission(self, request):
        return False
