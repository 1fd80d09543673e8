"""docs/spy-bench.md's "Using it" steps, as written, on a VISPR release folder (the authors' layout) and
upstream's released benchmark items: import the test images, import the set, launch a run with
`launch_run`, read the pages, export, and read the export back with `spy_metrics`; plus `spy_expand`."""
from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from inference.models import Run
from benchmarks.spy_bench.models import SpySet
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.vispr_release import write_release

from .test_spy_upstream_files import ITEMS, LABEL2TEXT, VISPR_IDS


def command(*args) -> str:
    out = io.StringIO()
    call_command(*map(str, args), stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def release(tmp_path):
    """A release holding the three images upstream's items ask about (test2017) and one val2017 image."""
    return write_release(tmp_path / "vispr", {"test2017": {vid: ["a4_gender"] for vid in VISPR_IDS},
                                              "val2017": {"2017_20000001": ["a0_safe"]}})


@pytest.mark.django_db
def test_step_one_as_the_docs_wrote_it_before_is_refused_with_the_right_flag_named(release):
    with pytest.raises(CommandError, match="give --vispr-split \\(e.g. --vispr-split test2017 for our test split\\)"):
        command("import_vispr", release, "--split", "test")


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_every_step_of_the_docs_works_on_a_release_folder(release, tmp_path, openai_server, admin_user, client_as, capsys):
    # 1. import_vispr VISPR_FOLDER --vispr-split test2017
    out = command("import_vispr", release, "--vispr-split", "test2017")
    assert "Splits: test2017 -> test; present, not imported: val2017" in out and "Images added: 3;" in out
    # 2. spy_import BENCHMARK.json --label2text label2text.json --name NAME
    out = command("spy_import", ITEMS, "--label2text", LABEL2TEXT, "--name", "eval_data")
    spy_set = SpySet.objects.get(name="eval_data")
    assert f"Imported SPY-Bench set 'eval_data' (#{spy_set.pk}): 3 items, 15 rows." in out
    # 3. launch_run --kind spy-bench --provider P --model M --spy-set SET_ID [--distractors] [--judge-model J] --here
    command("launch_run", "--kind", "spy-bench", "--provider", "openai", "--model", "gpt-answer", "--spy-set", spy_set.pk,
            "--distractors", "--judge-model", "gpt-judge", "--split", "test", "--here")
    run = Run.objects.get(task="spy-bench")
    assert run.status == Run.STATUS_FINISHED and run.total == 15
    # 4. read /benchmarks/spy-bench/ and the run's report
    client = client_as(admin_user)
    assert client.get("/benchmarks/spy-bench/").status_code == 200
    assert client.get(f"/benchmarks/spy-bench/runs/{run.pk}/").status_code == 200
    # 5. export.jsonl, read back by spy_metrics; the export imported as results; spy_expand
    export = tmp_path / "ours.jsonl"
    export.write_bytes(client.get(f"/benchmarks/spy-bench/runs/{run.pk}/export.jsonl").content)
    capsys.readouterr()
    call_command("spy_metrics", str(export), "--by-label")
    got = json.loads(capsys.readouterr().out)
    assert got["metrics"]["total"] == 15 and got["metrics"]["exception"] == 0
    out = command("spy_import", export, "--results", "--name", "ours again", "--model", "gpt-answer", "--judge-model", "gpt-judge",
                  "--distractors", "--set", "eval_data")
    assert re.search(r"Imported 15 evaluated rows as 'ours again'", out)
    out = command("spy_expand", ITEMS, "--label2text", LABEL2TEXT, "--add-distractors", "--out", tmp_path / "rows.jsonl")
    assert "Wrote 15 rows of 3 items" in out
