"""WSGI entry point (gunicorn cprt_site.wsgi; runserver loads it too). It refuses to start with DEBUG
off and no collected static files (cprt_site.startup)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cprt_site.settings")
application = get_wsgi_application()

from cprt_site.startup import require_static_manifest  # noqa: E402  (needs the settings loaded above)

require_static_manifest()
