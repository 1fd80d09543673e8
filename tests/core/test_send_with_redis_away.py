"""While Redis is away, sending any of the project's tasks fails with a broker error, which the
senders know how to wait out (core.dispatch.BROKER_ERRORS), never with celery's RuntimeError from
a result store it could not subscribe to. Outcomes live in rows, so no task tracks its result
(CELERY_TASK_IGNORE_RESULT); before that, `inference.run_chunk` raised RuntimeError here."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import inspect, json, django
django.setup()
from celery import current_app
from core import dispatch
current_app.loader.import_default_modules()
outcomes = {}
for name in sorted(n for n in current_app.tasks if not n.startswith("celery.") and n != "cprt_site.ping"):
    needed = [p for p in inspect.signature(current_app.tasks[name].run).parameters.values()
              if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    try:
        dispatch.send_now(name, [1] * len(needed))
        outcomes[name] = "sent"
    except dispatch.BROKER_ERRORS as exc:
        outcomes[name] = "broker error"
    except Exception as exc:
        outcomes[name] = f"{type(exc).__name__}: {exc}"[:200]
print(json.dumps(outcomes))
"""


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


def test_every_task_send_fails_as_a_broker_error_while_redis_is_away(tmp_path):
    url = f"redis://127.0.0.1:{dead_port()}/0"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cprt_site.settings", "CPRT_DATA_DIR": str(tmp_path),
           "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "CELERY_BROKER_URL": url, "CELERY_RESULT_BACKEND": url,
           "CPRT_RATE_LIMIT_URL": url}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])
    assert "inference.run_chunk" in outcomes and "scoring.run_export" in outcomes
    assert {name: o for name, o in outcomes.items() if o != "broker error"} == {}
