"""Dataset builds whose message is gone are built, once, by a real worker after the reconciler sends
them again: one launched while its message waited in a Redis that was then SIGKILLed and came back
empty (no persistence: the queued message is lost), one launched while Redis was down (the send
after the commit failed; the launch did not). A private redis-server (never the shared one) is the
broker of the launches (`manage.py shell` processes), of the worker and of beat (`core.reconcile_jobs`).
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from annotations.datasets.models import DatasetBuild, DatasetVersion
from core.models import AuditEvent
from tests.support.redis_server import REDIS_SERVER, PrivateRedis
from tests.support.vispr_world import make_world
from tests.support.workers import ROOT, celery_beat, celery_worker, wait_for, worker_env

pytestmark = pytest.mark.skipif(not os.path.exists(REDIS_SERVER), reason="redis-server is not installed")

LAUNCH = ("from annotations.datasets import build, recipes; "
          "print(build.start_build(None, recipes.preset('cprt-paper'), {name!r}).pk)")


def launch(env: dict, name: str) -> DatasetBuild:
    """The page's launch (store, audit, send on commit), in a process bound to the private broker."""
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", LAUNCH.format(name=name)], cwd=ROOT,
                          env={**worker_env(), **env}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return DatasetBuild.objects.get(pk=int(done.stdout.strip().splitlines()[-1]))


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_builds_whose_message_is_gone_are_sent_again_and_built_once(tmp_path):
    make_world()
    redis_server = PrivateRedis(tmp_path).start()
    env = {"CELERY_BROKER_URL": redis_server.url, "CELERY_RESULT_BACKEND": redis_server.url, "CPRT_RATE_LIMIT_URL": redis_server.url,
           "CPRT_RECONCILE_EVERY_S": "1", "CPRT_JOB_SEND_GRACE_S": "2"}
    try:
        lost = launch(env, "lost-with-redis")  # no worker yet: its message waits in Redis
        assert lost.status == "queued" and lost.sent_at is not None
        redis_server.kill()  # ... and is gone with it
        never = launch(env, "sent-while-down")  # the send fails; the launch does not
        assert never.status == "queued" and never.sent_at is None
        redis_server.start()  # empty
        with celery_worker(queues="default", concurrency=2, env=env) as worker, celery_beat(tmp_path, env=env) as beat:
            builds = DatasetBuild.objects.filter(pk__in=[lost.pk, never.pk])
            wait_for(lambda: set(builds.values_list("status", flat=True)) == {"finished"}, timeout=120, what="both builds to finish")
            assert worker.poll() is None and beat.poll() is None
    finally:
        redis_server.kill()
    for job in (lost, never):
        job.refresh_from_db()
        assert job.sent_at is not None and job.version is not None
        assert AuditEvent.objects.filter(action="dataset.build.finished", data__build=job.pk).count() == 1
    assert sorted(DatasetVersion.objects.values_list("name", flat=True)) == ["lost-with-redis", "sent-while-down"]
