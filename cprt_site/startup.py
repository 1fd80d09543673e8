"""Checks made when a web process starts serving (cprt_site.wsgi, hence gunicorn and runserver).

With DEBUG off, static files are served from their hashed names listed in the manifest that
`collectstatic` writes; without it every page would answer 500. Refusing to start says why at once.
"""
from __future__ import annotations

from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core.exceptions import ImproperlyConfigured


def static_manifest_problem() -> str:
    """Why the web process cannot serve its pages' static files ("" when it can)."""
    storage = staticfiles_storage  # a lazy object; isinstance sees the configured class
    if not isinstance(storage, ManifestFilesMixin):
        return ""
    if storage.exists(storage.manifest_name):
        return ""
    return (
        f"DEBUG is off and the static files' manifest {storage.path(storage.manifest_name)} is missing, so every "
        "page would fail: run `python manage.py collectstatic --noinput` with the same settings first (the Docker "
        "image collects them at build time; STATIC_ROOT says where)."
    )


def require_static_manifest() -> None:
    problem = static_manifest_problem()
    if problem:
        raise ImproperlyConfigured(problem)
