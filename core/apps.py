from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The base layer every app uses: roles and profiles, access helpers, the audit log, protected
    files, strict JSON and the DRF plumbing. It imports no other app of the project."""

    name = "core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.contrib.auth import get_user_model
        from django.core.signals import request_finished
        from django.db.models.signals import pre_save

        from celery.signals import worker_ready, worker_shutdown

        from .accounts import revoke_tokens_on_password_change
        from .heartbeats import on_worker_ready, on_worker_shutdown
        from .logs import clear_request_id

        # Any password change (page, admin, changepassword) revokes the account's API tokens.
        pre_save.connect(revoke_tokens_on_password_change, sender=get_user_model(), dispatch_uid="revoke_tokens_on_password_change")
        # Workers record a heartbeat per queue for /readyz (core/heartbeats.py).
        worker_ready.connect(on_worker_ready, dispatch_uid="core_worker_heartbeat")
        worker_shutdown.connect(on_worker_shutdown, dispatch_uid="core_worker_heartbeat_end")
        # The request id stays on log lines until the response is finished, django.request's included (core/logs.py).
        request_finished.connect(clear_request_id, dispatch_uid="core_clear_request_id")
