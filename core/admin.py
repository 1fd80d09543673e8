from django.contrib import admin

from .models import AuditEvent, Profile


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "role", "blur_images_by_default")
    list_filter = ("role",)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "actor", "action", "target_type", "target_id")
    list_filter = ("action",)
    readonly_fields = [f.name for f in AuditEvent._meta.fields]
