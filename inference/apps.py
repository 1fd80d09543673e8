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
        # A worker imports the provider SDKs once, before its pool forks (core.lazy.load_all).
        from celery.signals import worker_init

        worker_init.connect(_import_provider_sdks, dispatch_uid="inference_provider_sdks")


def _import_provider_sdks(**kwargs) -> None:
    """Celery `worker_init`, in the worker's main process before the pool forks: every provider's SDK
    (lazy in other processes) imported here, so that each pool process does not import it during the
    first run it works (issue 37: about 0.3 s of CPU per process for the OpenAI SDK, in the first run
    after a start, which made that run's throughput the lowest)."""
    from core import lazy

    from . import providers  # noqa: F401 - its modules declare the SDKs as lazy modules

    lazy.load_all()


def _reconcile_runs(emptied_at) -> dict:
    from . import lifecycle

    return lifecycle.reconcile(emptied_at)
