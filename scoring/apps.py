from django.apps import AppConfig


class ScoringConfig(AppConfig):
    """CPRT severity score, consensus, agreement and metrics (pure functions) plus their pages."""

    name = "scoring"
