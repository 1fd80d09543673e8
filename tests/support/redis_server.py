"""A private redis-server on a free port, for tests and benches that stop Redis (never the shared one).

No persistence (`--save '' --appendonly no`): a restarted server starts empty, as a Redis without
a volume does, which is the harder case (every queued message is gone). Started in its own
session; `kill()` is SIGKILL (a crash, no shutdown save), `start()` again brings it back on the same port.
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PrivateRedis:
    def __init__(self, folder, port: int | None = None):
        self.folder, self.port, self.proc = Path(folder), port or free_port(), None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 20.0) -> "PrivateRedis":
        import redis

        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        client = redis.Redis(port=self.port, socket_timeout=0.5)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    client.ping()
                    return self
                except redis.exceptions.ConnectionError:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        finally:
            client.close()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.running:
            self.proc.kill()
            self.proc.wait(timeout=10)

    stop = kill
