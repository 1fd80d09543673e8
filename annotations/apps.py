from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    """Images, annotators, labels, the taxonomy, reviewer accounts and the audit log."""

    name = "annotations"

    def ready(self):
        from django.contrib.auth import get_user_model
        from django.db.models.signals import pre_save

        from core.accounts import revoke_tokens_on_password_change

        pre_save.connect(revoke_tokens_on_password_change, sender=get_user_model(), dispatch_uid="revoke_tokens_on_password_change")
