"""CPRT Workbench project package: settings, URLs and the Celery app."""
from . import threads  # noqa: F401 - first: the numeric libraries' thread counts are read when they load
from .celery import app as celery_app

__all__ = ("celery_app",)
