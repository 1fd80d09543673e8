from django.apps import AppConfig


class InferenceConfig(AppConfig):
    """Model providers, prompts, annotation and judging runs, and their Celery tasks."""

    name = "inference"

    def ready(self):
        # Runs, for the one reconciler (core/reconcile.py): their lanes send their own messages
        # (inference.lifecycle.reconcile, handed the broker's answer), so no task is registered.
        from core import reconcile

        from .models import Run

        reconcile.register("run", Run, reconcile=_reconcile_runs)
        # Every benchmark folder's declaration, found through its AppConfig (inference.benchmarks):
        # its run kinds join inference.kinds.KINDS before any form or page reads them.
        from . import benchmarks

        benchmarks.discover()
        # The labeling page badges model suggestions with their runs' provenance (annotations.hooks).
        from annotations import hooks as annotation_hooks

        from . import provenance

        annotation_hooks.register_annotator_provenance(provenance.of_annotators)


def _reconcile_runs(emptied_at) -> dict:
    from . import lifecycle

    return lifecycle.reconcile(emptied_at)
