from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The base layer every app uses: roles and profiles, access helpers, the audit log, protected
    files, strict JSON and the DRF plumbing. It imports no other app of the project."""

    name = "core"
    default_auto_field = "django.db.models.BigAutoField"
