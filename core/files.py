"""Protected file responses: image bytes and export downloads, after the view's permission check.

Django always decides who may read a file. Who sends the bytes depends on the deployment: with
``CPRT_X_ACCEL_REDIRECT`` on (nginx in front, docker-compose.yml), the response carries only an
``X-Accel-Redirect`` header naming an nginx ``internal`` location, and nginx streams the file; with
it off (the embedded setup, tests) Django streams the file itself. Both send the same headers.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.http import FileResponse, Http404, HttpResponse
from django.http.response import HttpResponseBase
from django.utils.http import content_disposition_header

X_ACCEL_PREFIX = "/_protected/"


def _locate(root_name: str, path: Path | str) -> tuple[Path, str]:
    """The resolved file and its path relative to the named protected root; 404 outside it."""
    root = Path(settings.CPRT_PROTECTED_ROOTS[root_name]).resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root) or target == root:
        raise Http404("No such file.")
    if not target.is_file():
        raise Http404("The file is missing.")
    return target, target.relative_to(root).as_posix()


def protected_file_response(
    root_name: str, path: Path | str, *, content_type: str, download_name: str, attachment: bool = False
) -> HttpResponseBase:
    """Send a file under ``settings.CPRT_PROTECTED_ROOTS[root_name]``; call only after checking permissions.

    `download_name` replaces the stored file name (original names of sensitive images never leave).
    """
    target, relative = _locate(root_name, path)
    response: HttpResponseBase
    if settings.CPRT_X_ACCEL_REDIRECT:
        response = HttpResponse(content_type=content_type)
        response["X-Accel-Redirect"] = quote(f"{X_ACCEL_PREFIX}{root_name}/{relative}")
    else:
        response = FileResponse(target.open("rb"), content_type=content_type)
    response["Cache-Control"] = "private, no-store"
    # Quotes and non-ASCII names are escaped (filename*=utf-8''...), never pasted into the header.
    disposition = content_disposition_header(attachment, download_name)
    if disposition:  # None only for an inline file without a name
        response["Content-Disposition"] = disposition
    response["X-Content-Type-Options"] = "nosniff"
    return response
