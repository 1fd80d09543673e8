"""Pages keep answering while the Redis cache is away: sessions live in the database, and the cache
(core.cache.ResilientRedisCache) answers a miss instead of raising. Uses a private redis-server on
a free port, never the shared one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import redis
from django.core.cache import cache

from tests.conftest import PASSWORD
from tests.support.redis_server import REDIS_SERVER, PrivateRedis
from tests.support.workers import ROOT

pytestmark = pytest.mark.skipif(not os.path.exists(REDIS_SERVER), reason="redis-server is not installed")


@pytest.fixture
def private_redis(tmp_path):
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.kill()


def production_settings(cache_url: str) -> dict:
    """CACHES and SESSION_ENGINE as settings build them from CACHE_URL (settings are read once, at import)."""
    env = dict(os.environ, CACHE_URL=cache_url, DJANGO_SETTINGS_MODULE="cprt_site.settings")
    script = ("import json, django; django.setup(); from django.conf import settings as s; "
              "print(json.dumps({'CACHES': s.CACHES, 'SESSION_ENGINE': s.SESSION_ENGINE}))")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.django_db
def test_pages_answer_while_the_cache_is_down(client, settings, private_redis, reviewer_a, admin_user, make_image):
    built = production_settings(f"redis://127.0.0.1:{private_redis.port}/0")
    assert built["SESSION_ENGINE"] == "django.contrib.sessions.backends.db"
    assert built["CACHES"]["default"]["BACKEND"] == "core.cache.ResilientRedisCache"
    settings.CACHES = built["CACHES"]
    settings.SESSION_ENGINE = built["SESSION_ENGINE"]
    make_image("2017_00001")
    cache.set("probe", 1)
    assert redis.Redis(port=private_redis.port).exists(":1:probe"), "the pages below use the private Redis"

    reviewer, admin = client, client.__class__()
    assert reviewer.post("/accounts/login/", {"username": "reviewer_a", "password": PASSWORD}).status_code == 302
    assert admin.post("/accounts/login/", {"username": "admin", "password": PASSWORD}).status_code == 302
    labeling_url = reviewer.post("/label/next")["Location"]

    def pages_answer():
        assert reviewer.get("/").status_code == 200
        assert reviewer.get(labeling_url).status_code == 200
        assert admin.get("/runs/").status_code == 200

    pages_answer()
    private_redis.kill()
    started = time.monotonic()
    pages_answer()  # logged in still, every page 200
    assert time.monotonic() - started < 20
    assert cache.get("probe") is None and cache.get("probe", "fallback") == "fallback"
    assert cache.add("other", 1) is False

    private_redis.start()
    pages_answer()
    cache.set("probe", 2)
    assert cache.get("probe") == 2
