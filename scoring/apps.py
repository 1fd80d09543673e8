from django.apps import AppConfig


class ScoringConfig(AppConfig):
    """CPRT severity score, consensus, agreement and metrics (pure functions) plus their pages."""

    name = "scoring"

    def ready(self):
        # Lower apps (annotations, inference) trigger scoring only through these signals and hooks.
        from . import seams

        seams.connect()
