"""A real Celery worker process receives a task through the configured broker and finishes it."""
import pytest

from cprt_site.celery import ping
from tests.workers import celery_worker, purge_broker


@pytest.mark.worker
def test_real_worker_round_trip(transactional_db):
    purge_broker()
    with celery_worker(queues="default", concurrency=1):
        result = ping.apply_async(args=["hello"], queue="default")
        assert result.get(timeout=90) == "hello"
