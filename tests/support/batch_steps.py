"""Driving a batch run step by step in a test, as Celery beat's poller would."""
from __future__ import annotations

import pytest

from inference import dispatching
from inference.batch import lifecycle
from inference.batch.models import ProviderBatch


@pytest.fixture
def no_dispatch(monkeypatch):
    """Launches record the run only; the test drives the steps (as Celery beat would)."""
    monkeypatch.setattr(dispatching, "dispatch", lambda *a, **k: 0)
    monkeypatch.setattr(dispatching, "start_batch", lambda *a, **k: None)


def drive(run, steps=10):
    """Step the run until it is over, or failed with no provider batch left open; returns it refreshed."""
    for _ in range(steps):
        lifecycle.step(run.pk)
        run.refresh_from_db()
        if not run.is_active or (run.error and not ProviderBatch.objects.filter(run=run, phase__in=lifecycle.OPEN_PHASES).exists()):
            break
    return run
