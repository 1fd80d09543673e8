"""Two lanes ending together both refresh the run's totals. The one that counted before the other's
results committed must not write its smaller totals last (a finished run showed 3 of 5 done)."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from inference import lifecycle, pricing
from inference.models import Run, RunResult


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_slow_refresh_never_writes_older_totals_over_newer_ones(make_image, monkeypatch):
    images = [make_image(f"2017_{i:08d}") for i in range(5)]
    run = Run.objects.create(task="judge", provider="openai", model_name="gpt-5.1", strategy="zero_shot", prompt_version="judge-v1",
                             item_ids=[i.pk for i in images], image_ids=[i.pk for i in images], total=5, status=Run.STATUS_RUNNING)
    for image in images[:3]:
        RunResult.objects.create(run=run, item_id=image.pk, image=image, outcome="ok", score=0.5)

    counted, go_on = threading.Event(), threading.Event()
    real_cost = pricing.cost

    def slow_cost(*args, **kwargs):  # the first refresher has counted; it waits here before it writes
        if threading.current_thread().name == "slow":
            counted.set()
            go_on.wait(10)
        return real_cost(*args, **kwargs)

    monkeypatch.setattr(pricing, "cost", slow_cost)

    def slow_refresh():
        try:
            lifecycle.refresh_totals(run.pk)
        finally:
            connection.close()

    slow = threading.Thread(target=slow_refresh, name="slow")
    slow.start()
    assert counted.wait(10)

    def the_other_lane():  # writes its last two results and refreshes, while the slow one waits
        try:
            for image in images[3:]:
                RunResult.objects.create(run=run, item_id=image.pk, image=image, outcome="ok", score=0.5)
            lifecycle.refresh_totals(run.pk)
        finally:
            connection.close()

    other = threading.Thread(target=the_other_lane, name="other")
    other.start()
    other.join(1.0)  # with the row lock it waits for the slow refresher; without it, it is done by now
    go_on.set()
    slow.join(10)
    other.join(20)
    assert not slow.is_alive() and not other.is_alive()
    run.refresh_from_db()
    assert run.done == 5 and run.outcome_counts == {"ok": 5}
