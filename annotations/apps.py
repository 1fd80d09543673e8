from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    """Images, annotators, labels, the taxonomy, reviewer accounts and the audit log."""

    name = "annotations"
