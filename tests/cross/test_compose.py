"""docker-compose.yml's structure, checked against the code (no Docker daemon here: the YAML is parsed).

`docker compose config` (no daemon needed) also runs where a compose CLI is installed; CI installs
Debian's docker-compose and sets CPRT_REQUIRE_COMPOSE=1. Images cannot be fetched, so the rules below
check the rest.

Services and profiles, health checks and `depends_on` conditions, commands that name real modules,
Celery queues and management commands, the nginx config and its protected locations, and the
variables the file and the settings read, which .env.example must list.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.management import get_commands
from django.utils.module_loading import import_string

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_TEXT = (ROOT / "docker-compose.yml").read_text()
COMPOSE = yaml.safe_load(COMPOSE_TEXT)  # resolves the anchors and `<<:` merge keys
SERVICES = COMPOSE["services"]
ENV_EXAMPLE = (ROOT / ".env.example").read_text()
GPU_SERVICES = {"vllm", "gpu-worker"}
# One-shot tools, each under its own profile.
TOOL_PROFILES = {"vllm-batch": ["vllm-batch"], "backup": ["tools"], "restore": ["tools"]}
# Services that answer no health probe: beat listens on nothing (`restart` brings it back; /readyz
# reports its tick); the one-shots end.
NO_HEALTHCHECK = {"beat", "migrate", *TOOL_PROFILES}
# What an operator writes into .env over the example's blanks (test values only).
FILLED_IN = {"SECRET_KEY": "k3Jx9-QvR2mZ7pL0wYt4NbA8sEe1HdUcGf6iVo5_Tq2Wz7Xr4Ky1M", "POSTGRES_PASSWORD": "Zq8-vN3pLx7Rt2Wm"}
# What each container may read from /run/secrets: only what it needs.
SECRETS_NEEDED = {
    "postgres": {"postgres_password"},
    "migrate": {"secret_key", "postgres_password"},
    "web": {"secret_key", "postgres_password", "openai_api_key", "gemini_api_key", "vllm_api_key", "metrics_token"},
    "worker": {"secret_key", "postgres_password", "openai_api_key", "gemini_api_key", "hf_token"},
    "beat": {"secret_key", "postgres_password"},
    "gpu-worker": {"secret_key", "postgres_password", "vllm_api_key"},
    "vllm": {"hf_token"},
    "vllm-batch": {"hf_token"},
    "backup": {"postgres_password"},
    "restore": {"postgres_password"},
    "nginx": set(),
    "redis": set(),
}
SECRET_VARIABLES = {"SECRET_KEY", "POSTGRES_PASSWORD", "OPENAI_API_KEY", "GEMINI_API_KEY", "VLLM_API_KEY", "HF_TOKEN", "CPRT_METRICS_TOKEN"}
# The services that run the app image and need the migrated database.
APP_SERVICES = {"web", "worker", "beat", "gpu-worker"}
VARIABLE = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\})")


def env_example() -> dict[str, str]:
    """NAME -> value of .env.example's lines; commented-out `# NAME=value` lines count as listed."""
    listed = {}
    for line in ENV_EXAMPLE.splitlines():
        match = re.match(r"^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$", line.strip())
        if match:
            listed.setdefault(match.group(2), "" if match.group(1) else match.group(3))
    return listed


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's `${VAR}`, `${VAR:-default}`, `${VAR:?error}` and `$$`, with `env` as the .env file."""

    def substitute(match):
        if match.group(0) == "$$":
            return "$"
        name, operator, argument = match.groups()
        current = env.get(name)
        if operator in (":-", "-"):
            return current if current or (operator == "-" and current is not None) else argument
        if operator in (":?", "?") and not current:
            raise AssertionError(f"${{{name}}} is required: {argument}")
        return current or ""

    return VARIABLE.sub(substitute, value)


def command_words(service: dict) -> list[str]:
    command = service.get("command", [])
    words = shlex.split(command) if isinstance(command, str) else list(command)
    entrypoint = service.get("entrypoint", [])
    return (shlex.split(entrypoint) if isinstance(entrypoint, str) else list(entrypoint)) + words


def service_environment(name: str) -> dict[str, str]:
    """What the container's environment would be with .env copied from .env.example and its secrets set."""
    env = env_example() | FILLED_IN
    service = SERVICES[name]
    merged = dict(env) if service.get("env_file") else {}
    merged.update({key: interpolate(str(value), env) for key, value in (service.get("environment") or {}).items()})
    return merged


def test_services_and_profiles():
    assert set(SERVICES) == {"postgres", "redis", "migrate", "web", "worker", "beat", "nginx", "vllm", "gpu-worker", *TOOL_PROFILES}
    for name, service in SERVICES.items():
        expected = ["gpu"] if name in GPU_SERVICES else TOOL_PROFILES.get(name, [])
        assert service.get("profiles", []) == expected, name


def test_every_long_running_service_has_a_healthcheck():
    for name, service in SERVICES.items():
        if name in NO_HEALTHCHECK:
            assert "healthcheck" not in service, name
            continue
        test = service["healthcheck"]["test"]
        assert test[0] in ("CMD", "CMD-SHELL") and len(test) > 1, name


def test_depends_on_waits_for_healthy_services():
    for name, service in SERVICES.items():
        depends_on = service.get("depends_on", {})
        assert isinstance(depends_on, dict), f"{name}: depends_on needs conditions, not a list"
        for other, condition in depends_on.items():
            if other == "migrate":
                assert condition == {"condition": "service_completed_successfully"}, f"{name} -> migrate"
                continue
            assert condition == {"condition": "service_healthy"}, f"{name} -> {other}"
            assert "healthcheck" in SERVICES[other], f"{name} waits for {other}, which has no health check"
            if name not in GPU_SERVICES:
                assert other not in GPU_SERVICES, f"{name} would need the gpu profile ({other})"
    assert "web" in SERVICES["nginx"]["depends_on"]
    for name in APP_SERVICES:
        assert SERVICES[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name


def test_migrations_run_once_in_a_one_shot_service():
    migrate = SERVICES["migrate"]
    assert command_words(migrate) == ["python", "manage.py", "migrate", "--noinput"]
    assert migrate["restart"] == "no", "a one-shot service must not be restarted once it exited"
    assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert migrate["build"] == SERVICES["web"]["build"] and migrate["image"] == SERVICES["web"]["image"]
    for name in APP_SERVICES:
        words = " ".join(command_words(SERVICES[name]))
        assert "migrate" not in words and "collectstatic" not in words, f"{name} must not migrate or collect at start"


def test_images_are_pinned_to_exact_versions():
    exact = {
        "postgres": r"postgres:16\.\d+-\w+",  # 16.x
        "redis": r"redis:7\.\d+\.\d+-\w+",  # 7.x.y
        "nginx": r"nginx:1\.\d*[02468]\.\d+-alpine",  # a stable line (even minor)
        "vllm": r"vllm/vllm-openai:v\d+\.\d+\.\d+",
    }
    for name, pattern in exact.items():
        assert re.fullmatch(pattern, SERVICES[name]["image"]), f"{name}: {SERVICES[name]['image']}"
    for name, service in SERVICES.items():
        if "image" in service and "build" not in service:
            assert service["image"] in {SERVICES[base]["image"] for base in exact}, f"{name} uses another image: {service['image']}"


def test_dockerfile_installs_the_lock_before_the_code_and_collects_static():
    steps = [line for line in (ROOT / "deploy" / "Dockerfile").read_text().splitlines() if line and not line.startswith((" ", "#"))]
    base = steps[0].split()
    assert base[0] == "FROM" and re.fullmatch(r"python:3\.11\.\d+-slim-\w+", base[1]), base
    prefixes = ("COPY pyproject.toml uv.lock", "RUN uv sync --frozen --no-install-project", "COPY . .")
    index = {prefix: next(i for i, s in enumerate(steps) if s.startswith(prefix)) for prefix in prefixes}
    assert index["COPY pyproject.toml uv.lock"] < index["RUN uv sync --frozen --no-install-project"] < index["COPY . ."]
    text = (ROOT / "deploy" / "Dockerfile").read_text()
    assert "manage.py collectstatic" in text.split("COPY . .")[1]
    assert "manage.py migrate" not in text
    # The image's uv is the Makefile's.
    uv = re.search(r"^UV_VERSION\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1)
    assert f'uv=={uv}' in text


def celery_services() -> dict[str, list[str]]:
    return {name: command_words(s) for name, s in SERVICES.items() if command_words(s)[:1] == ["celery"]}


def test_celery_commands_use_the_project_app_and_its_queues():
    from celery import Celery

    from cprt_site.celery import app

    services = celery_services()
    assert set(services) == {"worker", "beat", "gpu-worker"}
    assert isinstance(import_string("cprt_site.celery.app"), Celery)
    known = {queue.name for queue in app.conf.task_queues}
    consumed = set()
    for name, words in services.items():
        assert words[words.index("-A") + 1] == "cprt_site", name
        if words[3] == "worker":
            queues = set(words[words.index("-Q") + 1].split(","))
            assert queues <= known, f"{name} consumes unknown queues {queues - known}"
            consumed |= queues
            node = words[words.index("-n") + 1].split("@")[0] if "-n" in words else "celery"
            ping = " ".join(SERVICES[name]["healthcheck"]["test"][1:])
            assert f"inspect ping -d {node}@$$HOSTNAME" in ping, f"{name}'s health check pings another node"
        else:
            assert words[3] == "beat", name
    assert consumed == known, f"no service consumes {known - consumed}"


def test_web_runs_gunicorn_on_the_wsgi_application():
    command = " ".join(command_words(SERVICES["web"]))
    match = re.search(r"gunicorn (\S+):(\w+) .*--bind 0\.0\.0\.0:(\d+)", command)
    assert match, command
    assert callable(import_string(f"{match.group(1)}.{match.group(2)}"))
    assert match.group(1) + ".application" == settings.WSGI_APPLICATION
    assert SERVICES["web"]["expose"] == [match.group(3)]
    assert "ports" not in SERVICES["web"], "web is reached through nginx only"


def test_manage_py_commands_exist():
    commands = get_commands()
    used = [m.group(1) for s in SERVICES.values() for m in re.finditer(r"manage\.py (\S+)", " ".join(command_words(s)))]
    assert used == ["migrate"], "only the migrate service runs a management command"
    for command in used:
        assert command in commands, f"manage.py {command} does not exist"


def nginx_config() -> tuple[Path, str]:
    mounts = {target.split(":")[1]: target.split(":")[0] for target in SERVICES["nginx"]["volumes"]}
    assert set(mounts) == {"/etc/nginx/nginx.conf", "/data"}
    source = ROOT / mounts["/etc/nginx/nginx.conf"]
    assert source.is_file(), f"{source} is mounted but missing"
    return source, source.read_text()


def test_nginx_mounts_its_config_and_the_data_read_only():
    for volume in SERVICES["nginx"]["volumes"]:
        assert volume.endswith(":ro"), volume
    assert "cprt-data:/data:ro" in SERVICES["nginx"]["volumes"]
    assert "cprt-data:/data" in SERVICES["web"]["volumes"]
    assert SERVICES["nginx"]["ports"], "nginx publishes the site"


def test_nginx_protected_locations_match_the_settings(tmp_path):
    _, conf = nginx_config()
    locations = dict(re.findall(r"location /_protected/(\w+)/ \{\s*internal;\s*alias ([^;]+);", conf))
    assert set(locations) == set(settings.CPRT_PROTECTED_ROOTS)
    assert len(re.findall(r"location /_protected/", conf)) == len(locations), "every protected location is internal"

    # The folders the web container's settings name, with /data mapped to a scratch folder here, and
    # the secret files with test values.
    secrets = tmp_path / "run-secrets"
    secrets.mkdir()
    (secrets / "postgres_password").write_text(FILLED_IN["POSTGRES_PASSWORD"] + "\n")
    env = {k: v.replace("/data", str(tmp_path), 1) if v.startswith("/data") else v for k, v in service_environment("web").items()}
    env = {k: v.replace("/run/secrets", str(secrets), 1) if v.startswith("/run/secrets/") else v for k, v in env.items()}
    env = {k: v for k, v in env.items() if not (k.endswith("_FILE") and not Path(v).exists())}
    # .env holds no secret: the password comes only from its file (a value beside the file is refused).
    env.pop("POSTGRES_PASSWORD", None)
    assert env["CPRT_DATA_DIR"] == str(tmp_path)
    env.update(PATH=os.environ["PATH"], DJANGO_SETTINGS_MODULE="cprt_site.settings")
    script = (
        "import json, django; django.setup(); from django.conf import settings; "
        "print(json.dumps({'roots': {k: str(v) for k, v in settings.CPRT_PROTECTED_ROOTS.items()},"
        " 'x_accel': settings.CPRT_X_ACCEL_REDIRECT, 'max_image_bytes': settings.CPRT_MAX_IMAGE_BYTES,"
        " 'ssl_redirect': settings.SECURE_SSL_REDIRECT, 'hsts_preload': settings.SECURE_HSTS_PRELOAD,"
        " 'db_password': settings.DATABASES['default']['PASSWORD'], 'sessions': settings.SESSION_ENGINE}))"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    web = json.loads(result.stdout.strip().splitlines()[-1])
    assert web["x_accel"] is True, "the web service must answer protected files with X-Accel-Redirect"
    # nginx speaks plain HTTP: Django's own https redirect is off unless asked for; preload is opt-in.
    assert web["ssl_redirect"] is False and web["hsts_preload"] is False
    assert web["db_password"] == FILLED_IN["POSTGRES_PASSWORD"], "the password comes from POSTGRES_PASSWORD_FILE"
    assert web["sessions"] == "django.contrib.sessions.backends.db"
    for name, folder in web["roots"].items():
        assert locations[name].rstrip("/") == folder.replace(str(tmp_path), "/data", 1), name

    # Uploads up to the image limit get through nginx.
    size = re.search(r"client_max_body_size (\d+)m;", conf)
    assert size and int(size.group(1)) * 1024 * 1024 >= web["max_image_bytes"]


def test_nginx_proxies_to_the_web_service():
    _, conf = nginx_config()
    port = SERVICES["web"]["expose"][0]
    assert re.search(rf"upstream cprt_web \{{\s*server web:{port};\s*\}}", conf)
    assert "proxy_pass http://cprt_web;" in conf
    for header in ("Host $http_host", "X-Forwarded-For $proxy_add_x_forwarded_for", "X-Forwarded-Proto"):
        assert f"proxy_set_header {header}" in conf, header
    assert "autoindex on" not in conf
    listen = re.search(r"listen (\d+);", conf).group(1)
    assert any(str(p).endswith(f":{listen}") for p in SERVICES["nginx"]["ports"])
    assert f"127.0.0.1:{listen}/nginx-health" in " ".join(SERVICES["nginx"]["healthcheck"]["test"])


def test_every_variable_is_listed_in_env_example():
    listed = env_example()
    used = {m.group(1) for m in VARIABLE.finditer(COMPOSE_TEXT) if m.group(1)}
    assert used, "the compose file reads its knobs from .env"
    assert not used - set(listed), f"missing from .env.example: {sorted(used - set(listed))}"
    # And every variable the settings and the run knobs read.
    read = set()
    for module, pattern in (
        # django-environ's env.int("NAME") and the typed helpers of cprt_site/env.py: envint("NAME"), secret("NAME")...
        ("cprt_site/settings.py", r'\b(?:env(?:\.\w+|\w+)?|secret(?:_url)?)\("([A-Z][A-Z0-9_]*)"'),
        ("cprt_site/settings_operations.py", r'\b(?:env(?:\.\w+|\w+)?|secret(?:_url)?)\("([A-Z][A-Z0-9_]*)"'),
    ):
        read |= set(re.findall(pattern, (ROOT / module).read_text()))
    assert {"SECRET_KEY", "CPRT_X_ACCEL_REDIRECT", "CPRT_RUN_LANE_CONCURRENCY"} <= read
    assert not read - set(listed), f"missing from .env.example: {sorted(read - set(listed))}"


def shell_words(name: str) -> list[str]:
    """The words of a `/bin/sh -c "..."` entrypoint, as the container's shell splits them."""
    words = command_words(SERVICES[name])
    assert words[:2] == ["/bin/sh", "-c"], name
    return shlex.split(words[2].replace("$$", "$"))


def test_the_gpu_profile_serves_a_model_with_vllm():
    vllm = shell_words("vllm")
    start = vllm.index("exec")
    assert vllm[start + 1:start + 3] == ["vllm", "serve"] and vllm[start + 3] == "${VLLM_MODEL:?set VLLM_MODEL in .env}"
    port = vllm[vllm.index("--port") + 1]
    assert SERVICES["gpu-worker"]["environment"]["VLLM_BASE_URL"] == f"http://vllm:{port}/v1"
    assert SERVICES["gpu-worker"]["depends_on"]["vllm"] == {"condition": "service_healthy"}
    assert f"127.0.0.1:{port}/health" in " ".join(SERVICES["vllm"]["healthcheck"]["test"])
    gpu = SERVICES["vllm"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["driver"] == "nvidia" and gpu["capabilities"] == ["gpu"]


def test_vllm_model_is_required_only_under_the_gpu_profile():
    # Compose interpolates every service, profiles or not: a `${VLLM_MODEL:?}` that compose reads would
    # stop `docker compose up` without the gpu profile. Only the containers' own shell may require it.
    for match in VARIABLE.finditer(COMPOSE_TEXT):
        if match.group(1) == "VLLM_MODEL":
            assert match.group(2) != ":?", "compose itself must not require VLLM_MODEL"
    for name in ("vllm", "vllm-batch"):
        assert "${VLLM_MODEL:?set VLLM_MODEL in .env}" in shell_words(name), name
        assert SERVICES[name]["environment"]["VLLM_MODEL"] == "${VLLM_MODEL:-}"
    for name, service in SERVICES.items():
        if name not in ("vllm", "vllm-batch"):
            assert "VLLM_MODEL" not in json.dumps(service), name


def test_the_offline_batch_runs_vllm_run_batch():
    from inference.providers.vllm.batch import run_batch_command

    words = shell_words("vllm-batch")
    start = words.index("exec")
    assert words[start + 1:start + 3] == ["vllm", "run-batch"] and words[-1] == "$@"
    assert "cprt-data:/data" in SERVICES["vllm-batch"]["volumes"]
    assert run_batch_command("in.jsonl", "out.jsonl", "m").startswith("vllm run-batch ")


def test_secrets_are_files_and_each_container_gets_only_what_it_needs():
    declared = COMPOSE["secrets"]
    for name, secret in declared.items():
        assert secret == {"file": f"./secrets/{name}"}, name
    assert "/secrets/" in (ROOT / ".gitignore").read_text().split()
    for name, service in SERVICES.items():
        given = set(service.get("secrets", []))
        assert given == SECRETS_NEEDED[name], f"{name}: {sorted(given ^ SECRETS_NEEDED[name])}"
        assert given <= set(declared)
        environment = service.get("environment") or {}
        assert not SECRET_VARIABLES & set(environment), f"{name} gets a secret in its environment"
        for key, value in environment.items():
            if key.endswith("_FILE") and str(value).startswith("/run/secrets/"):
                assert str(value).removeprefix("/run/secrets/") in given, f"{name}: {key} names a secret it does not mount"
    # .env goes to every app container: it must not carry a secret.
    listed = {line.split("=", 1)[0] for line in ENV_EXAMPLE.splitlines() if re.match(r"^[A-Z][A-Z0-9_]*=", line)}
    assert not SECRET_VARIABLES & listed, f".env.example sets {sorted(SECRET_VARIABLES & listed)}"
    assert "POSTGRES_PASSWORD" not in COMPOSE_TEXT.replace("POSTGRES_PASSWORD_FILE", "")


def seconds(duration: str) -> float:
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(duration))
    assert match and any(match.groups()), duration
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


def test_stop_grace_outlasts_a_provider_call_and_gunicorn_stops_gracefully():
    for name in ("worker", "gpu-worker"):
        assert seconds(SERVICES[name]["stop_grace_period"]) > settings.CPRT_PROVIDER_TIMEOUT_S + 10, name
    words = command_words(SERVICES["web"])
    graceful = float(words[words.index("--graceful-timeout") + 1])
    # One SIGTERM: gunicorn finishes running requests within --graceful-timeout, before Docker's SIGKILL.
    assert 0 < graceful < seconds(SERVICES["web"]["stop_grace_period"])
    # The access log goes to stdout in the app's log format: deploy/gunicorn.conf.py sets accesslog = "-".
    assert words[words.index("--config") + 1] == "deploy/gunicorn.conf.py"
    assert re.search(r'^accesslog = "-"$', (ROOT / "deploy" / "gunicorn.conf.py").read_text(), re.M), "the access log goes to stdout"


def test_the_web_health_check_is_liveness_and_readiness_is_for_the_load_balancer():
    test = " ".join(SERVICES["web"]["healthcheck"]["test"])
    assert "127.0.0.1:8000/healthz" in test and "X-Forwarded-Proto" not in test
    assert "/readyz" in (ROOT / "docs" / "operations.md").read_text()


def test_backup_and_restore_tools_mount_what_they_need():
    for name in ("backup", "restore"):
        service = SERVICES[name]
        script = service["entrypoint"][0]
        assert (ROOT / "deploy" / Path(script).name).is_file() and script.startswith("/deploy/"), name
        assert "./deploy:/deploy:ro" in service["volumes"]
        assert service["environment"]["DATABASE_URL"] == SERVICES["migrate"]["environment"]["DATABASE_URL"]
    assert "cprt-data:/data:ro" in SERVICES["backup"]["volumes"], "a backup only reads the data"
    assert "cprt-data:/data" in SERVICES["restore"]["volumes"]


@pytest.mark.parametrize("name", sorted(APP_SERVICES))
def test_app_services_share_the_database_broker_and_data(name):
    env = service_environment(name)
    assert env["DATABASE_URL"] == "postgres://cprt@postgres:5432/cprt"
    assert env["POSTGRES_PASSWORD_FILE"] == "/run/secrets/postgres_password"
    assert env["PROMETHEUS_MULTIPROC_DIR"].startswith("/data/")
    assert env["CELERY_BROKER_URL"] == "redis://redis:6379/0"
    assert env["CPRT_DATA_DIR"] == "/data" and "cprt-data:/data" in SERVICES[name]["volumes"]
    assert SERVICES[name]["build"]["dockerfile"] == "deploy/Dockerfile" and (ROOT / "deploy" / "Dockerfile").is_file()


def compose_cli() -> list[str] | None:
    """`docker compose` (the v2 plugin) or `docker-compose` (Debian 12's 1.29), whichever works here."""
    import shutil

    for cli in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(cli[0]) and subprocess.run([*cli, "version"], capture_output=True, timeout=60).returncode == 0:
            return cli
    return None


def test_docker_compose_config_accepts_the_file_with_its_secrets(tmp_path):
    """`docker compose config` (no daemon needed) validates the file as an operator deploys it: the
    example .env with its blanks filled in, one file per declared secret, every profile. Skipped where
    no compose CLI is installed, except with CPRT_REQUIRE_COMPOSE=1 (CI installs Debian's docker-compose)."""
    import os
    import shutil

    if compose_cli() is None:
        if os.environ.get("CPRT_REQUIRE_COMPOSE") == "1":
            pytest.fail("CPRT_REQUIRE_COMPOSE=1 but neither `docker compose` nor `docker-compose` works here")
        pytest.skip("no docker compose CLI here (apt-get install docker-compose gives one)")

    for name in ("docker-compose.yml", ".env.example"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    (tmp_path / ".env").write_text(ENV_EXAMPLE + "".join(f"\n{k}={v}" for k, v in FILLED_IN.items()) + "\n")
    (tmp_path / "secrets").mkdir()
    for secret in COMPOSE["secrets"]:
        (tmp_path / "secrets" / secret).write_text("not-a-secret\n")
    cli = compose_cli()
    for profiles in ([], ["gpu", "tools", "vllm-batch"]):
        args = [*cli, *(f"--profile={p}" for p in profiles), "config"]
        done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        rendered = yaml.safe_load(done.stdout)
        assert set(rendered["secrets"]) == set(COMPOSE["secrets"])
        for service, needed in SECRETS_NEEDED.items():
            if service in rendered["services"]:
                got = {s["source"] if isinstance(s, dict) else s for s in rendered["services"][service].get("secrets", [])}
                assert got == needed, service


def test_make_install_and_the_image_compile_bytecode():
    """Without it the first page that imports scipy compiles it while the user waits (11 s of 12)."""
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^export UV_COMPILE_BYTECODE\s*:?=\s*1\s*$", makefile, re.MULTILINE), "make install must compile bytecode"
    assert re.search(r"^\s*UV_COMPILE_BYTECODE=1\b", (ROOT / "deploy" / "Dockerfile").read_text(), re.MULTILINE)
