"""The counterfactual subset across several judge runs: images every chosen run scored at or above a threshold."""
from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import AuditEvent
from inference.models import Run
from inference.selection import Selection, select_image_ids
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.permission_cases.scoring import add_results, make_images, make_run
from tests.conftest import with_submission_token

VALID = {
    "task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "taxonomy",
    "split": "all", "concurrency": "4", "seed": "0", "action": "launch",
}


@pytest.fixture
def admin_client(client_as, admin_user):
    return client_as(admin_user)


@pytest.mark.django_db
def test_every_chosen_run_must_score_the_image_at_or_above_the_threshold():
    images = make_images(6, prefix="2017_81")
    a, b, c = (make_run(strategy="taxonomy", model=f"m{k}") for k in range(3))
    add_results(a, [(im, "ok", s) for im, s in zip(images, (0.9, 0.9, 0.9, 0.2, 0.95, 0.9))])
    add_results(b, [(im, "ok", s) for im, s in zip(images, (0.9, 0.1, 0.8, 0.9, 0.95, 0.9))])
    add_results(c, [(im, o, s) for im, o, s in zip(images, ["ok"] * 5 + ["refused"], (0.8, 0.9, 0.7, 0.9, 0.99, None))])
    for image in images:  # selection only keeps images with stored bytes
        image.file.name = f"x/{image.vispr_id}.jpg"
        image.save(update_fields=["file"])
    one, _ = select_image_ids(Selection(from_run=a.pk, min_score=0.8))
    assert one == sorted(images[i].pk for i in (0, 1, 2, 4, 5))
    all_three, described = select_image_ids(Selection(from_run=a.pk, min_score=0.8, also_from_runs=(b.pk, c.pk)))
    assert all_three == sorted(images[i].pk for i in (0, 4))  # 1: b says 0.1; 2: c says 0.7; 3: a says 0.2; 5: c refused
    assert described["also_from_runs"] == [b.pk, c.pk]


@pytest.mark.parametrize("change,message", [
    ({"also_from_runs": "4242"}, "Give the first judge run"),
    ({"from_run": "FIRST", "also_from_runs": "12; drop"}, "separated by commas"),
    ({"from_run": "FIRST", "also_from_runs": "987654"}, "Not judge runs with parsed scores: #987654"),
])
def test_bad_run_lists_are_refused_and_nothing_is_stored(admin_client, openai_server, images, change, message):
    first = make_run(strategy="taxonomy", model="first")
    add_results(first, [(images[0], "ok", 0.9)])
    before, runs = AuditEvent.objects.count(), Run.objects.count()
    data = {**VALID, **{k: (str(first.pk) if v == "FIRST" else v) for k, v in change.items()}}
    response = admin_client.post(reverse("inference:run_new"), with_submission_token(data))
    assert response.status_code == 400 and message in response.content.decode()
    assert Run.objects.count() == runs and AuditEvent.objects.count() == before
