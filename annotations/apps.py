from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    """Images, annotators, labels, the taxonomy, reviewer accounts and the audit log."""

    name = "annotations"

    def ready(self):
        # Its job types, for the one reconciler (core/reconcile.py). The services are imported when a
        # pass runs, not at start-up (they pull in PIL and pyarrow).
        from core import reconcile

        from .datasets.models import DatasetBuild
        from .faces.models import AnonymizationJob

        reconcile.register("anonymization", AnonymizationJob, "annotations.anonymize_faces", reconcile=_reconcile_faces)
        reconcile.register("dataset_build", DatasetBuild, "annotations.build_dataset", reconcile=_reconcile_builds)


def _reconcile_faces(emptied_at) -> dict:
    from .faces import jobs

    return {"resumed": jobs.reconcile()}


def _reconcile_builds(emptied_at) -> dict:
    from .datasets import build

    return {"resumed": build.reconcile()}
