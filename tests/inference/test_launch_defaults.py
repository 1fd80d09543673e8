"""The launch page reads each kind's declaration (issue 35): `?task=KEY` preselects the kind and shows
only its fields; the page's defaults launch a run of every kind (an available provider first, the
kind's own fields prefilled), or the kind is shown unavailable with what to do and a launch is
refused; the run page, the API and `launch_run --json` point at the kind's own figures page."""
from __future__ import annotations

import json
import re
import tempfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from benchmarks.multipriv.importer import import_multipriv
from benchmarks.multipriv.demo import write_release
from inference import kinds
from inference.forms import LaunchForm
from inference.models import Run
from benchmarks.spy_bench.models import SpyRow, SpySet
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.inference.spy.conftest import DOCTOR, LABEL2TEXT, bench_item
from tests.support.classifiers import tiny_classifier
from tests.support.vispr_release import write_release as write_vispr_release
from tests.conftest import with_submission_token

pytestmark = pytest.mark.django_db

FIGURES = {"annotate": "/scoring/runs/{}/", "judge": "/scoring/runs/{}/", "multipriv-reid": "/benchmarks/multipriv/runs/{}/",
           "multipriv-profile": "/benchmarks/multipriv/runs/{}/", "binary": "/benchmarks/local-classifiers/runs/{}/",
           "spy-bench": "/benchmarks/spy-bench/runs/{}/", "vispr-attributes": "/benchmarks/vispr-attributes/runs/{}/"}
MISSING = {"annotate": "import images first", "judge": "import images first", "multipriv-reid": "manage.py import_multipriv",
           "multipriv-profile": "manage.py import_multipriv", "binary": "register a classifier: manage.py register_classifier",
           "spy-bench": "import a SPY-Bench set first", "vispr-attributes": "import VISPR first"}


@pytest.fixture
def every_kinds_data(images, openai_server, settings, tmp_path):
    """Images, a SPY-Bench set over two of them, MultiPriv persons, a registered classifier, a small
    VISPR release (its attributes and labelled test images)."""
    bench, l2t = tmp_path / "bench.json", tmp_path / "label2text.json"
    bench.write_text(json.dumps({"benchmark_list": [bench_item(1, "a4_gender", images[0].vispr_id, privacy=[("s1_doctor", DOCTOR)])]}))
    l2t.write_text(json.dumps(LABEL2TEXT))
    call_command("spy_import", str(bench), "--label2text", str(l2t), "--name", "tiny", stdout=StringIO())
    with tempfile.TemporaryDirectory() as tmp:
        import_multipriv(write_release(Path(tmp)))
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    release = write_vispr_release(tmp_path / "vispr", {"test2017": {"2017_10000001": ["a4_gender"], "2017_10000002": ["a0_safe"]}})
    call_command("import_vispr", str(release), stdout=StringIO(), stderr=StringIO())
    call_command("register_classifier", "tiny", str(tiny_classifier(tmp_path / "tiny.onnx")), "--classes", "private,public", stdout=StringIO())
    return images


def page_defaults(form: LaunchForm) -> dict:
    """What a person's browser posts when they press Launch without changing anything: every field
    the page shows, with its initial value (unchecked boxes are not sent)."""
    data = {"action": "launch"}
    fields = [form[name] for name in form.shown] + (list(form.kind_form) if form.kind_form is not None else [])
    for bound in fields:
        value = bound.value()
        if value is None or value is False:
            continue
        data[bound.html_name] = "on" if value is True else value
    return data


@pytest.mark.parametrize("key", list(kinds.KINDS))
def test_each_kind_launches_from_the_page_with_its_defaults(key, every_kinds_data, client_as, admin_user):
    client = client_as(admin_user)
    page = client.get(reverse("inference:run_new") + f"?task={key}")
    assert page.status_code == 200
    form = page.context["form"]
    assert form.kind.key == key and not form.kind_unavailable and not form.no_provider
    assert re.search(rf'<option value="{re.escape(key)}" selected>', page.content.decode())  # ?task= preselects
    response = client.post(reverse("inference:run_new"), with_submission_token(page_defaults(form)))
    assert response.status_code == 302, (response.context["form"].errors, response.context["form"].non_field_errors())
    run = Run.objects.get()
    assert run.task == key and response["Location"] == reverse("inference:run_detail", args=[run.pk])
    expected = FIGURES[key].format(run.pk)
    detail = client.get(response["Location"]).content.decode()
    assert f'href="{expected}" class="figures-link"' in detail  # "Metrics of this run" opens the kind's own figures page
    assert client.get(expected).status_code == 200
    assert client.get(reverse("api:run-detail", args=[run.pk])).json()["figures_url"] == expected


def test_the_form_shows_only_the_chosen_kinds_fields(every_kinds_data, client_as, admin_user):
    client = client_as(admin_user)
    annotate = client.get(reverse("inference:run_new") + "?task=annotate").content.decode()
    assert 'name="opt-set"' not in annotate and 'name="counterfactual_faces"' not in annotate and 'name="strategy"' not in annotate
    assert 'name="split"' in annotate
    spy = client.get(reverse("inference:run_new") + "?task=spy-bench").content.decode()
    set_id = str(SpySet.objects.get().pk)
    assert re.search(rf'<option value="{set_id}" selected>tiny</option>', spy)  # the one set is preselected
    assert 'name="judge_model"' not in spy and 'name="opt-judge_model"' in spy and 'name="counterfactual_faces"' not in spy
    reid = client.get(reverse("inference:run_new") + "?task=multipriv-reid").content.decode()
    assert 'name="split"' not in reid and 'name="attribute"' not in reid and 'name="opt-limit"' in reid
    binary = client.get(reverse("inference:run_new") + "?task=binary").content.decode()
    assert re.search(r'<option value="onnx" selected>', binary) and 'value="tiny"' in binary and 'name="mode"' not in binary
    unknown = client.get(reverse("inference:run_new") + "?task=nope&provider=nope")
    assert unknown.status_code == 200 and unknown.context["form"].kind.key == "annotate"  # ignored: the defaults stand


@pytest.mark.parametrize("key", list(kinds.KINDS))
def test_a_kind_without_its_data_is_shown_unavailable_and_refused(key, db, openai_server, client_as, admin_user):
    client = client_as(admin_user)
    page = client.get(reverse("inference:run_new") + f"?task={key}")
    text = page.content.decode()
    assert "cannot be launched yet" in text and MISSING[key] in text
    assert re.search(r'<button type="submit" name="action" value="launch" disabled', text)
    form = page.context["form"]
    response = client.post(reverse("inference:run_new"),
                           with_submission_token({**page_defaults(form), "task": key, "provider": "openai", "model_name": "gpt-5.1"}))
    assert response.status_code == 400 and MISSING[key] in response.content.decode() and not Run.objects.exists()


def test_the_default_provider_is_an_available_one(db, no_provider_keys, settings):
    settings.GEMINI_API_KEY = "g-fake"
    form = LaunchForm(initial={"task": "judge"})
    assert form["provider"].value() == "gemini" and form["model_name"].value() == "gemini-3-flash-preview"
    settings.OPENAI_API_KEY = "sk-fake"
    assert LaunchForm(initial={"task": "judge"})["provider"].value() == "openai"  # the first available, in the list's order


def test_estimate_counts_the_kinds_units(every_kinds_data, client_as, admin_user):
    client = client_as(admin_user)
    for key, unit in (("spy-bench", "items"), ("multipriv-reid", "pairs"), ("multipriv-profile", "persons"), ("judge", "images")):
        form = client.get(reverse("inference:run_new") + f"?task={key}").context["form"]
        estimate = client.post(reverse("inference:run_estimate"), page_defaults(form)).content.decode()
        assert re.search(rf"\d+ {unit} ·", estimate), (key, estimate)
    spy = client.post(reverse("inference:run_estimate"),
                      page_defaults(client.get(reverse("inference:run_new") + "?task=spy-bench").context["form"])).content.decode()
    rows = SpyRow.objects.count()
    assert rows != len(every_kinds_data) and f"{rows} items" in spy  # the set's rows (items), not the 5 CPRT images


def test_api_and_launch_run_take_a_kinds_options_by_name_and_refuse_bad_ones(every_kinds_data, admin_user):
    from inference import launching
    from inference.management.commands.launch_run import Command, run_summary

    options = Command().create_parser("manage.py", "launch_run").parse_args(
        ["--kind", "multipriv-reid", "--provider", "openai", "--model", "gpt-5.1", "--option", "limit=4"])
    form = LaunchForm.from_values(Command.form_data(vars(options)))
    assert form.is_valid(), form.errors
    run = launching.launch_run(admin_user, form.spec(), send=False)
    assert run.options == {"seed": 0, "limit": 4} and run_summary(run)["figures_url"] == f"/benchmarks/multipriv/runs/{run.pk}/"
    bad = LaunchForm.from_values({"task": "multipriv-reid", "provider": "openai", "model_name": "gpt-5.1", "concurrency": 2,
                                  "options": {"limit": 1}})
    assert not bad.is_valid() and "greater than or equal to 2" in str(bad.errors)
    unknown = LaunchForm.from_values({"task": "multipriv-profile", "provider": "openai", "model_name": "gpt-5.1", "concurrency": 2,
                                      "options": {"limit": 4}})
    assert not unknown.is_valid() and "take no option limit" in str(unknown.errors)


def test_launch_run_help_lists_every_registered_kind(capsys):
    from inference.management.commands.launch_run import Command

    parser = Command().create_parser("manage.py", "launch_run")
    text = parser.format_help()
    for key in kinds.KINDS:
        assert key in text


def test_the_readme_command_table_and_the_api_schema_list_every_registered_kind(client_as, admin_user):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `launch_run --kind"))
    assert [key for key in kinds.KINDS if key not in row] == []
    schema = client_as(admin_user).get("/api/schema/").content.decode()
    assert all(key in schema for key in kinds.KINDS) and "figures_url" in schema
