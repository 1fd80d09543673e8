"""The embedded demo: seed_demo's data, its idempotence and refusals, and run_demo end to end."""
from __future__ import annotations

import hashlib
import http.cookiejar
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from PIL import Image as PILImage

from annotations import taxonomy
from demo import seeding as demo
from annotations.models import Annotator, Image, Label, Labeling
from core.models import AuditEvent, Profile
from core.roles import role_of
from scoring.models import ImageScore, ScoringProfile

ROOT = Path(__file__).resolve().parents[2]


def seed(**options) -> str:
    out = io.StringIO()
    call_command("seed_demo", stdout=out, **options)
    return out.getvalue()


def counts() -> dict:
    return {
        "images": Image.objects.count(),
        "labels": Label.objects.count(),
        "labelings": Labeling.objects.count(),
        "annotators": Annotator.objects.count(),
        "users": get_user_model().objects.count(),
        "profiles": Profile.objects.count(),
        "scores": ImageScore.objects.count(),
        "audit": AuditEvent.objects.count(),
    }


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Seeding hashes three demo passwords; the production hasher's iterations only slow the tests down.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def debug_on(db, settings):
    settings.DEBUG = True  # pytest-django runs tests with DEBUG off; the demo wants a development setup
    return settings


def test_scenes_are_valid_distinct_and_deterministic():
    keys = set(taxonomy.from_file().keys)
    assert len(demo.SCENES) >= 24
    assert len({s.slug for s in demo.SCENES}) == len(demo.SCENES)
    for scene in demo.SCENES:
        assert set(scene.labels) <= keys, scene.slug
        assert set(scene.labels.values()) <= {0.5, 1}, scene.slug
    hashes = [hashlib.sha256(demo.render(i)).hexdigest() for i in range(len(demo.SCENES))]
    assert len(set(hashes)) == len(hashes), "two scenes draw the same picture"
    assert hashlib.sha256(demo.render(0)).hexdigest() == hashes[0]
    assert any(s.labels == {} for s in demo.SCENES), "the demo needs benign images too"
    levels = {min(taxonomy.from_file().level_of[k] for k, v in s.labels.items() if v == 1) for s in demo.SCENES if 1 in s.labels.values()}
    assert levels == {1, 2, 3, 4}


def test_demo_photographs_give_the_face_pages_faces_to_anonymize():
    """Six scenes are real photographs (skimage.data, read offline from the wheel); the face pipeline finds
    the faces in those that show people, none in the cat or the coffee, and none left after blurring."""
    from annotations.faces import variants

    found = {}
    for i, scene in enumerate(demo.SCENES):
        if scene.slug in ("selfie", "id-card", "passport", "family-photo", "pet", "food"):
            computed = variants.compute(demo.render(i), "jpg" if scene.fmt == "JPEG" else "png", "blur", 0.5, 0.2, scene.slug)
            found[scene.slug] = (len(computed.boxes), len(computed.residual_boxes))
    assert found["selfie"][0] == found["id-card"][0] == found["passport"][0] == 1
    assert found["family-photo"][0] == 3
    assert found["pet"] == found["food"] == (0, 0)
    assert all(residual == 0 for _, residual in found.values()), found


def test_noise_changes_only_unprotected_values_by_one_step():
    import random

    labels = {"a": 1.0, "b": 0.5, "c": 0.0, "d": 1.0}
    for seed_value in range(50):
        out = demo.noisy(labels, random.Random(seed_value), present_rate=0.5, absent_rate=0.5, keep={"d"})
        assert out["d"] == 1.0
        assert out["a"] in (1.0, 0.5) and out["c"] in (0.0, 0.5, 1.0)
        assert set(out.values()) <= {0.0, 0.5, 1.0}


def test_seed_demo_creates_images_annotators_labels_and_scores(debug_on):
    output = seed()
    images = list(Image.objects.filter(source=demo.DEMO_SOURCE).order_by("vispr_id"))
    assert len(images) == len(demo.SCENES) >= 24
    assert [i.vispr_id for i in images][:2] == ["demo_0001", "demo_0002"]
    assert {i.split for i in images} == {"train", "test"}
    for image in images:
        assert image.file and image.file.storage.exists(image.file.name)
        data = image.file.open("rb").read()
        assert hashlib.sha256(data).hexdigest() == image.sha256
        stored = PILImage.open(io.BytesIO(data))
        assert (stored.width, stored.height) == (image.width, image.height) == (demo.WIDTH, demo.HEIGHT)
        assert len(stored.getexif()) == 0 and b"DemoCam" not in data  # camera EXIF of JPEG scenes is stripped

    models = list(Annotator.objects.filter(kind=Annotator.KIND_MODEL).order_by("name"))
    assert [(m.provider, m.model_name, m.prompt_version, m.is_demo) for m in models] == [
        ("gemini", "gemini-3-flash", "demo-v1", True),
        ("openai", "gpt-5.1", "demo-v1", True),
        ("openai", "gpt-5.1", "demo-v1-annotate", True),  # the demo annotate run's annotator (demo/runs.py)
    ]
    models = [m for m in models if m.prompt_version == "demo-v1"]  # the consensus set (the annotate run's is not)
    humans = list(Annotator.objects.filter(kind=Annotator.KIND_HUMAN))
    assert [h.user.username for h in humans] == [demo.DEMO_REVIEWER]
    assert humans[0].user.profile.role == "reviewer" and not humans[0].user.has_usable_password()

    n_attrs = len(taxonomy.active().keys)
    for model in models:
        assert Label.objects.filter(annotator=model).count() == len(images) * n_attrs
    human_images = Labeling.objects.filter(annotator=humans[0], status=Labeling.STATUS_SUBMITTED).count()
    assert 0 < human_images < len(images)
    assert Label.objects.filter(annotator=humans[0]).count() == human_images * n_attrs

    # The two models mostly agree, but not always: the demo shows disagreement.
    a, b = ({(lab.image_id, lab.attribute_id): lab.value for lab in Label.objects.filter(annotator=m)} for m in models)
    disagreements = sum(a[k] != b[k] for k in a)
    assert 0 < disagreements < 0.2 * len(a)

    profile = ScoringProfile.active()
    assert set(profile.consensus_annotators.all()) == set(models)
    scores = {s.image_id: s for s in ImageScore.objects.filter(profile=profile)}
    assert set(scores) == {i.id for i in images}
    by_slug = {scene.slug: scores[images[n].id] for n, scene in enumerate(demo.SCENES)}
    assert by_slug["id-card"].level == 1 and by_slug["passport"].level == 1
    assert by_slug["landscape"].level == 4 and by_slug["landscape"].score == 0.0
    assert {s.level for s in scores.values()} == {1, 2, 3, 4}

    for username, role, password in demo.DEMO_ACCOUNTS:
        user = get_user_model().objects.get(username=username)
        assert user.check_password(password), username
        assert role_of(user) == role
        assert password in output
    assert get_user_model().objects.get(username="admin").is_superuser
    assert "DEMO ONLY" in output
    assert AuditEvent.objects.filter(action="demo.seed").count() == 1


def test_seed_demo_twice_adds_nothing(debug_on):
    seed()
    before = counts()
    labels_before = sorted(Label.objects.values_list("image_id", "annotator_id", "attribute_id", "value"))
    output = seed()
    assert counts() == before
    assert sorted(Label.objects.values_list("image_id", "annotator_id", "attribute_id", "value")) == labels_before
    assert "0 new images, 0 new labels" in output


def test_seed_demo_leaves_an_existing_account_alone(debug_on):
    User = get_user_model()
    User.objects.create_user("admin", password="my-own-strong-password")
    seed()
    admin = get_user_model().objects.get(username="admin")
    assert admin.check_password("my-own-strong-password") and not admin.check_password("demo-admin-password")
    assert not admin.is_superuser and not Profile.objects.filter(user=admin).exists()  # no role handed out


def test_seed_demo_refuses_with_debug_off(db, settings):
    settings.DEBUG = False
    before = counts()
    with pytest.raises(CommandError, match="DEBUG is off"):
        seed()
    assert counts() == before
    assert not get_user_model().objects.filter(username="admin").exists()


def test_seed_demo_with_force_runs_with_debug_off(db, settings):
    settings.DEBUG = False
    seed(force=True)
    assert Image.objects.filter(source=demo.DEMO_SOURCE).count() == len(demo.SCENES)


def test_seed_demo_refuses_to_touch_a_non_demo_image_with_a_demo_id(debug_on, make_image):
    make_image("demo_0001")  # source "test", not the demo
    before = counts()
    with pytest.raises(RuntimeError, match="not demo data"):
        seed()
    assert counts() == before


@pytest.mark.parametrize(
    "args, message",
    [(["--port", "abc"], "must be a number"), (["--port", "70000"], "between 1 and 65535"), (["--port", "0"], "between 1 and 65535")],
)
def test_run_demo_refuses_a_bad_port(debug_on, args, message):
    before = counts()
    with pytest.raises(CommandError, match=message):
        call_command("run_demo", *args)
    assert counts() == before


def test_run_demo_refuses_with_debug_off(db, settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG is off"):
        call_command("run_demo", "--port", "8123")
    assert Image.objects.count() == 0


def test_run_demo_refuses_a_port_in_use(debug_on):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(CommandError, match="already in use"):
            call_command("run_demo", "--port", str(port))
    assert Image.objects.count() == 0


# -------------------------------------------------------------------------------------------------
# End to end: the real command, a real worker and web server, a real login.


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"run_demo exited early with code {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"{url} did not answer within {timeout}s")


def log_in(base: str, username: str, password: str):
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    page = opener.open(f"{base}/accounts/login/", timeout=10).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": username, "password": password, "next": "/"})
    response = opener.open(urllib.request.Request(f"{base}/accounts/login/", data=form.encode(), headers={"Referer": base}), timeout=10)
    return opener, response


def child_pids(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


@contextmanager
def running_demo(tmp_path, *args: str, drop_env: tuple[str, ...] = ()):
    """`manage.py run_demo --port P *args` as a child with its own data folder and log; yields (proc, base URL).
    On the way out the process is killed if it still runs, and the log is closed (read it from tmp_path/run_demo.log)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DATABASE_URL", "CELERY_", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS") + drop_env)}
    env.update(CPRT_DATA_DIR=str(tmp_path / "data"), PYTHONUNBUFFERED="1")
    log = open(tmp_path / "run_demo.log", "wb")
    proc = subprocess.Popen([sys.executable, "manage.py", "run_demo", "--port", str(port), *args],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield proc, f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


@pytest.mark.worker
def test_run_demo_serves_the_seeded_site_and_stops_cleanly_on_sigterm(tmp_path):
    with running_demo(tmp_path) as (proc, base):
        wait_for_http(f"{base}/accounts/login/", proc)
        children = child_pids(proc.pid)
        assert len(children) == 2, "expected a web server and a worker process"
        processes = children + [g for c in children for g in child_pids(c)]  # and the worker's pool

        opener, response = log_in(base, "reviewer", "demo-reviewer-password")
        html = response.read().decode()
        assert response.geturl() == f"{base}/"
        assert html.count('data-vispr-id="demo_') == len(demo.SCENES)
        assert "provisional boundaries" in html
        image_url = re.search(r'src="(/images/\d+/bytes)"', html).group(1)
        image = opener.open(base + image_url, timeout=10)
        assert image.headers["Cache-Control"] == "private, no-store"

        _, bad = log_in(base, "reviewer", "wrong-password")
        assert bad.geturl().endswith("/accounts/login/")

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        # Children (the worker's pool, the web server's reloader) may take a moment to be reaped on a loaded machine.
        deadline = time.monotonic() + 15
        while [pid for pid in processes if Path(f"/proc/{pid}").exists()] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [pid for pid in processes if Path(f"/proc/{pid}").exists()] == []
    text = (tmp_path / "run_demo.log").read_text()
    assert "demo-reviewer-password" in text and "Demo stopped." in text


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@pytest.mark.worker
def test_run_demo_with_fake_provider_lets_the_admin_launch_a_run_that_the_worker_finishes(tmp_path):
    """The newcomer's path: `run_demo --with-fake-provider`, log in as admin, launch an OpenAI judge run
    with an invented model name, and watch the demo's own worker finish it against the fake."""
    with running_demo(tmp_path, "--with-fake-provider", drop_env=("OPENAI_", "VLLM_")) as (proc, base):
        wait_for_http(f"{base}/accounts/login/", proc)
        children = child_pids(proc.pid)
        assert len(children) == 3, "expected the fake provider, a worker and a web server"
        keys = {_environ(pid).get("OPENAI_API_KEY") for pid in children} - {None}
        assert len(keys) == 1 and len(next(iter(keys))) >= 24, "web and worker share one fresh random key"
        key = keys.pop()

        opener, _ = log_in(base, "admin", "demo-admin-password")
        form = opener.open(f"{base}/runs/new/", timeout=10).read().decode()
        assert "OPENAI_API_KEY is not set" not in form
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
        body = json.dumps({"task": "judge", "provider": "openai", "model_name": "demo-invented-model",
                           "strategy": "zero_shot", "concurrency": 4}).encode()
        request = urllib.request.Request(f"{base}/api/runs/", data=body, headers={
            "Content-Type": "application/json", "X-CSRFToken": token, "Referer": base})
        run = json.load(opener.open(request, timeout=10))
        assert run["status"] == "queued" and run["total_images"] == len(demo.SCENES)

        deadline = time.monotonic() + 90
        while run["status"] in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.5)
            raw = opener.open(f"{base}/api/runs/{run['id']}/", timeout=10).read().decode()
            run = json.loads(raw)
        assert run["status"] == "finished", run
        assert run["done_count"] == len(demo.SCENES) and run["outcome_counts"].get("ok") == len(demo.SCENES), run
        assert run["stand_in"] is True and run["endpoint"].startswith("127.0.0.1:"), run  # the fake provider, badged
        assert key not in raw

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    text = (tmp_path / "run_demo.log").read_text()
    assert "Fake provider (a stand-in, not a model" in text and "Demo stopped." in text
    assert key not in text
