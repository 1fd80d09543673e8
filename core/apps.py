from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The base layer every app uses: roles and profiles, access helpers, the audit log, protected
    files, strict JSON and the DRF plumbing. It imports no other app of the project."""

    name = "core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.contrib.auth import get_user_model
        from django.db.models.signals import pre_save

        from .accounts import revoke_tokens_on_password_change

        # Any password change (page, admin, changepassword) revokes the account's API tokens.
        pre_save.connect(revoke_tokens_on_password_change, sender=get_user_model(), dispatch_uid="revoke_tokens_on_password_change")
