"""One table-driven permission test over every URL pattern, for every persona (STYLE.md rule 7)."""
from __future__ import annotations

import re

import pytest
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


# --- the "blind" column ---------------------------------------------------------------------------------
# For every URL a reviewer can reach, the response about an image they have not submitted carries nothing
# derived from other annotators' labels of it (annotations/blind.py). Every image of the matrix gets
# another annotator's labels with a traceable rationale and a consensus with a traceable score; then every
# case is requested as each reviewer and the body is searched for those values.

BLIND_PERSONAS = ("reviewer_a", "reviewer_b")
LEVEL_WORDS = re.compile(r"\blevel [1-4]\b")  # the home page's "level 3" (taxonomy headings say "Level 3")


@pytest.fixture
def blind_world(world):
    from annotations import taxonomy
    from annotations.models import Annotator, Image, Label
    from scoring.models import ImageScore, ScoringProfile

    profile = ScoringProfile.active()
    profile.activate()
    other = Annotator.for_model("openai", "secret-model", "annotate-v1")
    secrets = {}
    for k, image in enumerate(Image.objects.order_by("pk")):
        rationale = f"SECRET-RATIONALE-{image.pk}"
        Label.objects.bulk_create([Label(image=image, annotator=other, attribute_id=a, value=1.0, rationale=rationale)
                                   for a in taxonomy.attribute_ids().values()])
        score = round(0.987654 - 0.0113 * k, 6)
        ImageScore.objects.create(image=image, profile=profile, binary_labels={key: 1 for key in taxonomy.active().keys},
                                  n1=3, n2=5, n3=7, n4=7, level=1 + k % 4, score=score)
        secrets[image.pk] = [rationale, f"{score:.3f}", repr(score)]
    world["blind_secrets"] = secrets
    return world


def _carries(body: str, secret: str) -> bool:
    """The secret as a whole token: a score "0.931" must not match inside a timestamp such as "12:34:50.931"."""
    return re.search(rf"(?<![\w.]){re.escape(secret)}(?![\w])", body) is not None


def _submitted_image_ids(user) -> set[int]:
    from annotations.models import Labeling

    return set(Labeling.objects.filter(annotator__user=user, status="submitted").values_list("image_id", flat=True))


def _json_leaks(data, hidden: set[int]) -> list[str]:
    """Objects about a hidden image (by "id" or "image") that carry a level, a score or another annotator's label."""
    leaks, stack = [], [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            image_id = item.get("id") if "vispr_id" in item else item.get("image")
            if image_id in hidden:
                for key in ("level", "score", "counts", "binary_labels"):
                    if item.get(key) is not None:
                        leaks.append(f"image {image_id} has {key}={item[key]!r}")
                for label in item.get("labels") or []:
                    if label.get("annotator") != "you":
                        leaks.append(f"image {image_id} shows a label by {label.get('annotator')}")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return leaks


def _filtered_by_others_labels(url: str) -> bool:
    from annotations import blind

    return any(re.search(rf"[?&]{name}=[^&]", url) for name in blind.OTHERS_LABEL_FILTERS)


def _list_leaks(url: str, data, hidden: set[int]) -> list[str]:
    """A list filtered by something derived from others' labels (?level=, ?vispr_label=, ?dataset=, ?coverage=) must not
    include a hidden image: being listed is the leak."""
    if not _filtered_by_others_labels(url) or not isinstance(data, dict):
        return []
    return [f"image {row['id']} listed under a filter from others' labels" for row in data.get("results", []) if row.get("id") in hidden]


def _page_list_leaks(url: str, body: str, hidden_vispr_ids: set[str]) -> list[str]:
    """The Images page under such a filter: a tile of a hidden image is the leak."""
    if not _filtered_by_others_labels(url):
        return []
    return [f"image {v} listed under a filter from others' labels" for v in re.findall(r'data-vispr-id="([^"]+)"', body) if v in hidden_vispr_ids]


def test_blind_column(blind_world, client):
    from annotations.models import Image

    world = blind_world
    failures, checked = [], 0
    all_ids = set(Image.objects.values_list("pk", flat=True))
    vispr_of = dict(Image.objects.values_list("pk", "vispr_id"))
    for case in all_cases(world):
        url = reverse(case.url_name, kwargs=case.kwargs) + (f"?{case.query}" if case.query else "")
        for persona in BLIND_PERSONAS:
            client.logout()
            client.force_login(world[persona])
            response = getattr(client, case.method)(url, data=case.data or {})
            content_type = response.get("Content-Type", "")
            if response.status_code == 500:  # an error page hides what the response would carry (the API's 500 did)
                failures.append(f"{case.method.upper()} {url} as {persona}: 500")
                continue
            if response.status_code > 500:  # /readyz answers 503 without its services: nothing to check
                continue
            if not content_type.startswith(("text/html", "application/json")):
                continue
            checked += 1
            hidden = all_ids - _submitted_image_ids(world[persona])
            body = response.content.decode()
            where = f"{case.method.upper()} {url} as {persona}"
            for image_id in hidden:
                for secret in world["blind_secrets"][image_id]:
                    if _carries(body, secret):
                        failures.append(f"{where}: carries {secret!r} of image {image_id}, not submitted by them")
            if content_type.startswith("application/json"):
                data = response.json()
                failures += [f"{where}: {leak}" for leak in _json_leaks(data, hidden) + _list_leaks(url, data, hidden)]
            else:
                failures += [f"{where}: {leak}" for leak in _page_list_leaks(url, body, {vispr_of[i] for i in hidden})]
            if not content_type.startswith("application/json") and LEVEL_WORDS.search(body) and not (all_ids - hidden):
                failures.append(f"{where}: shows a consensus level ({LEVEL_WORDS.search(body).group(0)!r}) with nothing submitted")
    assert checked > 20, f"only {checked} reviewer responses were checked"
    assert not failures, "\n".join(sorted(set(failures)))
