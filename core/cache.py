"""A Redis cache that degrades to no cache while Redis is unreachable.

Django's RedisCache raises on a connection error, so every page that reads the cache would answer
500 during a Redis restart or failover. Here a connection or timeout error is logged (at most once
every LOG_EVERY_S seconds per process) and answered as a miss: reads return the default, writes do
nothing, `add` reports that it stored nothing. The cache holds only what can be computed again (the
labeling queue's count); sessions are in the database (settings SESSION_ENGINE).
"""
from __future__ import annotations

import functools
import logging
import time

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

LOG_EVERY_S = 30.0
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)


def _failing_soft(answer):
    """Wrap a cache method: on an unreachable Redis, log and return `answer(args, kwargs)`."""

    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except UNREACHABLE as exc:
                self._log_unreachable(method.__name__, exc)
                return answer(args, kwargs)

        return wrapper

    return decorate


def _default(position: int, name: str = "default"):
    return lambda args, kwargs: kwargs.get(name, args[position] if len(args) > position else None)


class ResilientRedisCache(RedisCache):
    _last_logged = 0.0

    def _log_unreachable(self, operation: str, exc: Exception) -> None:
        now = time.monotonic()
        if now - ResilientRedisCache._last_logged >= LOG_EVERY_S:
            ResilientRedisCache._last_logged = now
            logger.warning("cache unreachable, answering without it (%s: %s: %s)", operation, type(exc).__name__, exc)

    get = _failing_soft(_default(1))(RedisCache.get)
    get_many = _failing_soft(lambda args, kwargs: {})(RedisCache.get_many)
    has_key = _failing_soft(lambda args, kwargs: False)(RedisCache.has_key)
    add = _failing_soft(lambda args, kwargs: False)(RedisCache.add)
    set = _failing_soft(lambda args, kwargs: None)(RedisCache.set)
    set_many = _failing_soft(lambda args, kwargs: list(args[0]) if args else [])(RedisCache.set_many)
    touch = _failing_soft(lambda args, kwargs: False)(RedisCache.touch)
    delete = _failing_soft(lambda args, kwargs: False)(RedisCache.delete)
    delete_many = _failing_soft(lambda args, kwargs: None)(RedisCache.delete_many)
    clear = _failing_soft(lambda args, kwargs: False)(RedisCache.clear)

    def get_or_set(self, key, default, timeout=None, version=None):
        # Django's own get_or_set ends with get() again, which would answer None on a miss without Redis.
        value = self.get(key, version=version)
        if value is None:
            value = default() if callable(default) else default
            self.add(key, value, timeout=timeout, version=version)
        return value
