"""Malformed input, in one place: every way data gets in is fed bad bytes and must refuse them clearly.

- API bodies: every API operation that takes a body (found through the URL resolver: a new one
  without a row in BODY_ENDPOINTS fails) x truncated JSON, wrong types, huge values, unknown keys,
  non-UTF-8 bytes, wrong content types, null ... -> 400 (415 for the content type) with a JSON
  message that names the problem.
- API query strings and path ids: every GET operation x bad values of each parameter it declares
  in the OpenAPI schema -> 400 (or 404 for a page or id that does not exist).
- Management commands that read input (every command of our apps is classified in COMMANDS):
  import_vispr, import_cprt (.json, .jsonl, .parquet), score_labels (stdin), create_reviewer ->
  CommandError naming the file and row (or the argument).
- Browser forms that take input: non-UTF-8, oversized and too many fields -> 400, no 500.

Every refusal leaves the stored data as it was: `stored_data()` is the row count and a hash of every
row of every model (and, for imports, the stored image files), compared before and after.
The per-field messages of ordinary bad input are tested beside each feature (test_api.py,
test_import_cprt.py, test_import_vispr.py, test_labeling_views.py, test_inference_views.py,
test_adjudication.py); this file sweeps what those do not.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command, get_commands
from django.urls import reverse
from PIL import Image as PILImage
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import taxonomy
from annotations.api import LabelingWrite
from annotations.faces import jobs as faces_jobs
from annotations.faces.api import JobLaunch
from annotations.faces.models import AnonymizationJob
from core.api import ApiView, EmptyBody
from annotations.models import Annotator, Labeling
from cprt_site import api_urls
from inference import dispatching
from inference.api import RunLaunch
from tests.conftest import png_bytes
from tests.support.permission_cases.scoring import add_results, make_run
from tests.support.bench_rows import make_rows
from tests.support.dispatch import record_sends

JSON = "application/json"
FAKE_KEY = "sk-fake-test-key-not-a-secret"

# Request bookkeeping, not data: a session or a login-attempt log may change on any request.
BOOKKEEPING = {"sessions.Session", "axes.AccessAttempt", "axes.AccessAttemptExpiration", "axes.AccessFailureLog", "axes.AccessLog"}


def stored_data(with_files: bool = False) -> dict:
    """Row count and a hash of all rows, per model (ordered by pk); with_files: the stored image files too."""
    state = {}
    for model in apps.get_models(include_auto_created=True):
        if model._meta.proxy or model._meta.label in BOOKKEEPING:
            continue
        rows = list(model._base_manager.order_by("pk").values_list())
        state[model._meta.label] = (len(rows), hashlib.sha256(repr(rows).encode()).hexdigest())
    if with_files:
        root = Path(django_settings.PRIVATE_IMAGE_ROOT)
        state["stored files"] = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    return state


def changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


# =================================================================================================
# The data the API and form requests act on


@pytest.fixture
def world(admin_user, reviewer_a, adjudicator, make_image, settings, monkeypatch):
    settings.OPENAI_API_KEY = FAKE_KEY  # so that a valid launch passes the form
    # Launches and resumes dispatch on commit, which a test transaction never reaches; stubbed all the same.
    monkeypatch.setattr(dispatching, "dispatch", lambda run_id, image_ids=None: 0)
    images = [make_image(f"2017_mf{i:03d}", color=(i * 40, 10, 10)) for i in range(3)]
    labeling = Labeling.objects.create(image=images[0], annotator=Annotator.for_user(reviewer_a))
    judge = make_run()
    add_results(judge, [(image, "ok", 0.5) for image in images])
    running = make_run(status="running")
    stopped = make_run(status="failed")
    stopped.image_ids, stopped.total_images = [i.pk for i in images], len(images)
    stopped.save(update_fields=["image_ids", "total"])
    record_sends(monkeypatch)  # tasks sent by name (faces jobs) are recorded, never sent
    queued_job = faces_jobs.start_job(adjudicator, split="test", dispatch_task=False)
    stopped_job = faces_jobs.start_job(adjudicator, split="test", dispatch_task=False)
    AnonymizationJob.objects.filter(pk=stopped_job.pk).update(status="cancelled")
    return {
        "users": {"admin": admin_user, "reviewer_a": reviewer_a, "adjudicator": adjudicator},
        "image": images[0], "labeling": labeling, "judge_run": judge, "run": running, "stopped_run": stopped,
        "faces_job": queued_job, "stopped_faces_job": stopped_job,
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
    ("POST", "api:anonymization-list"): BodyEndpoint(
        "adjudicator", None, JobLaunch, lambda: {"split": "test", "method": "blur", "threshold": 0.5, "margin": 0.2}),
    ("POST", "api:anonymization-cancel"): BodyEndpoint("adjudicator", "faces_job", EmptyBody, dict),
    ("POST", "api:anonymization-resume"): BodyEndpoint("adjudicator", "stopped_faces_job", EmptyBody, dict),
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
}
HUGE = {
    "integer": [10**30, -(10**30), 1e308, -1e308],
    "number": [10**30, 1e308, -1e308],
    "boolean": [],
    "string": ["x" * 100_000],
    "object": [{"age": 1e308}, {"age": "x" * 100_000}],
}


def json_type(field) -> str:
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


def path_kwargs(world, route: str) -> dict:
    return {arg: world[PATH_OBJECTS[arg]].pk for arg in re.findall(r"<int:(\w+)>", route)}


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
COMMANDS = {
    "import_vispr": "a folder of images",
    "import_cprt": "a .json, .jsonl or .parquet file",
    "score_labels": "JSON Lines on stdin",
    "create_reviewer": "a user name and an e-mail address",
    "export_hf": None,  # writes files; its arguments are choices and a profile name (test_export_hf.py)
    "export_sft": None,  # writes files; every bad option is refused in tests/scoring/test_sft_export.py
    "seed_demo": None,  # no input
    "run_demo": None,  # a port number (test_demo.py)
    "anonymize_faces": None,  # its arguments are a choice and numbers (tests/annotations/test_faces_jobs.py)
    "batch_export": None,  # a run id and an output path (tests/inference/test_batch_offline.py)
    "batch_ingest": None,  # a run_batch output file: malformed lines in tests/inference/test_batch_offline.py
    "launch_run": None,  # its options are the launch form's fields, refused with its messages (tests/inference/test_launch_run.py)
}


def test_every_command_is_classified():
    ours = {name for name, app in get_commands().items() if app in ("core", "annotations", "inference", "scoring", "demo")}
    assert ours == set(COMMANDS)


# --- import_vispr ---------------------------------------------------------------------------------


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_declaring(width: int, height: int, extra_chunks: bytes = b"") -> bytes:
    """A PNG whose header declares width x height one-bit pixels, with at most 64 rows of data: tiny on disk."""
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    rows = (b"\x00" * (1 + (width + 7) // 8)) * min(height, 64)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) + extra_chunks
            + png_chunk(b"IDAT", zlib.compress(rows, 9)) + png_chunk(b"IEND", b""))


def jpeg_bytes(exif: bytes | None = None) -> bytes:
    buf = io.BytesIO()
    kwargs = {"exif": exif} if exif is not None else {}
    PILImage.new("RGB", (40, 30), (30, 60, 90)).save(buf, format="JPEG", **kwargs)
    return buf.getvalue()


def other_format(fmt: str) -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", (20, 20), (1, 2, 3)).save(buf, format=fmt)
    return buf.getvalue()


# (file name, bytes, what the refusal must say about it)
BAD_IMAGES = [
    ("2017_90000001.png", png_declaring(50_000, 50_000), "decompression bomb"),
    ("2017_90000002.png", png_declaring(7_000, 7_000), "over the 40,000,000-pixel limit"),
    ("2017_90000003.png", png_declaring(64, 64, png_chunk(b"zTXt", b"k\x00\x00" + zlib.compress(b"\x00" * 20_000_000, 9))), "unreadable"),
    ("2017_90000004.jpg", b"this is not a picture", "not an image Pillow can read"),
    ("2017_90000005.png", bytes(range(256)) * 40, "not an image Pillow can read"),
    ("2017_90000006.jpg", b"<!doctype html><html><body>hello</body></html>", "not an image Pillow can read"),
    ("2017_90000007.jpg", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n", "not an image Pillow can read"),
    ("2017_90000008.png", other_format("GIF"), "not an image Pillow can read (JPEG or PNG expected)"),
    ("2017_90000009.jpg", other_format("TIFF"), "not an image Pillow can read (JPEG or PNG expected)"),
    ("2017_90000010.jpg", b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n", "not an image Pillow can read (JPEG or PNG expected)"),
    ("2017_90000011.jpg", jpeg_bytes()[:200], "unreadable or truncated image"),
    ("2017_90000012.png", png_bytes()[:60], "unreadable or truncated image"),
    ("2017_90000013.jpg", b"", "empty file"),
    ("2017_90000014.jpg", b"\xff\xd8\xff" + b"\x00" * 64, "not an image Pillow can read"),
    ("2017_90000015.jpg", jpeg_bytes(exif=b"Exif\x00\x00MM\x00*\x00\x00\x00\x08\xff\xff" + b"\x00" * 20), None),  # garbage EXIF
    ("2017_90000016.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "not an image Pillow can read"),
    ("2017_90000017.jpg", b"\x00" * 300_000, "over the 200,000-byte limit"),
]


def run_import_vispr(folder: Path) -> str:
    out = io.StringIO()
    call_command("import_vispr", str(folder), "--split", "test", stdout=out)
    return out.getvalue()


@pytest.fixture
def image_limits(settings):
    settings.CPRT_MAX_IMAGE_PIXELS = 40_000_000
    settings.CPRT_MAX_IMAGE_BYTES = 200_000


@pytest.mark.django_db
@pytest.mark.filterwarnings("ignore:Corrupt EXIF data")
@pytest.mark.parametrize("name, content, reason", BAD_IMAGES, ids=[b[0] for b in BAD_IMAGES])
def test_import_vispr_refuses_the_whole_folder_for_one_bad_image(tmp_path, image_limits, name, content, reason):
    folder = tmp_path / "test2017"
    folder.mkdir()
    (folder / "2017_10000001.png").write_bytes(png_bytes(color=(1, 99, 3)))  # a good one, which must not be imported either
    (folder / name).write_bytes(content)
    before = stored_data(with_files=True)
    try:
        out = run_import_vispr(folder)
    except CommandError as exc:
        message = str(exc)
    else:
        # Garbage EXIF in an otherwise good JPEG is dropped with all metadata: importing it is right.
        assert reason is None, f"{name} was imported: {out}"
        return
    assert reason is not None, f"{name} was refused: {message}"
    assert "nothing was written" in message and str(folder) in message
    line = next(line for line in message.splitlines() if name in line)
    assert reason in line, line
    assert "2017_10000001.png" not in message
    assert changed(before, stored_data(with_files=True)) == []


@pytest.mark.django_db
def test_import_vispr_lists_every_bad_file_at_once(tmp_path, image_limits):
    folder = tmp_path / "all"
    folder.mkdir()
    for name, content, reason in BAD_IMAGES:
        if reason is not None:
            (folder / name).write_bytes(content)
    before = stored_data(with_files=True)
    with pytest.raises(CommandError) as exc:
        run_import_vispr(folder)
    bad = [name for name, _, reason in BAD_IMAGES if reason is not None]
    assert f"{len(bad)} file(s) cannot be imported" in str(exc.value)
    assert all(name in str(exc.value) for name in bad)
    assert changed(before, stored_data(with_files=True)) == []


@pytest.mark.django_db
def test_import_vispr_names_that_are_not_utf8_are_shown_escaped(tmp_path, image_limits):
    folder = tmp_path / "names"
    folder.mkdir()
    (folder / "2017_10000002.png").write_bytes(png_bytes(color=(5, 5, 5)))
    Path(os.fsdecode(bytes(folder) + b"/caf\xe9.jpg")).write_bytes(png_bytes(color=(6, 6, 6)))
    out = run_import_vispr(folder)
    assert "Images added: 1;" in out and "skipped caf\\xe9.jpg: file name is not a VISPR id" in out
    from core.models import AuditEvent

    assert AuditEvent.objects.get(action="import_vispr").data["skipped_files"] == [
        {"file": "caf\\xe9.jpg", "reason": "file name is not a VISPR id (letters, digits, '_', '.', '-')"}]


# --- import_cprt ----------------------------------------------------------------------------------


def jsonl(rows, mutate=None) -> bytes:
    lines = [json.dumps(r).encode() for r in rows]
    if mutate:
        lines = mutate(lines)
    return b"\n".join(lines) + b"\n"


def row_change(index: int, change: Callable[[dict], None]) -> Callable[[list[bytes]], list[bytes]]:
    def mutate(lines):
        row = json.loads(lines[index])
        change(row)
        lines[index] = json.dumps(row).encode()
        return lines
    return mutate


def raw_line(index: int, raw: bytes) -> Callable[[list[bytes]], list[bytes]]:
    def mutate(lines):
        lines[index] = raw
        return lines
    return mutate


def _set(key, value):
    return lambda row: row.update({key: value})


def _set_level(level: str, attribute: str, value):
    return lambda row: row["binary_labels"][level].update({attribute: value})


ROWS = make_rows(5, seed=7)
# (label, file name, bytes, what the refusal must say)
BAD_BENCH_FILES = [
    ("jsonl truncated", "b.jsonl", jsonl(ROWS)[:-40], "line 5: malformed JSON"),
    ("jsonl a row is a list", "b.jsonl", jsonl(ROWS, raw_line(0, b"[1, 2, 3]")), "line 1: a row must be a JSON object"),
    ("jsonl a row is null", "b.jsonl", jsonl(ROWS, raw_line(0, b"null")), "line 1: a row must be a JSON object"),
    ("jsonl labels are a list", "b.jsonl", jsonl(ROWS, row_change(1, _set("binary_labels", [0, 1]))), "line 2: binary_labels must be an object"),
    ("jsonl labels are 100,000 zeros", "b.jsonl", jsonl(ROWS, row_change(1, _set("binary_labels", [0] * 100_000))), "line 2: binary_labels must be an object"),
    ("jsonl a level group is a list", "b.jsonl", jsonl(ROWS, row_change(1, lambda r: r["binary_labels"].update(level2=[0]))), "line 2: binary_labels.level2 must be an object"),
    ("jsonl level a string", "b.jsonl", jsonl(ROWS, row_change(1, _set("level", "2"))), 'line 2: level "2" is not an integer'),
    ("jsonl level 10**30", "b.jsonl", jsonl(ROWS, row_change(1, _set("level", 10**30))), "line 2: level 1000000000000000000000000000000 is not an integer"),
    ("jsonl level of 5000 digits", "b.jsonl", jsonl(ROWS, raw_line(1, b'{"id": "2017_x", "level": ' + b"9" * 5000 + b"}")), "line 2: malformed JSON: Exceeds the limit"),
    ("jsonl score 1e308", "b.jsonl", jsonl(ROWS, row_change(1, _set("score", 1e308))), "line 2: score 1e+308 is outside [0, 1]"),
    ("jsonl score 1e400", "b.jsonl", jsonl(ROWS, raw_line(1, jsonl(ROWS[1:2]).strip()[:-1] + b', "score": 1e400}')), "line 2: score Infinity is not a number"),
    ("jsonl score a list", "b.jsonl", jsonl(ROWS, row_change(1, _set("score", [0.5]))), "line 2: score [0.5] is not a number"),
    ("jsonl label a string", "b.jsonl", jsonl(ROWS, row_change(1, _set_level("level1", "biometrics", "1"))), 'binary_labels.level1.biometrics = "1"'),
    ("jsonl label 10**30", "b.jsonl", jsonl(ROWS, row_change(1, _set_level("level1", "biometrics", 10**30))), "binary_labels.level1.biometrics = 1000000000000000000000000000000"),
    ("jsonl id a number", "b.jsonl", jsonl(ROWS, row_change(1, _set("id", 123))), "line 2: id 123 is not a VISPR id"),
    ("jsonl id an object", "b.jsonl", jsonl(ROWS, row_change(1, _set("id", {"a": 1}))), 'line 2: id {"a": 1} is not a VISPR id'),
    ("jsonl id of 2 MB", "b.jsonl", jsonl(ROWS, row_change(1, _set("id", "x" * 2_000_000))), 'line 2: id "xxxx'),
    ("jsonl an unknown attribute", "b.jsonl", jsonl(ROWS, row_change(1, _set_level("level4", "colour", 1))), "line 2: unknown attribute 'colour'"),
    ("jsonl a 2 MB unknown attribute", "b.jsonl", jsonl(ROWS, row_change(1, _set_level("level4", "k" * 2_000_000, 1))), "line 2: unknown attribute 'kkkk"),
    ("jsonl an unknown level", "b.jsonl", jsonl(ROWS, row_change(1, lambda r: r["binary_labels"].update(level9={}))), "line 2: unknown level 'level9'"),
    ("jsonl non-UTF-8", "b.jsonl", jsonl(ROWS, raw_line(2, b'{"id": "caf\xe9"}')), "line 3: not UTF-8"),
    ("jsonl UTF-16", "b.jsonl", "\n".join(json.dumps(r) for r in ROWS).encode("utf-16"), "line 1: not UTF-8"),
    ("jsonl nested 100,000 deep", "b.jsonl", jsonl(ROWS, raw_line(1, b"[" * 100_000 + b"]" * 100_000)), "line 2: malformed JSON: nested too deeply"),
    ("jsonl an escaped lone surrogate id", "b.jsonl", jsonl(ROWS, row_change(1, _set("id", "\ud800"))), 'line 2: id "\\ud800" is not a VISPR id'),
    ("jsonl empty", "b.jsonl", b"", "no rows"),
    ("jsonl blank lines only", "b.jsonl", b"\n \n\t\n", "no rows"),
    ("jsonl a PNG", "b.jsonl", png_bytes(), "not UTF-8"),
    ("json truncated", "b.json", json.dumps(ROWS).encode()[:-10], "malformed JSON"),
    ("json an object, not a list", "b.json", json.dumps(ROWS[0]).encode(), "must hold a JSON list"),
    ("json a list of numbers", "b.json", b"[1, 2]", "row 1: a row must be a JSON object"),
    ("json non-UTF-8", "b.json", json.dumps(ROWS).encode()[:-1] + b', "\xff"]', "not UTF-8"),
    ("json nested 100,000 deep", "b.json", b"[" * 100_000 + b"]" * 100_000, "malformed JSON: nested too deeply"),
    ("json a 5000-digit number", "b.json", b"[" + b"9" * 5000 + b"]", "malformed JSON: Exceeds the limit"),
    ("json empty", "b.json", b"", "malformed JSON"),
    ("json NaN score", "b.json", json.dumps([{**ROWS[0], "score": float("nan")}]).encode(), "row 1: score NaN is not a number"),
    ("json a PNG", "b.json", png_bytes(), "not UTF-8"),
    ("parquet garbage", "b.parquet", b"PAR1" + bytes(range(256)) + b"PAR1", "not a readable parquet file"),
    ("parquet empty", "b.parquet", b"", "not a readable parquet file"),
    ("parquet a PNG", "b.parquet", png_bytes(), "not a readable parquet file"),
]


def parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _parquet_cases() -> list:
    good = pa.Table.from_pylist(ROWS)
    def column(name, array):
        return good.set_column(good.schema.get_field_index(name), name, array)
    n = len(ROWS)
    return [
        ("parquet truncated", "b.parquet", parquet_bytes(good)[: len(parquet_bytes(good)) // 2], "not a readable parquet file"),
        ("parquet level as text", "b.parquet", parquet_bytes(column("level", pa.array([str(r["level"]) for r in ROWS]))), 'row 1: level "'),
        ("parquet id as bytes", "b.parquet", parquet_bytes(column("id", pa.array([r["id"].encode() for r in ROWS], pa.binary()))), "row 1: id b'2017_"),
        ("parquet score as a decimal", "b.parquet", parquet_bytes(column("score", pa.array([0] * n, pa.decimal128(5, 2)))), "row 1: score Decimal('0.00') is not a number"),
        ("parquet level as a date", "b.parquet", parquet_bytes(column("level", pa.array([0] * n, pa.date32()))), "row 1: level datetime.date(1970, 1, 1)"),
        ("parquet score 1e308", "b.parquet", parquet_bytes(column("score", pa.array([1e308] * n))), "row 1: score 1e+308 is outside [0, 1]"),
        ("parquet without the score", "b.parquet", parquet_bytes(good.drop_columns(["score"])), "row 1: missing score"),
        ("parquet labels as a map", "b.parquet", parquet_bytes(column("binary_labels", pa.array([[("level1", 1)]] * n, pa.map_(pa.string(), pa.int64())))), "row 1: binary_labels must be an object"),
    ]


BAD_BENCH_FILES += _parquet_cases()


def bench_before(tmp_path) -> None:
    """Something stored already, so that 'unchanged' means more than 'still empty'."""
    path = tmp_path / "earlier.jsonl"
    path.write_bytes(jsonl(make_rows(30, seed=3)))
    call_command("import_cprt", str(path), "--split", "test", "--profile", "earlier", stdout=io.StringIO())


@pytest.mark.django_db
@pytest.mark.parametrize("label, name, content, message", BAD_BENCH_FILES, ids=[b[0] for b in BAD_BENCH_FILES])
def test_import_cprt_refuses_the_whole_file(tmp_path, label, name, content, message):
    bench_before(tmp_path)
    path = tmp_path / name
    path.write_bytes(content)
    before = stored_data()
    with pytest.raises(CommandError) as exc:
        call_command("import_cprt", str(path), "--split", "test", stdout=io.StringIO())
    text = str(exc.value)
    assert str(path) in text and "nothing was written" in text, text[:500]
    assert message in text, text[:2000]
    assert len(text) < 5_000, "a huge value must not make a huge message"
    assert changed(before, stored_data()) == []


# --- score_labels ---------------------------------------------------------------------------------

ONE_ROW = jsonl(ROWS[:1]).strip()
BAD_STDIN = [
    ("truncated", ONE_ROW + b"\n" + ONE_ROW[:-20], "line 2: malformed JSON"),
    ("non-UTF-8", ONE_ROW + b"\n" + b'{"id": "caf\xe9"}', "line 2: not UTF-8"),
    ("nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000, "line 1: malformed JSON: nested too deeply"),
    ("a 5000-digit number", ONE_ROW[:-1] + b', "n": ' + b"9" * 5000 + b"}", "line 1: malformed JSON: Exceeds the limit"),
    ("NaN in a passed-through field", ONE_ROW[:-1] + b', "n": NaN}', "line 1: malformed JSON: NaN is not a number JSON allows"),
    ("1e400 in a passed-through field", ONE_ROW[:-1] + b', "n": 1e400}', "line 1: malformed JSON: the number 1e400 is out of range"),
    ("a lone surrogate in a passed-through field", ONE_ROW[:-1] + b', "n": "\\udc80"}', "line 1: a string holds an escaped lone surrogate"),
    ("a row that is a list", b"[1, 2]", "line 1: a row must be a JSON object"),
    ("labels that are a string", json.dumps({"binary_labels": "x" * 1000}).encode(), "line 1: binary_labels must be an object"),
    ("an unknown attribute", json.dumps({"binary_labels": {**ROWS[0]["binary_labels"], "level4": {"colour": 1}}}).encode(), "unknown attribute 'colour'"),
    ("a label of 10**30", json.dumps({"binary_labels": {**ROWS[0]["binary_labels"], "level1": {**ROWS[0]["binary_labels"]["level1"], "biometrics": 10**30}}}).encode(), "biometrics = 1000000000000000000000000000000"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("label, raw, message", BAD_STDIN, ids=[b[0] for b in BAD_STDIN])
def test_score_labels_refuses_bad_lines_and_writes_nothing(label, raw, message):
    out = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("score_labels", "--bounds", "0.8,0.5,0.2", stdin=io.BytesIO(raw + b"\n"), stdout=out, stderr=io.StringIO())
    assert message in str(exc.value), str(exc.value)[:1000]
    assert out.getvalue() == ""


# --- create_reviewer ------------------------------------------------------------------------------

BAD_ACCOUNTS = [
    (("x" * 10_000, "--role", "reviewer"), "Invalid user name 'xxxx"),
    (("bad\x00name", "--role", "reviewer"), "Invalid user name"),
    (("bad\udcffname", "--role", "reviewer"), "Invalid user name"),
    (("   ", "--role", "reviewer"), "must not be empty"),
    (("carol", "--role", "reviewer", "--email", "a" * 250 + "@example.org"), "Invalid e-mail address"),
    (("carol", "--role", "reviewer", "--email", "x" * 10_000), "Invalid e-mail address 'xxxx"),
    (("carol", "--role", "reviewer", "--email", "carol\x00@example.org"), "Invalid e-mail address"),
    (("carol", "--role", "superuser"), "invalid choice"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("args, message", BAD_ACCOUNTS, ids=range(len(BAD_ACCOUNTS)))
def test_create_reviewer_refuses_bad_arguments(args, message):
    before = stored_data()
    with pytest.raises(CommandError) as exc:
        call_command("create_reviewer", *args, stdout=io.StringIO())
    assert message in str(exc.value) and len(str(exc.value)) < 1000, str(exc.value)[:300]
    assert changed(before, stored_data()) == []


# =================================================================================================
# Browser forms (their ordinary bad input is tested per view; here, bytes that are not a form at all)

FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class FormEndpoint:
    persona: str
    path_object: str | None
    fields: Callable[[], dict]  # field name -> value of an acceptable post
    refused_with: int = 400  # how the view answers a form it refuses


FORM_ENDPOINTS = {
    "annotations:labeling_draft": FormEndpoint("reviewer_a", "labeling", lambda: {"version": "1", "value-age": "1", "note": "n"}),
    "annotations:labeling_submit": FormEndpoint("reviewer_a", "labeling", lambda: {"version": "1", **{f"value-{k}": "0" for k in taxonomy.active().keys}}),
    "annotations:preferences": FormEndpoint("reviewer_a", None, lambda: {"blur_images_by_default": "on"}),
    "annotations:password_change": FormEndpoint("reviewer_a", None, lambda: {"old_password": "x", "new_password1": "y", "new_password2": "y"}),
    "inference:run_new": FormEndpoint("admin", None, lambda: {k: str(v) for k, v in LAUNCH.items() if v not in ("", False)}),
    # The estimate is an htmx partial: htmx swaps only 2xx answers, so a refused form comes back with 200.
    "inference:run_estimate": FormEndpoint("admin", None, lambda: {k: str(v) for k, v in LAUNCH.items() if v not in ("", False)}, 200),
    "scoring:adjudicate": FormEndpoint("adjudicator", "image", lambda: {"attribute": "age", "value": "1", "note": "n"}),
    "faces:jobs": FormEndpoint("adjudicator", None, lambda: {"split": "", "method": "blur", "threshold": "0.5", "margin": "0.2"}),
    "scoring:export_sft": FormEndpoint("admin", None, lambda: {"sft-format": "hf", "sft-prompt_version": "judge-v1", "sft-split": "train",
                                                               "sft-faces": "original"}),
}


def _not_utf8(fields: dict) -> bytes:
    return b"&".join(f"{k}={v}".encode() + b"\xff\xfe" for k, v in fields.items())


def _not_utf8_escaped(fields: dict) -> bytes:
    return b"&".join(f"{k}={v}%FF%FE".encode() for k, v in fields.items())


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
