from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from .models import Adjudication, Annotator, AuditEvent, Attribute, Image, Label, Labeling, Profile, TaxonomyVersion


@admin.register(Image)
class ImageAdmin(admin.ModelAdmin):
    list_display = ("vispr_id", "split", "width", "height", "source", "published_level", "published_score")
    list_filter = ("split", "source")
    search_fields = ("vispr_id", "sha256")
    readonly_fields = ("sha256", "width", "height", "file")


@admin.register(Annotator)
class AnnotatorAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "provider", "model_name", "prompt_version", "is_demo")
    list_filter = ("kind", "is_demo")


@admin.register(Label)
class LabelAdmin(SimpleHistoryAdmin):
    list_display = ("image", "annotator", "attribute", "value", "updated_at")
    list_filter = ("annotator",)
    raw_id_fields = ("image",)


@admin.register(Labeling)
class LabelingAdmin(SimpleHistoryAdmin):
    list_display = ("image", "annotator", "status", "version", "flag", "updated_at")
    list_filter = ("status", "flag")
    raw_id_fields = ("image",)


@admin.register(Adjudication)
class AdjudicationAdmin(SimpleHistoryAdmin):
    list_display = ("image", "attribute", "value", "adjudicator", "updated_at")
    raw_id_fields = ("image",)


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "role", "blur_images_by_default")
    list_filter = ("role",)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "actor", "action", "target_type", "target_id")
    list_filter = ("action",)
    readonly_fields = [f.name for f in AuditEvent._meta.fields]


admin.site.register(TaxonomyVersion)
admin.site.register(Attribute)
