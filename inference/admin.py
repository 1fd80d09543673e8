from django.contrib import admin

from .models import Run, RunResult


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
