from django.apps import AppConfig


class ScoringConfig(AppConfig):
    """CPRT severity score, consensus, agreement and metrics (pure functions) plus their pages."""

    name = "scoring"

    def ready(self):
        # Lower apps (annotations, inference) trigger scoring only through these signals and hooks.
        from . import seams

        seams.connect()
        # Its job types, for the one reconciler (core/reconcile.py); the services are imported when a pass runs.
        from core import reconcile

        from .models import ExportJob, ImportJob

        reconcile.register("export", ExportJob, "scoring.run_export", reconcile=_reconcile_exports)
        reconcile.register("import", ImportJob, "scoring.run_import")


def _reconcile_exports(emptied_at) -> dict:
    from . import exports

    return {"failed": exports.reconcile()}
