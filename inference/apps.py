from django.apps import AppConfig


class InferenceConfig(AppConfig):
    """Model providers, prompts, annotation and judging runs, and their Celery tasks."""

    name = "inference"
