"""The blind rule as a differential check (issue 38): change only the others' labels of an image a reviewer is drafting
(other people's and models' label values, VISPR's labels, its dataset-version membership, its consensus) and every
response that reviewer gets stays byte for byte the same (CSRF tokens aside).

It requests every GET of the permission matrix (tests/support/permission_cases) as the drafting reviewer, plus the
filters and API reads about those images, in a batch whose model suggestions are on (the suggested model's labels are
shown by design and stay unchanged here), before and after the change."""
from __future__ import annotations

import re

from django.urls import reverse

from tests.support.permission_cases import all_cases

# A CSRF token is masked afresh on every render; /readyz reports how long its checks took.
VOLATILE = re.compile(r'(?:csrfmiddlewaretoken" value="|"X-CSRFToken": "|data-csrf-token=")[A-Za-z0-9]+|"seconds": [0-9.]+')


def _normalised(body: bytes) -> str:
    return VOLATILE.sub("<volatile>", body.decode(errors="replace"))


def _urls(world) -> list[str]:
    urls = [reverse(c.url_name, kwargs=c.kwargs) + (f"?{c.query}" if c.query else "")
            for c in all_cases(world) if c.method == "get" and c.expected("reviewer_a") != 405]
    drafts = [world["labeling_page"], world["api_labeling"]]
    version = world["dataset_version"].pk
    urls += [f"/?{q}" for q in ("vispr_label=a31_passport", "vispr_label=a0_safe", f"dataset={version}", "coverage=none",
                                "coverage=partial", "coverage=complete", "coverage=models", "level=1", "level=3", "q=perm_")]
    for labeling in drafts:
        urls += [f"/api/labelings/{labeling.pk}/", f"/api/images/{labeling.image_id}/",
                 reverse("annotations:labeling", kwargs={"labeling_id": labeling.pk})]
    urls += ["/api/images/?level=1", "/api/images/?level=4", "/api/labelings/", "/api/labelings/?status=draft"]
    return sorted(set(urls))


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def _responses(client, urls) -> dict[str, tuple[int, str]]:
    return {url: (response.status_code, _normalised(_body(response))) for url in urls for response in [client.get(url)]}


def _change_others_labels(world, images) -> None:
    """Every kind of others' label of `images` changes; nothing of reviewer_a's and nothing of the suggested model."""
    from annotations import label_version, taxonomy
    from annotations.models import Annotator, Label, Labeling
    from scoring.models import ImageScore, ScoringProfile

    ids = taxonomy.attribute_ids()
    keys = list(taxonomy.active().keys)
    other_model = Annotator.for_model("openai", "other-model", "annotate-v1")
    person = Annotator.for_user(world["reviewer_b"])
    vispr = Annotator.vispr()
    profile = ScoringProfile.active()
    for n, image in enumerate(images):
        for annotator, value in ((other_model, 1.0), (person, 0.5), (vispr, 1.0)):
            Label.objects.bulk_create([Label(image=image, annotator=annotator, attribute_id=ids[k], value=value,
                                             rationale=f"OTHER-{annotator.pk}") for k in keys])
        Labeling.objects.create(image=image, annotator=person, status=Labeling.STATUS_SUBMITTED, draft_values={k: 0.5 for k in keys})
        image.vispr_labels = ["a31_passport", "a0_safe"]
        image.save(update_fields=["vispr_labels"])
        world["dataset_version"].members.add(image)
        ImageScore.objects.update_or_create(image=image, profile=profile, defaults=dict(
            binary_labels={k: 1 for k in keys}, n1=3, n2=5, n3=7, n4=7, level=1 + n, score=0.9))
    label_version.bump([other_model.pk, person.pk, vispr.pk])


def test_a_drafting_reviewer_gets_the_same_responses_whatever_the_others_labels(world, client):
    from scoring.models import ScoringProfile

    ScoringProfile.active().activate()
    drafts = [world["labeling_page"], world["api_labeling"]]
    assert all(d.status == "draft" and d.image.batch.show_model_suggestions for d in drafts)
    urls = _urls(world)
    client.force_login(world["reviewer_a"])
    before = _responses(client, urls)
    assert sum(status == 200 for status, _ in before.values()) > 30
    suggested = before[f"/api/labelings/{world['labeling_page'].pk}/"][1]
    assert '"suggestions":[{"annotator":"openai/suggester-model' in suggested.replace(" ", "")  # suggestions on, shown
    _change_others_labels(world, [d.image for d in drafts])
    after = _responses(client, urls)
    changed = [url for url in urls if before[url] != after[url]]
    assert not changed, "responses changed with only the others' labels of a drafted image:\n" + "\n".join(
        f"{url}: {before[url][0]} -> {after[url][0]}" for url in changed)


def test_the_differential_check_sees_a_leak(world, client):
    """The check can fail: a reviewer who submitted the image sees the others' labels, so their responses change."""
    from annotations.models import Labeling

    labeling = world["labeling_page"]
    Labeling.objects.filter(pk=labeling.pk).update(status=Labeling.STATUS_SUBMITTED)
    url = f"/api/labelings/{labeling.pk}/"
    client.force_login(world["reviewer_a"])
    before = _responses(client, [url, "/?vispr_label=a31_passport"])
    _change_others_labels(world, [labeling.image])
    after = _responses(client, [url, "/?vispr_label=a31_passport"])
    assert before[url] != after[url] and before["/?vispr_label=a31_passport"] != after["/?vispr_label=a31_passport"]
