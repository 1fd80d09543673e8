"""SPY-Bench as a benchmark folder: found by the registry with its kind, its pages under
/benchmarks/spy-bench/ (the old /runs/spy-bench/ addresses answer 301), its row on the Benchmarks page
from its data status, and its launch fields on launch_run and the API from its launch form."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from inference import benchmarks, kinds
from inference.models import Run


def test_the_registry_finds_spy_bench_and_its_kind():
    spy = benchmarks.get("spy-bench")
    assert benchmarks.of_kind("spy-bench") is spy and kinds.KINDS["spy-bench"] in spy.kinds
    assert spy.home_url() == "/benchmarks/spy-bench/"
    assert [f.key for f in spy.figures["spy-bench"] if f.headline] == ["hms"]


@pytest.mark.parametrize("old, new", [
    ("/runs/spy-bench/", "/benchmarks/spy-bench/"),
    ("/runs/spy-bench/runs/7/export.jsonl?page=2", "/benchmarks/spy-bench/runs/7/export.jsonl?page=2"),
    ("/runs/spy-bench/imports/3/", "/benchmarks/spy-bench/imports/3/"),
])
def test_old_addresses_answer_301_to_the_folder(client, old, new):
    response = client.get(old)
    assert response.status_code == 301 and response["Location"] == new


def test_benchmarks_page_row_follows_the_data_status(admin_user, client_as, request):
    client = client_as(admin_user)
    page = client.get("/scoring/benchmarks/").content.decode()
    assert 'href="/benchmarks/spy-bench/">SPY-Bench</a>' in page
    assert "0 SPY-Bench sets, 0 items" in page and "manage.py spy_import" in page
    spy_set = request.getfixturevalue("spy_set")
    page = client.get("/scoring/benchmarks/").content.decode()
    assert f"1 SPY-Bench set, {spy_set.items.count()} items" in page and "/runs/new/?task=spy-bench" in page


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_runs_figures_url_is_the_folders_page(spy_set, openai_server, capsys):
    call_command("launch_run", "--kind", "spy-bench", "--provider", "openai", "--model", "gpt-answer", "--spy-set", str(spy_set.pk),
                 "--judge-model", "gpt-judge", "--here", "--json")
    run = Run.objects.get()
    assert run.options == {"set": spy_set.pk, "distractors": False, "judge_model": "gpt-judge"}
    assert f'"figures_url": "/benchmarks/spy-bench/runs/{run.pk}/"' in capsys.readouterr().out
    assert benchmarks.get("spy-bench").figures_url(run) == f"/benchmarks/spy-bench/runs/{run.pk}/"
    assert benchmarks.get("spy-bench").report(run)["metrics"]["total"] == run.results.count() == 9


def test_launch_run_and_the_api_take_its_fields_from_the_launch_form(admin_user, client_as):
    from inference.management.commands.launch_run import Command

    help_text = Command().create_parser("manage.py", "launch_run").format_help()
    assert "--spy-set" in help_text and "--judge-model" in help_text and "--distractors" in help_text
    schema = client_as(admin_user).get("/api/schema/").content.decode()
    assert "spy_set" in schema and "judge_model" in schema
