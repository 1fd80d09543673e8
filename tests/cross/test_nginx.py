"""nginx in front of Django (deploy/nginx.conf): Django checks the permission, nginx sends the bytes.

The live tests run a copy of deploy/nginx.conf (same locations; the upstream pointed at live_server,
the internal locations' aliases at this run's protected roots, a free port, pid, logs and temp files
under tmp_path, so no root is needed) and talk to it over HTTP. They skip when nginx is not installed,
except with CPRT_REQUIRE_NGINX=1 (CI), where a missing nginx fails them. The unit tests below check
core.files.protected_file_response in both modes without nginx.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
import requests
from django.http import Http404
from django.urls import path, reverse

from core.files import protected_file_response
from tests.conftest import PASSWORD

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_CONF = ROOT / "deploy" / "nginx.conf"
MIME_TYPES = Path("/etc/nginx/mime.types")
# Temp folders of the proxy and body buffers, relative to nginx's prefix (tmp_path): the built-in ones
# are under /var/lib/nginx, which only root may write.
TEMP_PATHS = "".join(
    f"    {kind}_temp_path tmp/{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
)

# Live tests share the database with the live server's thread (pytest-django gives every live_server
# test a transactional database; without serialized_rollback its flush drops what migrations loaded).
LIVE_DB = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def _export_download(request, name: str):
    """Test-only view (see `urlpatterns`): an export download, no permission check needed here."""
    return protected_file_response(
        "exports", name, content_type="application/zip", download_name="cprt-bench é.zip", attachment=True
    )


# ROOT_URLCONF for test_nginx_serves_exports_with_quoted_names (the export pages are another app's).
urlpatterns = [path("_test/exports/<path:name>", _export_download)]


def nginx_binary() -> str:
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None
    )
    if found is None:
        reason = "nginx is not installed (apt-get install nginx)"
        if os.environ.get("CPRT_REQUIRE_NGINX") == "1":
            pytest.fail(f"CPRT_REQUIRE_NGINX=1 but {reason}")
        pytest.skip(reason)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"deploy/nginx.conf should contain {old!r} exactly once"
    return text.replace(old, new)


def render_conf(*, upstream: str, port: int, roots: dict[str, Path]) -> str:
    """deploy/nginx.conf with the deployment's addresses and paths replaced by this test's."""
    text = DEPLOY_CONF.read_text()
    text = _replace_once(text, "server web:8000;", f"server {upstream};")
    text = _replace_once(text, "listen 8080;", f"listen 127.0.0.1:{port};")
    text = _replace_once(text, "pid /var/run/nginx.pid;", "pid nginx.pid;")
    text = _replace_once(text, "error_log /dev/stderr warn;", "error_log error.log warn;")
    text = _replace_once(text, "access_log /dev/stdout;", "access_log access.log;")
    text = _replace_once(text, "http {\n", "http {\n" + TEMP_PATHS)
    if not MIME_TYPES.exists():
        text = _replace_once(text, "include /etc/nginx/mime.types;", "")
    for name, folder in roots.items():
        pattern = re.compile(rf"(location /_protected/{re.escape(name)}/ \{{[^}}]*?\balias )([^;]+);")
        text, count = pattern.subn(lambda m: f"{m.group(1)}{folder}/;", text)
        assert count == 1, f"deploy/nginx.conf has no internal location with an alias for /_protected/{name}/"
    if os.geteuid() == 0:
        # As root, nginx would run its workers as `nobody`, who cannot enter this run's data folders
        # (CI makes them 0700). The deployment's nginx workers read /data as another user than the
        # app's, which test_stored_images_are_readable_by_other_users covers.
        text = "user root;\n" + text
    return text


@pytest.fixture
def nginx(live_server, settings, tmp_path):
    """A running nginx with the deploy config in front of live_server; yields its base URL."""
    binary = nginx_binary()
    settings.CPRT_X_ACCEL_REDIRECT = True
    upstream = urlsplit(live_server.url)
    port = free_port()
    (tmp_path / "tmp").mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        render_conf(
            upstream=f"{upstream.hostname.replace('localhost', '127.0.0.1')}:{upstream.port}",
            port=port,
            roots={name: Path(folder) for name, folder in settings.CPRT_PROTECTED_ROOTS.items()},
        )
    )
    command = [binary, "-p", f"{tmp_path}/", "-c", str(conf), "-e", str(tmp_path / "error.log")]
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, f"nginx -t rejects the rendered deploy/nginx.conf:\n{checked.stderr}"

    process = subprocess.Popen([*command, "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                if requests.get(f"{base}/nginx-health", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                log = tmp_path / "error.log"
                pytest.fail(f"nginx did not start:\n{log.read_text() if log.exists() else '(no error log)'}")
            time.sleep(0.05)
        yield base
    finally:
        process.send_signal(signal.SIGQUIT)  # graceful: finish the open requests, then stop
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def log_in(base: str, username: str) -> requests.Session:
    """Log in through nginx with the real login form (Host and CSRF checks included)."""
    session = requests.Session()
    page = session.get(f"{base}/accounts/login/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    done = session.post(
        f"{base}/accounts/login/",
        data={"csrfmiddlewaretoken": token, "username": username, "password": PASSWORD},
        headers={"Referer": f"{base}/accounts/login/"},
        allow_redirects=False,
        timeout=10,
    )
    assert done.status_code == 302, f"login of {username} through nginx failed: HTTP {done.status_code}"
    return session


# --- through nginx ---------------------------------------------------------------------------------


@LIVE_DB
def test_nginx_serves_image_bytes_only_after_djangos_check(nginx, make_image, reviewer_a, outsider, client):
    image = make_image("2017_00000101")
    stored = Path(image.file.path).read_bytes()
    url = reverse("annotations:image_bytes", kwargs={"image_id": image.pk})

    # A reviewer gets the stored bytes, sent by nginx, with Django's headers.
    response = log_in(nginx, "reviewer_a").get(nginx + url, allow_redirects=False, timeout=10)
    assert response.status_code == 200
    assert response.content == stored
    assert response.headers["Cache-Control"] == "private, no-store"
    assert response.headers["Content-Type"] == "image/png"
    assert response.headers["Content-Disposition"] == f'inline; filename="image-{image.pk}.png"'
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "X-Accel-Redirect" not in response.headers
    assert image.file.name not in response.headers["Content-Disposition"]

    # Django itself answered with the header only, no body.
    client.force_login(reviewer_a)
    direct = client.get(url)
    assert direct.status_code == 200 and direct.content == b""
    assert direct["X-Accel-Redirect"] == "/_protected/images/" + quote(image.file.name)
    assert direct["Cache-Control"] == "private, no-store"

    # Anonymous: the login page, no bytes.
    anonymous = requests.get(nginx + url, allow_redirects=False, timeout=10)
    assert anonymous.status_code == 302
    assert anonymous.headers["Location"].startswith("/accounts/login/?next=")
    assert stored not in anonymous.content

    # Logged in without a role: refused, no bytes; a reviewer asking for a missing image: 404.
    refused = log_in(nginx, "outsider").get(nginx + url, allow_redirects=False, timeout=10)
    assert refused.status_code in (403, 404) and stored not in refused.content
    missing = log_in(nginx, "reviewer_a").get(
        nginx + reverse("annotations:image_bytes", kwargs={"image_id": image.pk + 1000}), timeout=10
    )
    assert missing.status_code == 404 and stored not in missing.content

    # The internal location cannot be requested from outside, not even by a logged-in reviewer.
    for session in (requests, log_in(nginx, "reviewer_a")):
        outside = session.get(f"{nginx}/_protected/images/{quote(image.file.name)}", allow_redirects=False, timeout=10)
        assert outside.status_code == 404 and stored not in outside.content


@LIVE_DB
@pytest.mark.urls(__name__)
def test_nginx_serves_exports_with_quoted_names(nginx, settings):
    folder = Path(settings.CPRT_PROTECTED_ROOTS["exports"]) / f"test-nginx-{uuid.uuid4().hex}"
    folder.mkdir(parents=True)
    name = f"{folder.name}/cprt bench é #1.zip"
    data = os.urandom(70_000)
    (folder / "cprt bench é #1.zip").write_bytes(data)
    try:
        response = requests.get(f"{nginx}/_test/exports/{quote(name)}", allow_redirects=False, timeout=10)
        assert response.status_code == 200
        assert response.content == data
        assert response.headers["Content-Type"] == "application/zip"
        assert response.headers["Content-Disposition"] == "attachment; filename*=utf-8''cprt-bench%20%C3%A9.zip"
        assert response.headers["Cache-Control"] == "private, no-store"
        # A name that climbs out of the root is refused by Django before nginx sees it.
        climbing = requests.get(f"{nginx}/_test/exports/{folder.name}/%2E%2E/%2E%2E/cprt.sqlite3", timeout=10)
        assert climbing.status_code == 404
    finally:
        shutil.rmtree(folder)


@LIVE_DB
def test_stored_images_are_readable_by_other_users(make_image):
    # In docker-compose.yml nginx's worker user is not the app's user: image files must be world-readable.
    image = make_image("2017_00000102")
    assert stat.S_IMODE(os.stat(image.file.path).st_mode) & stat.S_IROTH


# --- protected_file_response without nginx ---------------------------------------------------------


@pytest.fixture
def roots(settings, tmp_path):
    images, exports = tmp_path / "images", tmp_path / "exports"
    (images / "sub dir").mkdir(parents=True)
    exports.mkdir()
    (images / "sub dir" / "a bé#.png").write_bytes(b"\x89PNG-test-bytes")
    (images / "folder").mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    (images / "link.png").symlink_to(tmp_path / "outside.txt")
    settings.CPRT_PROTECTED_ROOTS = {"images": images, "exports": exports}
    return tmp_path


def _send(name: str, **options):
    return protected_file_response("images", name, content_type="image/png", download_name="image-7.png", **options)


def test_x_accel_mode_sends_only_a_quoted_header(roots, settings):
    settings.CPRT_X_ACCEL_REDIRECT = True
    response = _send("sub dir/a bé#.png")
    assert response["X-Accel-Redirect"] == "/_protected/images/sub%20dir/a%20b%C3%A9%23.png"
    assert not response.streaming and response.content == b""
    assert response["Content-Type"] == "image/png"
    assert response["Cache-Control"] == "private, no-store"
    assert response["Content-Disposition"] == 'inline; filename="image-7.png"'
    assert response["X-Content-Type-Options"] == "nosniff"


def test_django_mode_streams_the_file_with_the_same_headers(roots, settings):
    settings.CPRT_X_ACCEL_REDIRECT = False
    response = _send("sub dir/a bé#.png", attachment=True)
    try:
        assert b"".join(response.streaming_content) == b"\x89PNG-test-bytes"
    finally:
        response.file_to_stream.close()  # response.close() would fire request_finished (database)
    assert "X-Accel-Redirect" not in response
    assert response["Content-Disposition"] == 'attachment; filename="image-7.png"'
    assert response["Cache-Control"] == "private, no-store"
    assert response["Content-Type"] == "image/png"


@pytest.mark.parametrize("x_accel", [True, False], ids=["x-accel", "django"])
@pytest.mark.parametrize(
    "name",
    ["../outside.txt", "sub dir/../../outside.txt", "{tmp}/outside.txt", "", ".", "folder", "missing.png", "link.png"],
)
def test_names_outside_the_root_or_missing_files_are_404(roots, settings, x_accel, name):
    settings.CPRT_X_ACCEL_REDIRECT = x_accel
    with pytest.raises(Http404):
        _send(name.format(tmp=roots))
