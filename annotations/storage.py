"""Where image bytes are stored: the private image storage (no public URL) of originals and face variants."""
from __future__ import annotations

from django.conf import settings
from django.core.files.storage import FileSystemStorage


def private_image_storage():
    # No base_url: these files have no public URL; only annotations.views.image_bytes serves them.
    return FileSystemStorage(location=settings.PRIVATE_IMAGE_ROOT, base_url=None)
