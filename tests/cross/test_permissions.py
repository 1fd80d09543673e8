"""One table-driven permission test over every URL pattern, for every persona (STYLE.md rule 7)."""
from __future__ import annotations

from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.support.permission_cases import LOGIN, PERSONAS, all_cases

# URL namespaces that are not ours to test here (Django's own admin has its own permission model).
SKIPPED_PREFIXES = ("admin:",)


def _url_names(resolver=None, namespace=""):
    resolver = resolver or get_resolver()
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            ns = f"{namespace}{p.namespace}:" if p.namespace else namespace
            yield from _url_names(p, ns)
        elif isinstance(p, URLPattern) and p.name:
            yield f"{namespace}{p.name}"


def test_every_url_pattern_has_a_permission_case(world):
    covered = {case.url_name for case in all_cases(world)}
    names = {n for n in _url_names() if not n.startswith(SKIPPED_PREFIXES)}
    missing = sorted(names - covered)
    assert not missing, f"URL patterns without a permission case: {missing}"


def test_permission_matrix(world, client):
    failures = []
    for case in all_cases(world):
        url = reverse(case.url_name, kwargs=case.kwargs) + (f"?{case.query}" if case.query else "")
        for persona in PERSONAS:
            client.logout()
            if world[persona] is not None:
                client.force_login(world[persona])
            response = getattr(client, case.method)(url, data=case.data or {})
            want = case.expected(persona)
            got = response.status_code
            if want == LOGIN:
                ok = got == 302 and "/accounts/login/" in response["Location"]
            else:
                ok = got == want
            if not ok:
                failures.append(f"{case.method.upper()} {url} as {persona}: expected {want}, got {got}")
    assert not failures, "\n".join(failures)
