"""A per-provider request-rate limit shared by every worker process (GCRA, i.e. a token bucket).

Each request reserves the next free slot of its provider's schedule and sleeps until then. Where
the slots are kept:

* **Redis** (when the broker is Redis, or CPRT_RATE_LIMIT_URL is set): one key per provider, updated
  by a Lua script with the Redis server's clock, so all workers on all hosts share one budget.
* **SQLite file** under CPRT_DATA_DIR otherwise (the embedded setup): shared by every worker process
  on this host through SQLite's file lock; threads of one process serialise on a local lock first.

A 429 with Retry-After pushes the provider's whole schedule back (`hold`), so every worker backs off,
not only the thread that was told to.
"""
from __future__ import annotations

import sqlite3
import threading
import time
from functools import lru_cache
from pathlib import Path

from django.conf import settings


_LUA_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local hold = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if hold > 0 then
  tat = math.max(tat, now + hold + (burst - 1) * interval)
  redis.call('SET', KEYS[1], tostring(tat), 'EX', math.ceil(hold + 3600))
  return '0'
end
if tat < now then tat = now end
local wait = tat - (burst - 1) * interval - now
if wait < 0 then wait = 0 end
redis.call('SET', KEYS[1], tostring(tat + interval), 'EX', 3600)
return tostring(wait)
"""


class RedisSchedule:
    def __init__(self, url: str):
        import redis

        self.client = redis.Redis.from_url(url)
        self.script = self.client.register_script(_LUA_RESERVE)

    def reserve(self, key: str, interval: float, burst: int) -> float:
        return float(self.script(keys=[key], args=[interval, burst, 0]))

    def hold(self, key: str, seconds: float, interval: float, burst: int) -> None:
        self.script(keys=[key], args=[interval, burst, seconds])


class SqliteSchedule:
    def __init__(self, path: Path):
        self.path = str(path)
        self.lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # no fsync per reservation; a lost slot after a crash is harmless
            conn.execute("CREATE TABLE IF NOT EXISTS schedule (key TEXT PRIMARY KEY, tat REAL NOT NULL)")
            self._conn = conn
        return self._conn

    def _update(self, key: str, compute) -> float:
        with self.lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute("SELECT tat FROM schedule WHERE key = ?", (key,)).fetchone()
                new_tat, result = compute(row[0] if row else 0.0, time.time())
                conn.execute("INSERT INTO schedule (key, tat) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET tat = excluded.tat", (key, new_tat))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return result

    def reserve(self, key: str, interval: float, burst: int) -> float:
        def compute(tat, now):
            tat = max(tat, now)
            return tat + interval, max(0.0, tat - (burst - 1) * interval - now)

        return self._update(key, compute)

    def hold(self, key: str, seconds: float, interval: float, burst: int) -> None:
        # Past the burst allowance too, so that nobody goes before `seconds` are over.
        self._update(key, lambda tat, now: (max(tat, now + seconds + (burst - 1) * interval), 0.0))


def max_rpm(provider: str) -> int:
    """Requests per minute allowed for a provider (settings.<PROVIDER>_MAX_RPM), shared by every worker; 0: no limit."""
    return int(getattr(settings, f"{provider.upper()}_MAX_RPM", 0) or 0)


def redis_url() -> str:
    """Redis for the shared rate limiter: CPRT_RATE_LIMIT_URL, else the broker when it is Redis."""
    if settings.CPRT_RATE_LIMIT_URL:
        return settings.CPRT_RATE_LIMIT_URL
    broker = str(getattr(settings, "CELERY_BROKER_URL", ""))
    return broker if broker.startswith(("redis://", "rediss://")) else ""


@lru_cache(maxsize=4)
def _schedule(url: str, data_dir: str):
    if url:
        return RedisSchedule(url)
    return SqliteSchedule(Path(data_dir) / "ratelimit.sqlite3")


def schedule():
    return _schedule(redis_url(), str(settings.DATA_DIR))


def backend_name() -> str:
    return "redis" if redis_url() else "sqlite file (this host only)"


class RateLimiter:
    """`acquire()` before every request to `provider`; `hold(seconds)` after a 429 with Retry-After."""

    def __init__(self, provider: str, rpm: int | None = None):
        self.provider = provider
        self.rpm = max_rpm(provider) if rpm is None else rpm
        self.key = f"cprt:ratelimit:{provider}"

    @property
    def enabled(self) -> bool:
        return self.rpm > 0

    def acquire(self, stop: threading.Event | None = None) -> bool:
        """Wait for this request's slot; False when `stop` was set while waiting."""
        if not self.enabled:
            return not (stop and stop.is_set())
        interval, burst = self._shape()
        wait = schedule().reserve(self.key, interval, burst)
        if wait <= 0:
            return not (stop and stop.is_set())
        if stop is None:
            time.sleep(wait)
            return True
        return not stop.wait(wait)

    def _shape(self) -> tuple[float, int]:
        per_second = self.rpm / 60.0
        return 1.0 / per_second, max(1, int(per_second))  # up to one second's worth may go out at once

    def hold(self, seconds: float) -> None:
        if self.enabled and seconds > 0:
            schedule().hold(self.key, seconds, *self._shape())
