"""What keeps a labeling request cheap, and that none of it changes what a user sees or may do.

- the role comes with the user (one query: cprt_site.auth.ProfileModelBackend);
- sessions are read through the cache only when the cache is shared (CACHE_URL=redis://...), and a
  logout ends the session there too;
- the parsed taxonomy and its attribute ids are kept per process and per stored version;
- the labeling page shows "left in the queue" from a count at most CPRT_QUEUE_COUNT_TTL_S old; the
  queue page always counts afresh.
"""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotations import taxonomy
from annotations.models import Attribute, TaxonomyVersion
from tests.support.labeling import claim

pytestmark = pytest.mark.django_db


def test_role_is_loaded_with_the_user(client, reviewer_a):
    client.force_login(reviewer_a)
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(reverse("annotations:queue")).status_code == 200
    sql = [q["sql"] for q in ctx.captured_queries]
    assert not any('FROM "annotations_profile"' in q for q in sql), "the profile must come joined with the user"
    assert any('"auth_user"' in q and '"annotations_profile"' in q for q in sql)


def test_cached_sessions_end_at_logout(client, reviewer_a, settings):
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    client.force_login(reviewer_a)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert client.get(reverse("annotations:queue")).status_code == 200
    client.post(reverse("logout"))
    client.cookies[settings.SESSION_COOKIE_NAME] = cookie  # replay the old session cookie
    response = client.get(reverse("annotations:queue"))
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_sessions_are_read_from_the_database_even_with_a_shared_cache():
    from django.conf import settings

    # With a shared cache too: a page must not depend on Redis (docs/operations.md).
    assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.db"


def test_a_new_taxonomy_version_is_seen_at_once():
    old = taxonomy.active()
    old_ids = taxonomy.attribute_ids()
    source = taxonomy.read_file()
    tv = TaxonomyVersion.objects.create(version="test-2", name="test", source=source)
    for attribute in Attribute.objects.filter(pk__in=old_ids.values()):
        attribute.pk = None
        attribute.taxonomy = tv
        attribute.save()
    new_ids = taxonomy.attribute_ids()
    assert set(new_ids) == set(old_ids) and not set(new_ids.values()) & set(old_ids.values())
    assert taxonomy.active() == taxonomy.from_data(source)
    tv.delete()
    assert taxonomy.attribute_ids() == old_ids and taxonomy.active() == old


def test_labeling_page_queue_count_is_recent_and_queue_page_is_exact(client, reviewer_a, make_image, settings):
    settings.CPRT_QUEUE_COUNT_TTL_S = 30
    for i in range(3):
        make_image(f"2017_cost_{i}")
    client.force_login(reviewer_a)
    labeling = claim(reviewer_a)
    page = reverse("annotations:labeling", kwargs={"labeling_id": labeling.pk})
    first = client.get(page).content.decode()
    assert 'data-progress="left" title="counted at most 30 s ago">2<' in first
    make_image("2017_cost_new")
    assert 'data-progress="left" title="counted at most 30 s ago">2<' in client.get(page).content.decode()
    queue_page = client.get(reverse("annotations:queue")).content.decode()
    assert 'data-progress="left">3<' in queue_page
    settings.CPRT_QUEUE_COUNT_TTL_S = 0  # no caching at all: the page counts every time
    from django.core.cache import cache

    cache.clear()
    make_image("2017_cost_newer")
    assert 'data-progress="left">4<' in client.get(page).content.decode()


@pytest.mark.parametrize(
    "trusted, forwarded, expected",
    [
        (0, "6.6.6.6", "10.0.0.9"),  # no proxy: a forged header is ignored
        (1, "6.6.6.6, 1.2.3.4", "1.2.3.4"),  # nginx only: the address nginx saw
        (2, "6.6.6.6, 1.2.3.4, 10.0.0.5", "1.2.3.4"),  # TLS proxy + nginx
        (2, "1.2.3.4", "10.0.0.9"),  # fewer hops than proxies: not trusted
    ],
)
def test_login_throttling_sees_the_client_behind_trusted_proxies(rf, settings, trusted, forwarded, expected):
    from cprt_site.auth import client_ip

    settings.CPRT_TRUSTED_PROXIES = trusted
    request = rf.get("/", HTTP_X_FORWARDED_FOR=forwarded, REMOTE_ADDR="10.0.0.9")
    assert client_ip(request) == expected


def test_axes_locks_out_by_the_forwarded_client_address(client, reviewer_a, settings):
    from axes.models import AccessAttempt

    settings.CPRT_TRUSTED_PROXIES = 1
    for _ in range(2):
        client.post(reverse("login"), {"username": "reviewer_a", "password": "wrong"}, HTTP_X_FORWARDED_FOR="203.0.113.7", REMOTE_ADDR="10.0.0.2")
    assert list(AccessAttempt.objects.values_list("ip_address", flat=True)) == ["203.0.113.7"]
