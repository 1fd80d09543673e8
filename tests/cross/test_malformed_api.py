"""Malformed input through the API and the browser forms: every way data gets in over HTTP is fed bad bytes
and must refuse them clearly (the management commands: test_malformed_commands.py).

- API bodies: every API operation that takes a body (found through the URL resolver: a new one
  without a row in BODY_ENDPOINTS fails) x truncated JSON, wrong types, huge values, unknown keys,
  non-UTF-8 bytes, wrong content types, null ... -> 400 (415 for the content type) with a JSON
  message that names the problem.
- API query strings and path ids: every GET operation x bad values of each parameter it declares
  in the OpenAPI schema -> 400 (or 404 for a page or id that does not exist).
- Browser forms that take input: non-UTF-8, oversized and too many fields -> 400, no 500.

Every refusal leaves the stored data as it was (`tests.support.stored.stored_data`, compared before
and after). The per-field messages of ordinary bad input are tested beside each feature (test_api.py,
test_labeling_views.py, test_inference_views.py, test_adjudication.py); this file sweeps what those do not.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Callable

import pytest
from django.urls import reverse
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import taxonomy
from annotations.api import LabelingWrite
from annotations.faces import jobs as faces_jobs
from annotations.faces.api import JobLaunch
from annotations.faces.models import AnonymizationJob
from core.api import ApiView, EmptyBody
from core.idempotency import SUBMISSION_FIELD
from annotations.models import Annotator, Labeling
from cprt_site import api_urls
from inference import dispatching
from inference.api import RunLaunch
from tests.conftest import with_submission_token
from tests.support.permission_cases.scoring import add_results, make_run

from annotations.datasets.api import DatasetLaunch
from annotations.datasets.models import DatasetBuild
from scoring.models import ExportJob, ImportJob, ScoringProfile
from scoring.jobs_api import ExportLaunch, ImportLaunch
from tests.support.dispatch import record_sends
from tests.support.vispr_release import write_release
from tests.support.vispr_world import make_world
from tests.support.stored import changed, stored_data

JSON = "application/json"
FAKE_KEY = "sk-fake-test-key-not-a-secret"


# =================================================================================================
# The data the API and form requests act on


@pytest.fixture
def world(admin_user, reviewer_a, adjudicator, make_image, settings, monkeypatch, tmp_path):
    settings.OPENAI_API_KEY = FAKE_KEY  # so that a valid launch passes the form
    settings.CPRT_IMPORT_ROOT = tmp_path / "imports"  # a folder a valid import names
    write_release(settings.CPRT_IMPORT_ROOT / "vispr", {"test2017": {"2017_10000001": ["a4_gender"]}})
    make_world()  # VISPR images a valid dataset build selects
    settings.CPRT_EXPORT_ROOT = tmp_path / "exports"
    settings.CPRT_PROTECTED_ROOTS = {**settings.CPRT_PROTECTED_ROOTS, "exports": settings.CPRT_EXPORT_ROOT}
    (settings.CPRT_EXPORT_ROOT / "e1.zip").parent.mkdir(parents=True)
    (settings.CPRT_EXPORT_ROOT / "e1.zip").write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip
    # Launches and resumes dispatch on commit, which a test transaction never reaches; stubbed all the same.
    monkeypatch.setattr(dispatching, "dispatch", lambda run_id, image_ids=None: 0)
    images = [make_image(f"2017_mf{i:03d}", color=(i * 40, 10, 10)) for i in range(3)]
    labeling = Labeling.objects.create(image=images[0], annotator=Annotator.for_user(reviewer_a))
    judge = make_run()
    add_results(judge, [(image, "ok", 0.5) for image in images])
    running = make_run(status="running")
    stopped = make_run(status="failed")
    stopped.image_ids = stopped.item_ids = [i.pk for i in images]
    stopped.total_images = len(images)
    stopped.save(update_fields=["image_ids", "item_ids", "total"])
    with_errors = make_run()
    add_results(with_errors, [(images[0], "ok", 0.5), (images[1], "error", None)])
    record_sends(monkeypatch)  # tasks sent by name (faces jobs) are recorded, never sent
    queued_job = faces_jobs.start_job(adjudicator, split="test", dispatch_task=False)
    stopped_job = faces_jobs.start_job(adjudicator, split="test", dispatch_task=False)
    AnonymizationJob.objects.filter(pk=stopped_job.pk).update(status="cancelled")
    return {
        "users": {"admin": admin_user, "reviewer_a": reviewer_a, "adjudicator": adjudicator},
        "image": images[0], "labeling": labeling, "judge_run": judge, "run": running, "stopped_run": stopped,
        "run_with_errors": with_errors,
        "faces_job": queued_job, "stopped_faces_job": stopped_job,
        "export_job": ExportJob.objects.create(splits=["test"], profile=ScoringProfile.active(), status="finished", zip_path="e1.zip"),
        "import_job": ImportJob.objects.create(kind="vispr", path="vispr", status="finished"),
        "dataset_build": DatasetBuild.objects.create(name="api-build", status="queued"),
    }


def api_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


# =================================================================================================
# API bodies


@dataclass(frozen=True)
class BodyEndpoint:
    persona: str  # who sends it
    path_object: str | None  # world key of the object in the path
    serializer: type  # what the body must be
    valid: Callable[[], dict]  # a body the endpoint accepts


def labeling_write() -> dict:
    return {"version": 1, "values": {"age": 1, "gov_ids": 0.5}, "rationales": {"age": "a face"}, "note": "n", "flag": ""}


def submission() -> dict:
    return {**labeling_write(), "values": {k: 0 for k in taxonomy.active().keys}}


LAUNCH = {"task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "taxonomy", "counterfactual_faces": False,
          "prompt_version": "", "split": "test", "sample_size": 2, "seed": 1, "concurrency": 4}

BODY_ENDPOINTS = {
    ("POST", "api:labeling-list"): BodyEndpoint("reviewer_a", None, EmptyBody, dict),
    ("PUT", "api:labeling-detail"): BodyEndpoint("reviewer_a", "labeling", LabelingWrite, labeling_write),
    ("POST", "api:labeling-submit"): BodyEndpoint("reviewer_a", "labeling", LabelingWrite, submission),
    ("POST", "api:labeling-skip"): BodyEndpoint("reviewer_a", "labeling", EmptyBody, dict),
    ("POST", "api:run-list"): BodyEndpoint("admin", None, RunLaunch, lambda: dict(LAUNCH)),
    ("POST", "api:run-cancel"): BodyEndpoint("admin", "run", EmptyBody, dict),
    ("POST", "api:run-resume"): BodyEndpoint("admin", "stopped_run", EmptyBody, dict),
    ("POST", "api:run-retry-failed"): BodyEndpoint("admin", "run_with_errors", EmptyBody, dict),
    ("POST", "api:anonymization-list"): BodyEndpoint(
        "adjudicator", None, JobLaunch, lambda: {"split": "test", "method": "blur", "threshold": 0.5, "margin": 0.2}),
    ("POST", "api:anonymization-cancel"): BodyEndpoint("adjudicator", "faces_job", EmptyBody, dict),
    ("POST", "api:anonymization-resume"): BodyEndpoint("adjudicator", "stopped_faces_job", EmptyBody, dict),
    ("POST", "api:export-list"): BodyEndpoint("admin", None, ExportLaunch, lambda: {"splits": ["test"], "include_annotations": True}),
    ("POST", "api:import-list"): BodyEndpoint("admin", None, ImportLaunch, lambda: {"kind": "vispr", "path": "vispr", "split": "test"}),
    ("POST", "api:dataset-list"): BodyEndpoint("admin", None, DatasetLaunch,
                                               lambda: {"name": "api-v1", "preset": "cprt-paper", "vispr_split": "test", "seed": 1}),
}


def api_views():
    """(url name, route, view class) of every API URL."""
    for pattern in api_urls.urlpatterns:
        yield f"api:{pattern.name}", str(pattern.pattern), pattern.callback.view_class


def test_every_api_endpoint_that_takes_a_body_has_a_row():
    takes_body = {(method.upper(), name) for name, _, view in api_views() for method in ("post", "put", "patch") if hasattr(view, method)}
    assert takes_body == set(BODY_ENDPOINTS)


def endpoint_url(world, key) -> str:
    _, name = key
    obj = BODY_ENDPOINTS[key].path_object
    if obj is None:
        return reverse(name)
    kwarg = {"labeling": "labeling_id", "faces_job": "job_id", "stopped_faces_job": "job_id"}.get(obj, "run_id")
    return reverse(name, kwargs={kwarg: world[obj].pk})


def _form_multipart() -> tuple[bytes, str]:
    return b'--xx\r\nContent-Disposition: form-data; name="version"\r\n\r\n1\r\n--xx--\r\n', "multipart/form-data; boundary=xx"


def _json(value, **kwargs) -> bytes:
    return json.dumps(value, **kwargs).encode()


def _with(valid: dict, raw_member: bytes) -> bytes:
    """The valid body with one more member, given as raw JSON bytes (`"key": value`)."""
    body = _json(valid)
    return body[:-1] + (b", " if valid else b"") + raw_member + b"}"


# (label, body builder: valid body -> (bytes, content type), status, fragment the JSON answer must contain)
GENERIC_BODIES = [
    ("truncated JSON", lambda v: (_json(v)[:-1], JSON), 400, "not valid JSON"),
    ("cut in the middle", lambda v: (_json(v)[: len(_json(v)) // 2], JSON), 400, "not valid JSON"),
    ("a list for the object", lambda v: (_json([v]), JSON), 400, "Expected a dictionary"),
    ("a string for the object", lambda v: (b'"version"', JSON), 400, "Expected a dictionary"),
    ("a number for the object", lambda v: (b"42", JSON), 400, "Expected a dictionary"),
    ("null", lambda v: (b"null", JSON), 400, "No data provided"),
    ("an unknown key", lambda v: (_json({**v, "colour": "red"}), JSON), 400, "Unknown field(s): colour"),
    ("a NUL in an unknown key", lambda v: (_json({**v, "\x00": 1}), JSON), 400, "Unknown field(s)"),
    ("10,000 unknown keys", lambda v: (_json({**v, **{f"k{i}": 0 for i in range(10_000)}}, separators=(",", ":")), JSON), 400, "and 9990 more"),
    ("non-UTF-8 bytes", lambda v: (_with(v, b'"x": "\xff\xfe"'), JSON), 400, "not valid UTF-8"),
    ("Latin-1, declared", lambda v: (_with(v, '"x": "caf\xe9"'.encode("latin-1")), JSON + "; charset=latin-1"), 400, "not valid UTF-8"),
    ("UTF-16", lambda v: (json.dumps(v).encode("utf-16"), JSON), 400, "not valid UTF-8"),
    ("a byte order mark", lambda v: (b"\xef\xbb\xbf" + _json(v), JSON), 400, "not valid JSON"),
    ("an escaped lone surrogate in a value", lambda v: (_with(v, b'"x": "\\ud800"'), JSON), 400, "lone surrogate"),
    ("an escaped lone surrogate in a key", lambda v: (_with(v, b'"\\udfff": 1'), JSON), 400, "lone surrogate"),
    ("NaN", lambda v: (_with(v, b'"x": NaN'), JSON), 400, "not valid JSON"),
    ("-Infinity", lambda v: (_with(v, b'"x": -Infinity'), JSON), 400, "not valid JSON"),
    ("1e400 (not finite)", lambda v: (_with(v, b'"x": 1e400'), JSON), 400, "out of range"),
    ("a 5000-digit integer", lambda v: (_with(v, b'"x": ' + b"9" * 5000), JSON), 400, "not valid JSON"),
    ("nesting 5000 deep", lambda v: (_with(v, b'"x": ' + b"[" * 5000 + b"]" * 5000), JSON), 400, "not valid JSON"),
    ("a 2 MB string", lambda v: (_json({**v, "note": "x" * 2_000_000}), JSON), 400, "larger than"),
    ("a 100,000-element list", lambda v: (_json([0] * 100_000, separators=(",", ":")), JSON), 400, "Expected a dictionary"),
    ("100,000 keys", lambda v: (_json({f"k{i}": 0 for i in range(100_000)}), JSON), 400, "larger than"),
    ("text/plain", lambda v: (_json(v), "text/plain"), 415, "Unsupported media type"),
    ("a form", lambda v: (b"version=1", "application/x-www-form-urlencoded"), 415, "Unsupported media type"),
    ("multipart", lambda v: _form_multipart(), 415, "Unsupported media type"),
    ("XML", lambda v: (b"<version>1</version>", "application/xml"), 415, "Unsupported media type"),
    ("no content type", lambda v: (_json(v), ""), 415, "Unsupported media type"),
]

# Values of the wrong JSON type, and huge ones, per JSON type a field expects.
WRONG_TYPE = {
    "integer": ["1", 1.5, True, [1], {"n": 1}],
    "number": ["0.5", True, [0.5], {"n": 0.5}],
    "boolean": ["true", 1, [True], {"b": True}],
    "string": [1, 0.5, True, ["x"], {"x": "y"}],
    "object": [[1, 2], "x", 1, True],
    "array": ["x", 1, True, {"x": "y"}, [1], [["x"]]],
}
HUGE = {
    "integer": [10**30, -(10**30), 1e308, -1e308],
    "number": [10**30, 1e308, -1e308],
    "boolean": [],
    "string": ["x" * 100_000],
    "object": [{"age": 1e308}, {"age": "x" * 100_000}],
    "array": [["x" * 100_000]],
}


def json_type(field) -> str:
    if isinstance(field, serializers.ListField):
        return "array"
    if isinstance(field, serializers.BooleanField):
        return "boolean"
    if isinstance(field, serializers.IntegerField):
        return "integer"
    if isinstance(field, serializers.FloatField):
        return "number"
    if isinstance(field, serializers.DictField):
        return "object"
    if isinstance(field, (serializers.CharField, serializers.ChoiceField)):
        return "string"
    raise AssertionError(f"no malformed values for {field!r} yet: add its JSON type here")


def field_bodies(endpoint: BodyEndpoint) -> list[tuple[str, dict, str]]:
    """(label, body, the field the answer must name) for every field of the body's serializer."""
    valid = endpoint.valid()
    out = []
    for name, field in endpoint.serializer().fields.items():
        kind = json_type(field)
        for bad in WRONG_TYPE[kind] + HUGE[kind]:
            out.append((f"{name} = {json.dumps(bad)[:40]}", {**valid, name: bad}, name))
        if not field.allow_null:
            out.append((f"{name} = null", {**valid, name: None}, name))
        if field.required:
            out.append((f"{name} missing", {k: v for k, v in valid.items() if k != name}, name))
    return out


def send(client, method: str, url: str, raw: bytes, content_type: str):
    return client.generic(method, url, raw, content_type=content_type)


def refusal_problems(response, status: int, fragment: str, before: dict) -> list[str]:
    problems = []
    if response.status_code != status:
        problems.append(f"status {response.status_code}, expected {status}")
    if not response.get("Content-Type", "").startswith(JSON):
        problems.append(f"answered {response.get('Content-Type')!r}, not JSON")
    else:
        text = json.dumps(response.json())
        if fragment not in text:
            problems.append(f"the answer does not say {fragment!r}: {text[:300]}")
    moved = changed(before, stored_data())
    if moved:
        problems.append(f"stored data changed: {moved}")
    return problems


@pytest.mark.parametrize("key", list(BODY_ENDPOINTS), ids=lambda k: f"{k[0]} {k[1]}")
def test_api_bodies_malformed_are_refused_and_change_nothing(world, key):
    endpoint = BODY_ENDPOINTS[key]
    method, _ = key
    client = api_client(world["users"][endpoint.persona])
    url = endpoint_url(world, key)
    valid = endpoint.valid()
    failures = []
    cases = [(label, *build(valid), status, fragment) for label, build, status, fragment in GENERIC_BODIES]
    cases += [(label, _json(body), JSON, 400, field) for label, body, field in field_bodies(endpoint)]
    for label, raw, content_type, status, fragment in cases:
        before = stored_data()
        response = send(client, method, url, raw, content_type)
        failures += [f"{label}: {p}" for p in refusal_problems(response, status, fragment, before)]
    assert not failures, f"{method} {url}:\n" + "\n".join(failures)


@pytest.mark.parametrize("key", list(BODY_ENDPOINTS), ids=lambda k: f"{k[0]} {k[1]}")
def test_api_bodies_the_valid_body_is_accepted(world, key):
    """The refusals above are the malformations' doing: the same endpoint takes the valid body."""
    endpoint = BODY_ENDPOINTS[key]
    response = send(api_client(world["users"][endpoint.persona]), key[0], endpoint_url(world, key), _json(endpoint.valid()), JSON)
    assert 200 <= response.status_code < 300, response.content[:500]


# =================================================================================================
# API query strings and path ids


def _schema_query_parameters() -> dict[str, list[str]]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {path: [p["name"] for p in ops["get"].get("parameters", []) if p["in"] == "query"]
            for path, ops in schema["paths"].items() if "get" in ops}


def get_endpoints() -> list[tuple[str, str, str]]:
    """(url name, route, schema path) of every GET operation of our API views."""
    return [(name, route, "/api/" + re.sub(r"<int:(\w+)>", r"{\1}", route))
            for name, route, view in api_views() if issubclass(view, ApiView) and hasattr(view, "get")]


PATH_OBJECTS = {"image_id": "image", "labeling_id": "labeling", "run_id": "judge_run", "job_id": "faces_job"}
BAD_QUERY_VALUES = ["abc", "0", "-1", "1.5", "9" * 40, "", "%FF%FE", "%00", "x" * 5000, "1%200"]


ROUTE_OBJECTS = {"exports/": "export_job", "imports/": "import_job", "datasets/": "dataset_build"}  # job ids of other job types


def path_kwargs(world, route: str) -> dict:
    def key(arg):
        return next((obj for prefix, obj in ROUTE_OBJECTS.items() if route.startswith(prefix)), None) or PATH_OBJECTS[arg]

    return {arg: world[key(arg)].pk for arg in re.findall(r"<int:(\w+)>", route)}


def test_api_query_strings_and_path_ids_malformed_are_refused(world):
    parameters = _schema_query_parameters()
    failures = []
    for name, route, schema_path in get_endpoints():
        kwargs = path_kwargs(world, route)
        url = reverse(name, kwargs=kwargs)
        persona = "reviewer_a" if "labeling" in name else "admin"  # a labeling is its owner's; the rest is open to admins
        client = api_client(world["users"][persona])
        assert client.get(url).status_code == 200, f"{url} must answer 200 to a plain GET for the cases to mean anything"
        cases = [(f"{url}?colour=red", 400, "colour")]
        for param in parameters[schema_path]:
            cases += [(f"{url}?{param}={value}", 400, param) for value in BAD_QUERY_VALUES]
            cases.append((f"{url}?{param}=1&{param}=2", 400, "once"))
        if "page" in parameters[schema_path]:
            cases.append((f"{url}?page=999999", 404, "Invalid page"))
        for arg in kwargs:
            cases += [(reverse(name, kwargs={**kwargs, arg: bad_id}), 404, "No such") for bad_id in (0, 10**30)]
        for target, status, fragment in cases:
            before = stored_data()
            response = client.get(target)
            failures += [f"GET {target[:120]}: {p}" for p in refusal_problems(response, status, fragment, before)]
    assert not failures, "\n".join(failures)


# =================================================================================================
# Management commands

# Every command of our apps: reads input (tested below) or takes none worth fuzzing, and why.

FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class FormEndpoint:
    persona: str
    path_object: str | None
    fields: Callable[[], dict]  # field name -> value of an acceptable post
    refused_with: int = 400  # how the view answers a form it refuses


FORM_ENDPOINTS = {
    "annotations:labeling_draft": FormEndpoint("reviewer_a", "labeling", lambda: {"version": "1", "value-age": "1", "note": "n"}),
    "annotations:labeling_submit": FormEndpoint("reviewer_a", "labeling",
                                                lambda: {"version": "1", **{f"value-{k}": "0" for k in taxonomy.active().keys}}),
    "annotations:preferences": FormEndpoint("reviewer_a", None, lambda: {"blur_images_by_default": "on"}),
    "annotations:password_change": FormEndpoint("reviewer_a", None, lambda: {"old_password": "x", "new_password1": "y", "new_password2": "y"}),
    # Launch forms carry the page's one-time token (a POST without it is refused before the form is read).
    "inference:run_new": FormEndpoint("admin", None, lambda: with_submission_token({k: str(v) for k, v in LAUNCH.items() if v not in ("", False)})),
    # The estimate is an htmx partial: htmx swaps only 2xx answers, so a refused form comes back with 200.
    "inference:run_estimate": FormEndpoint("admin", None, lambda: {k: str(v) for k, v in LAUNCH.items() if v not in ("", False)}, 200),
    "scoring:adjudicate": FormEndpoint("adjudicator", "image", lambda: {"attribute": "age", "value": "1", "note": "n"}),
    "faces:jobs": FormEndpoint("adjudicator", None,
                               lambda: with_submission_token({"split": "", "method": "blur", "threshold": "0.5", "margin": "0.2"})),
    "scoring:export_sft": FormEndpoint("admin", None, lambda: with_submission_token({"sft-format": "hf", "sft-prompt_version": "judge-v1",
                                                                                     "sft-split": "train", "sft-faces": "original"})),
}


def _not_utf8(fields: dict) -> bytes:  # every value but the page's token, which the browser sends as the page made it
    return b"&".join(f"{k}={v}".encode() + (b"" if k == SUBMISSION_FIELD else b"\xff\xfe") for k, v in fields.items())


def _not_utf8_escaped(fields: dict) -> bytes:
    return b"&".join(f"{k}={v}{'' if k == SUBMISSION_FIELD else '%FF%FE'}".encode() for k, v in fields.items())


def _huge(fields: dict) -> bytes:
    return "&".join(f"{k}={v}" for k, v in fields.items()).encode() + b"&note=" + b"x" * (6 * 1024 * 1024)


def _many_fields(fields: dict) -> bytes:
    return "&".join(f"{k}={v}" for k, v in fields.items()).encode() + b"".join(b"&f%d=1" % i for i in range(5000))


# (label, body builder, refused before the view: Django answers 400 whatever the view does)
FORM_BODIES = [
    ("every value ends in bytes that are not UTF-8", _not_utf8, False),
    ("every value ends in percent-escapes that are not UTF-8", _not_utf8_escaped, False),
    ("a 6 MiB body", _huge, True),  # over DATA_UPLOAD_MAX_MEMORY_SIZE
    ("5000 fields", _many_fields, True),  # over DATA_UPLOAD_MAX_NUMBER_FIELDS
]

def _form_cases():
    for name in FORM_ENDPOINTS:
        for label, build, early in FORM_BODIES:
            yield pytest.param(name, build, early, id=f"{name} {label}")


def form_url(world, name: str) -> str:
    obj = FORM_ENDPOINTS[name].path_object
    if obj is None:
        return reverse(name)
    return reverse(name, kwargs={f"{obj}_id": world[obj].pk})


@pytest.mark.parametrize("name, build, early", list(_form_cases()))
def test_browser_forms_refuse_bytes_that_are_not_a_form(world, client, name, build, early):
    endpoint = FORM_ENDPOINTS[name]
    client.force_login(world["users"][endpoint.persona])
    before = stored_data()
    response = client.generic("POST", form_url(world, name), build(endpoint.fields()), content_type=FORM)
    assert response.status_code == (400 if early else endpoint.refused_with)
    body = response.content.lower()
    assert b"error" in body or b"bad request" in body, body[:300]
    assert changed(before, stored_data()) == []
