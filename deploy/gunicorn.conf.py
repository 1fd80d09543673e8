"""gunicorn's configuration (docker-compose.yml: `gunicorn cprt_site.wsgi:application --config deploy/gunicorn.conf.py`).

Logs like every other process of the app (core/logs.py): one line per event with timestamp, level,
logger and request id, plain text or JSON (`LOG_FORMAT`), secrets scrubbed; the access log is on,
one line per request, carrying the request id that the app answered in `X-Request-ID`.
"""
import os
import sys
from pathlib import Path

from gunicorn.glogging import Logger

# The repository root, so that `core` and `cprt_site` import wherever gunicorn was started from.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cprt_site.settings")

from core.logs import FORMATS, logging_config  # noqa: E402
from cprt_site.env import envchoice  # noqa: E402

accesslog = "-"
# client, request line, status, response bytes, duration in ms, user agent.
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms "%(a)s"'
logconfig_dict = logging_config(
    envchoice("LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")),
    envchoice("LOG_FORMAT", "text", FORMATS),
)


class RequestIdLogger(Logger):
    """gunicorn's logger, whose access line carries the request's id as a field of its own (the
    response's X-Request-ID, set by core.logs.RequestIdMiddleware; the request has ended by then)."""

    def access(self, resp, req, environ, request_time):
        if not self.access_log_enabled:
            return
        atoms = self.atoms_wrapper_class(self.atoms(resp, req, environ, request_time))
        rid = atoms["{x-request-id}o"]
        self.access_log.info(self.cfg.access_log_format, atoms, extra={"request_id": None if rid == "-" else rid})


logger_class = RequestIdLogger
