"""`python manage.py run_demo`: migrate, seed the demo, then run a Celery worker and the web server.

Both run as child processes; jobs always go through the broker to the worker, never run in the web
process (CELERY_TASK_ALWAYS_EAGER is forced off for both children). The worker embeds Celery beat
(-B) so periodic jobs such as the run reconciler also run. Ctrl-C or SIGTERM stops both.
If either child dies, the other is stopped and the command fails.

`--with-fake-provider` also starts the project's fake OpenAI-compatible server (`tests/fakes`, the
one the test suite drives through the official SDK) as a third child, and points the web server and
the worker at it for OpenAI and vLLM runs, with a fresh random key. It is a stand-in: its answers are
synthetic, derived from the request, and come from no model; it lets a newcomer launch, watch, cancel
and score runs in the demo without an API key or a GPU.
"""
from __future__ import annotations

import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from core.processes import stop_process
from demo import seeding as demo

ROOT = Path(settings.BASE_DIR)
STOP_TIMEOUT = 20.0
FAKE_PROVIDER_MODULE = "tests.fakes.openai_server"
# Seconds the fake waits before each answer, so that a run's progress can be watched on its page.
FAKE_PROVIDER_DELAY = 0.2


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise CommandError(f"--port must be a number, got {value!r}.") from None
    if not 1 <= port <= 65535:
        raise CommandError(f"--port must be between 1 and 65535, got {port}.")
    return port


def _port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _accepting(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


class Command(BaseCommand):
    help = "Run the embedded demo: migrate, seed demo data, start a Celery worker and the web server (Ctrl-C stops both)."

    def add_arguments(self, parser):
        parser.add_argument("--port", default="8000", help="Web server port on 127.0.0.1 (default 8000).")
        parser.add_argument("--force", action="store_true", help="Run even though DEBUG is off (the demo accounts have published passwords).")
        parser.add_argument("--no-seed", action="store_true", help="Do not create demo data; just migrate and run.")
        parser.add_argument(
            "--with-fake-provider", action="store_true",
            help="Also start the project's fake OpenAI-compatible server (a stand-in with synthetic answers, no model) "
                 "and send OpenAI and vLLM runs to it, so that runs can be launched without an API key.",
        )

    def handle(self, *args, port: str = "8000", force: bool = False, no_seed: bool = False, with_fake_provider: bool = False, **options):
        host = "127.0.0.1"
        port_number = _port(str(port))
        if not settings.DEBUG and not force:
            raise CommandError(
                "Refusing to run the demo: DEBUG is off. The demo creates accounts with published passwords "
                "and serves with Django's development server; pass --force only on a throwaway machine."
            )
        if not _port_is_free(host, port_number):
            raise CommandError(f"Port {port_number} on {host} is already in use; pick another with --port.")
        if with_fake_provider and importlib.util.find_spec(FAKE_PROVIDER_MODULE.rsplit(".", 1)[0]) is None:
            raise CommandError(f"--with-fake-provider needs the project's tests folder ({FAKE_PROVIDER_MODULE}); run the demo from a checkout.")

        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write(f"Database migrated ({settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}).")
        if not no_seed:
            try:
                demo.seed(force=force, log=self.stdout.write)
            except demo.DemoRefused as exc:
                raise CommandError(str(exc)) from None

        env = dict(os.environ, CELERY_TASK_ALWAYS_EAGER="0", PYTHONUNBUFFERED="1", CPRT_DATA_DIR=str(settings.DATA_DIR))
        env.setdefault("DJANGO_SETTINGS_MODULE", "cprt_site.settings")
        children: dict[str, subprocess.Popen] = {}
        stopping = {"signal": None}

        def on_signal(signum, _frame):
            stopping["signal"] = signum

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        fake_url, failed = "", None
        try:
            if with_fake_provider:
                fake_port = _free_port(host)
                children["fake provider"] = self._start(
                    [sys.executable, "-m", FAKE_PROVIDER_MODULE, "--port", str(fake_port), "--delay", str(FAKE_PROVIDER_DELAY)], env)
                failed = self._wait_until_ready(children, host, fake_port, stopping, what="fake provider")
                fake_url = f"http://{host}:{fake_port}/v1"
                # A fresh random key per demo: the providers want one, the fake ignores it, and it is no placeholder.
                env.update(OPENAI_BASE_URL=fake_url, OPENAI_API_KEY=secrets.token_urlsafe(24),
                           VLLM_BASE_URL=fake_url, VLLM_API_KEY=secrets.token_urlsafe(24))
            if failed is None and stopping["signal"] is None:
                # -B embeds Celery beat (the run reconciler's schedule); its state file stays in the data folder.
                worker = [sys.executable, "-m", "celery", "-A", "cprt_site", "worker", "--loglevel", "INFO", "-n", f"demo-{os.getpid()}@%h"]
                worker += ["-B", "-s", str(Path(settings.DATA_DIR) / "celerybeat-schedule")]
                children["worker"] = self._start(worker, env)
                children["web"] = self._start([sys.executable, "manage.py", "runserver", f"{host}:{port_number}", "--noreload"], env)
                failed = self._wait_until_ready(children, host, port_number, stopping)
            if failed is None and stopping["signal"] is None:
                self._banner(host, port_number, fake_url)
                failed = self._watch(children, stopping)
        finally:
            self._stop_all(children)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if failed is not None:
            raise CommandError(f"The {failed} process exited unexpectedly (code {children[failed].returncode}); stopped everything.")
        self.stdout.write("Demo stopped.")

    def _start(self, cmd: list[str], env: dict) -> subprocess.Popen:
        # A new session: Ctrl-C reaches only this command, which then stops each child in order.
        return subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True)

    def _wait_until_ready(self, children, host, port, stopping, timeout: float = 60.0, what: str = "web server") -> str | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and stopping["signal"] is None:
            for name, proc in children.items():
                if proc.poll() is not None:
                    return name
            if _accepting(host, port):
                return None
            time.sleep(0.2)
        if stopping["signal"] is None:
            raise CommandError(f"The {what} did not start listening on {host}:{port} within {timeout:.0f}s.")
        return None

    def _watch(self, children, stopping) -> str | None:
        while stopping["signal"] is None:
            for name, proc in children.items():
                if proc.poll() is not None:
                    return name
            time.sleep(0.3)
        return None

    def _banner(self, host: str, port: int, fake_url: str = "") -> None:
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"CPRT Workbench demo running at http://{host}:{port}/"))
        self.stdout.write(f"Data folder: {settings.DATA_DIR}   Broker: {settings.CELERY_BROKER_URL}")
        if fake_url:
            self.stdout.write(self.style.WARNING(
                f"Fake provider (a stand-in, not a model: synthetic answers) at {fake_url}; OpenAI and vLLM runs go there, "
                f"with any model name: log in as admin and open http://{host}:{port}{reverse('inference:run_new')}"))
        self.stdout.write(demo.logins_text())
        self.stdout.write("Press Ctrl-C to stop the web server, the worker" + (" and the fake provider." if fake_url else "."))
        self.stdout.flush()

    def _stop_all(self, children: dict[str, subprocess.Popen]) -> None:
        # The web server first (no new jobs), then the worker (warm shutdown finishes running tasks).
        # The fake provider last, so that the worker's requests in flight are answered.
        for name in ("web", "worker", "fake provider"):
            proc = children.get(name)
            if proc is None:
                continue
            # Only the main process: Celery's warm shutdown stops its own pool children.
            stop_process(proc, STOP_TIMEOUT, group=False, on_kill=lambda name=name: self.stderr.write(
                f"The {name} process did not stop within {STOP_TIMEOUT:.0f}s; killing it."))
