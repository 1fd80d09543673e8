"""MultiPriv as a benchmark folder (issue 35): its declaration in the registry, its data status on the
Benchmarks page, its kinds' figures pages, and its old addresses answering 301 to the new ones."""
from __future__ import annotations

import pytest

from benchmarks.multipriv.demo import seed_multipriv
from inference import benchmarks, kinds
from inference.models import Run


def test_the_declaration_registers_both_kinds():
    mp = benchmarks.get("multipriv")
    assert [k.key for k in mp.kinds] == ["multipriv-reid", "multipriv-profile"]
    assert all(kinds.KINDS[k.key] is k and benchmarks.of_kind(k.key) is mp for k in mp.kinds)
    assert [f.key for f in mp.figures["multipriv-reid"]][:2] == ["accuracy", "precision"]


@pytest.mark.parametrize("old, new", [
    ("/multipriv/", "/benchmarks/multipriv/persons/"),
    ("/multipriv/persons/5/", "/benchmarks/multipriv/persons/5/"),
    ("/multipriv/images/3/bytes", "/benchmarks/multipriv/images/3/bytes"),
    ("/scoring/multipriv/", "/benchmarks/multipriv/"),
    ("/scoring/multipriv/runs/7/?format=json", "/benchmarks/multipriv/runs/7/?format=json"),
    ("/scoring/multipriv/runs/7/rescore", "/benchmarks/multipriv/runs/7/rescore"),
])
def test_old_addresses_answer_301(client, old, new):
    response = client.get(old)
    assert response.status_code == 301 and response["Location"] == new


@pytest.mark.django_db
def test_data_status_and_figures_url_follow_the_data(client, admin_user):
    mp = benchmarks.get("multipriv")
    empty = mp.data_status()
    assert not empty.ready and "import_multipriv" in empty.next_step and empty.summary.startswith("0 persons")
    seed_multipriv()
    ready = mp.data_status()
    assert ready.ready and ready.summary.startswith("4 persons, 20 images") and "?task=multipriv-reid" in ready.next_url
    client.force_login(admin_user)
    hub = client.get("/scoring/benchmarks/").content.decode()
    assert "MultiPriv individual level" in hub and ready.summary in hub
    for run in Run.objects.filter(task__startswith="multipriv"):
        url = mp.figures_url(run)
        assert url == kinds.get(run.task)(run).figures_url(run) == f"/benchmarks/multipriv/runs/{run.pk}/"
        figures = client.get(url + "?format=json").json()
        assert figures == mp.report(run) and figures["task"] == run.task
