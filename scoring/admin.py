from django.contrib import admin

from .models import ImageScore, ScoringProfile


@admin.register(ScoringProfile)
class ScoringProfileAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "lo1", "lo2", "lo3", "provisional", "is_active", "source")
    filter_horizontal = ("consensus_annotators",)


@admin.register(ImageScore)
class ImageScoreAdmin(admin.ModelAdmin):
    list_display = ("image", "profile", "level", "score", "n1", "n2", "n3", "n4")
    list_filter = ("profile", "level")
    raw_id_fields = ("image",)
