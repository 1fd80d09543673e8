"""A real Celery worker process receives a task through the configured broker and finishes it."""
import pytest

from cprt_site.celery import ping
from tests.support.workers import celery_worker, purge_broker


# Every transactional test uses serialized_rollback: a plain flush would drop the taxonomy the
# migrations loaded and re-create content types that later serialized tests restore (duplicate keys).
@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_real_worker_round_trip():
    purge_broker()
    with celery_worker(queues="default", concurrency=1):
        result = ping.apply_async(args=["hello"], queue="default")
        assert result.get(timeout=90) == "hello"
