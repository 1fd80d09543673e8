"""A VISPR attribute run end to end on a hand-made release: launched with `launch_run --here --json`
against the fake OpenAI server (which learns its answers in conftest), its figures page answers JSON,
and its cmAP and per-attribute AP equal scikit-learn's average_precision_score on its own predictions
download against the release's labels."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from sklearn.metrics import average_precision_score

from inference.models import Run, RunResult
from tests.support.vispr_release import ATTRIBUTES

from .conftest import OMITTING, REFUSED, TEST2017, VAL2017

KIND = ["--kind", "vispr-attributes", "--provider", "openai", "--model", "gpt-5.1"]
IDS = [a for a, _ in ATTRIBUTES]


def launch(*args) -> dict:
    out = io.StringIO()
    call_command("launch_run", *KIND, *args, "--here", "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def download(client, url) -> list[dict]:
    response = client.get(url + "?format=jsonl&download=predictions")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/x-ndjson")
    assert "attachment" in response["Content-Disposition"]
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_cmap_and_per_attribute_ap_equal_sklearn_on_the_runs_own_download(fake_model, client_as, admin_user):
    report = launch("--split", "test")
    run = Run.objects.get(pk=report["id"])
    assert report["status"] == "finished" and report["total"] == len(TEST2017)
    assert report["figures_url"] == f"/benchmarks/vispr-attributes/runs/{run.pk}/"
    assert report["outcomes"] == {"ok": len(TEST2017) - 1, "refused": 1}

    client = client_as(admin_user)
    response = client.get(report["figures_url"] + "?format=json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    figures = response.json()
    lines = download(client, report["figures_url"])

    # The download: one line per (answered image, attribute); the refused image has none.
    answered = sorted(set(TEST2017) - {REFUSED})
    assert [(line["image"], line["attribute"]) for line in lines] == [(v, a) for v in answered for a in IDS]
    omitted = [(line["image"], line["attribute"]) for line in lines if line["omitted"]]
    assert omitted == [(OMITTING, "a1_age_approx")]
    assert all(line["probability"] == 0.0 for line in lines if line["omitted"])

    # Against the layout's labels (the release's annotation files), with scikit-learn.
    expected, left_out = {}, []
    for a in IDS:
        y = np.array([a in TEST2017[v] for v in answered])
        p = np.array([line["probability"] for line in lines if line["attribute"] == a])
        if y.all() or not y.any():
            left_out.append(a)
        else:
            expected[a] = average_precision_score(y, p)
    got = {row["attribute"]: row for row in figures["per_attribute"]}
    assert list(got) == IDS
    for a in IDS:
        assert got[a]["positives"] == sum(a in TEST2017[v] for v in answered)
        assert got[a]["ap"] == (pytest.approx(expected[a], abs=1e-12) if a in expected else None)
    assert figures["cmap"] == pytest.approx(np.mean(list(expected.values())), abs=1e-12)
    assert [x["attribute"] for x in figures["left_out"]] == left_out
    assert {"a2_weight_approx", "a73_landmark"} <= set(left_out)  # on no test image
    assert figures["evaluated_attributes"] == len(expected)
    lo, hi = figures["cmap_interval"]["lo"], figures["cmap_interval"]["hi"]
    assert 0 <= lo <= hi <= 1 and figures["cmap_interval"]["resamples"] == 1000
    assert figures["coverage"] == pytest.approx((len(TEST2017) - 1) / len(TEST2017)) and figures["refused"] == 1
    assert figures["omitted"] == 1 and figures["provenance"] == "stand-in"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_prompt_lists_every_imported_attribute_with_its_description(fake_model):
    launch("--split", "test", "--sample", "2", "--seed", "3")
    (vispr_id, text, schema), _ = fake_model.seen_answers
    for attribute_id, description in ATTRIBUTES:
        assert f"{attribute_id}: {description}" in text
    # (a JSON object's keys are a set: PostgreSQL's jsonb, where the run keeps its schema, stores them in its own order)
    assert sorted(schema["properties"]) == sorted(IDS) and schema["required"] == IDS and schema["additionalProperties"] is False
    run = Run.objects.get()
    assert run.prompt_text["attributes"] == [list(a) for a in ATTRIBUTES]  # frozen with the run


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_vispr_split_option_and_the_train_split_choose_the_images(fake_model):
    report = launch("--split", "train")
    assert report["total"] == len(VAL2017)
    # The kind's own field (Run.options) narrows the selection to one VISPR split.
    report = launch("--split", "all", "--option", "vispr_split=val2017")
    assert report["total"] == len(VAL2017) and Run.objects.get(pk=report["id"]).options == {"vispr_split": "val2017"}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("reply, error", [
    ('["a0_safe"]', "JSON object"),
    ('{"a0_safe": 0.2, "a999_unknown": 0.1}', "unexpected attribute id(s): a999_unknown"),
    ('{"a0_safe": 1.5}', "a0_safe: the probability must be a number in [0, 1]"),
    ('{"a0_safe": true}', "a0_safe: the probability must be a number in [0, 1]"),
    ('{"a0_safe": "0.3"}', "a0_safe: the probability must be a number in [0, 1]"),
])
def test_an_answer_that_is_not_strictly_valid_is_unparseable_and_not_counted(release, openai_server, reply, error, client_as, admin_user):
    from tests.fakes import openai_server as ofake

    openai_server.queue(*[ofake.ok(reply)] * len(TEST2017))
    report = launch("--split", "test", "--sample", "1")
    result = RunResult.objects.get(run_id=report["id"])
    assert result.outcome == RunResult.OUTCOME_UNPARSEABLE and error in result.error and "answer" not in result.raw
    figures = client_as(admin_user).get(report["figures_url"] + "?format=json").json()
    assert figures["answered"] == 0 and figures["coverage"] == 0 and figures["cmap"] is None


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_without_an_imported_release_the_launch_is_refused_with_what_to_do_and_nothing_is_stored(openai_server, images):
    with pytest.raises(CommandError, match="import VISPR first: manage.py import_vispr"):
        launch("--split", "test")
    assert Run.objects.count() == 0


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("provider", ["openai", "gemini", "vllm"])
def test_any_provider_runs_it_with_the_fake_servers_default_answer(release, request, provider):
    request.getfixturevalue(f"{provider}_server")  # unscripted: the fake answers one number per attribute
    out = io.StringIO()
    call_command("launch_run", "--kind", "vispr-attributes", "--provider", provider, "--model", "some-model", "--split", "test",
                 "--here", "--json", stdout=out, stderr=io.StringIO())
    report = json.loads(out.getvalue())
    assert report["status"] == "finished" and report["outcomes"] == {"ok": len(TEST2017)}
    answers = [r.raw["answer"] for r in RunResult.objects.filter(run_id=report["id"])]
    assert all(sorted(a["p"]) == sorted(IDS) and a["omitted"] == [] for a in answers)  # (jsonb keeps keys in its own order)
