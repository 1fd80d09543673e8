"""The Django admin does not bypass the services: labels, labelings, adjudications and scores are
read-only there (revert included), image edits are audited, and a profile change is audited and
rescores every stored score under the profile."""
from __future__ import annotations

import pytest
from django.contrib.admin import helpers
from django.urls import reverse

from annotations.models import Adjudication, Image, Label, Labeling
from core.models import AuditEvent
from scoring import engine
from scoring.models import ImageScore, ScoringProfile
from scoring.services.scores import recompute_scores
from tests.support.permission_cases.scoring import label_everything, make_images

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored(model_annotators, adjudicator):
    """Four images labeled by both consensus models (gov_ids on two of them), scored, one adjudication."""
    images = make_images(4, prefix="2017_83", with_published=False)
    gpt, gem = model_annotators
    for annotator in (gpt, gem):
        label_everything(images, annotator, lambda i, k: 1.0 if (k == "gov_ids" and i < 2) or k == "age" else 0.0)
        for image in images:
            Labeling.objects.create(image=image, annotator=annotator, status="submitted")
    attribute = Label.objects.filter(attribute__key="gov_ids").first().attribute
    Adjudication.objects.create(image=images[3], attribute=attribute, value=1.0, adjudicator=adjudicator)
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, gem])
    recompute_scores(profile)
    return images


def everything():
    return (
        sorted(Label.objects.values_list("pk", "value", "rationale")),
        sorted(Labeling.objects.values_list("pk", "status", "version", "note", "flag")),
        sorted(Adjudication.objects.values_list("pk", "value", "note")),
        sorted(ImageScore.objects.values_list("pk", "level", "score")),
        Adjudication.objects.count(), Label.objects.count(),
    )


@pytest.mark.parametrize("model", [Label, Labeling, Adjudication, ImageScore])
def test_computed_and_labeled_rows_are_read_only_in_the_admin(client, admin_user, scored, model):
    client.force_login(admin_user)
    opts = model._meta
    obj = model.objects.first()
    before = everything()
    change_url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    assert client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")).status_code == 200
    page = client.get(change_url)
    assert page.status_code == 200 and b'name="_save"' not in page.content  # shown, not editable
    # Whatever is posted, nothing changes: no add, no change, no delete.
    fields = {f.name: "1" for f in opts.fields if f.name != "id"}
    assert client.post(change_url, fields).status_code == 403
    assert client.post(reverse(f"admin:{opts.app_label}_{opts.model_name}_add"), fields).status_code == 403
    delete_url = reverse(f"admin:{opts.app_label}_{opts.model_name}_delete", args=[obj.pk])
    assert client.post(delete_url, {"post": "yes"}).status_code == 403
    changelist = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    client.post(changelist, {"action": "delete_selected", helpers.ACTION_CHECKBOX_NAME: [obj.pk], "post": "yes"})
    assert everything() == before


@pytest.mark.parametrize("model", [Label, Labeling, Adjudication])
def test_history_revert_is_refused(client, admin_user, scored, model):
    """simple_history's revert form saves an old version on POST; it must not bypass the services."""
    obj = model.objects.first()
    first_version = model.history.filter(id=obj.pk).order_by("history_id").first()
    if first_version is None:  # bulk-created rows have no history yet: make two versions
        obj.save()
        first_version = model.history.filter(id=obj.pk).order_by("history_id").first()
    if model is Label:
        model.objects.filter(pk=obj.pk).update(value=0.5)
    elif model is Labeling:
        model.objects.filter(pk=obj.pk).update(note="changed through the service")
    else:
        model.objects.filter(pk=obj.pk).update(value=0.5)
    before = everything()
    client.force_login(admin_user)
    opts = model._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_simple_history", args=[obj.pk, first_version.history_id])
    assert client.get(url).status_code == 200  # the old version can be looked at
    assert client.post(url, {"_change_history": "1"}).status_code == 403
    assert everything() == before


def test_image_list_has_no_inline_edits_and_the_change_form_is_audited(client, admin_user, scored):
    client.force_login(admin_user)
    image = scored[0]
    changelist = reverse("admin:annotations_image_changelist")
    # What list_editable used to accept: a formset posted to the change list.
    client.post(changelist, {
        "form-TOTAL-FORMS": "1", "form-INITIAL-FORMS": "1", "form-0-id": image.pk, "form-0-unsuitable": "on", "_save": "Save",
    })
    assert Image.objects.get(pk=image.pk).unsuitable is False
    page = client.get(changelist)
    assert b'name="form-0-unsuitable"' not in page.content
    change = client.get(reverse("admin:annotations_image_change", args=[image.pk]))
    form = change.context["adminform"].form
    data = {name: ("" if value is None else value) for name, value in form.initial.items() if name in form.fields}
    data.update({"unsuitable": "on", "published_level": "2", "published_score": "0.6"})
    data = {k: v for k, v in data.items() if v is not False}
    response = client.post(reverse("admin:annotations_image_change", args=[image.pk]), data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response
    image.refresh_from_db()
    assert image.unsuitable and image.published_level == 2
    event = AuditEvent.objects.get(action="image.change")
    assert event.actor == admin_user and event.data["changes"]["unsuitable"] == {"old": False, "new": True}
    assert event.data["changes"]["published_level"] == {"old": None, "new": 2}


def _profile_form(profile, **changes):
    data = {
        "name": profile.name, "lo1": profile.lo1, "lo2": profile.lo2, "lo3": profile.lo3, "source": profile.source,
        "consensus_annotators": list(profile.consensus_annotators.values_list("id", flat=True)),
    }
    if profile.provisional:
        data["provisional"] = "on"
    data.update(changes)
    return data


def test_changing_a_profiles_boundaries_rescores_its_stored_scores(client, admin_user, scored):
    profile = ScoringProfile.active()
    version, lo1 = profile.version, profile.lo1
    before = dict(ImageScore.objects.filter(profile=profile).values_list("image_id", "score"))
    level1 = [i.pk for i in scored[:2]] + [scored[3].pk]  # gov_ids is a level-1 attribute; image 3 by adjudication
    assert all(before[pk] >= profile.lo1 for pk in level1)
    client.force_login(admin_user)
    url = reverse("admin:scoring_scoringprofile_change", args=[profile.pk])
    response = client.post(url, _profile_form(profile, lo1="0.85"))
    assert response.status_code == 302
    profile.refresh_from_db()
    assert profile.lo1 == 0.85 and profile.version == version + 1
    after = dict(ImageScore.objects.filter(profile=profile).values_list("image_id", "score"))
    assert all(after[pk] >= 0.85 and after[pk] != before[pk] for pk in level1)
    bounds = engine.Bounds.from_inner(0.85, profile.lo2, profile.lo3)
    for score in ImageScore.objects.filter(profile=profile):
        assert score.score == pytest.approx(engine.severity(score.counts, bounds)[1])
    event = AuditEvent.objects.get(action="profile.change")
    assert event.actor == admin_user
    assert event.data["changes"]["lo1"] == {"old": lo1, "new": 0.85}
    assert event.data["changes"]["version"] == {"old": version, "new": version + 1}
    assert event.data["rescored"] == {"scored": 4, "incomplete": 0}


def test_changing_the_consensus_set_rescores_every_image(client, admin_user, scored, model_annotators):
    profile = ScoringProfile.active()
    gpt, _ = model_annotators
    client.force_login(admin_user)
    url = reverse("admin:scoring_scoringprofile_change", args=[profile.pk])
    assert client.post(url, _profile_form(profile, consensus_annotators=[gpt.pk])).status_code == 302
    assert set(ScoringProfile.objects.get(pk=profile.pk).consensus_annotators.all()) == {gpt}
    assert ImageScore.objects.filter(profile=profile).count() == 4
    # Nothing that decides a score changed: saved, audited, not rescored.
    stamp = list(ImageScore.objects.values_list("computed_at", flat=True))
    assert client.post(url, _profile_form(ScoringProfile.objects.get(pk=profile.pk), source="typo fixed")).status_code == 302
    assert list(ImageScore.objects.values_list("computed_at", flat=True)) == stamp
    assert AuditEvent.objects.filter(action="profile.change").latest("created_at").data["rescored"] is None


def test_bad_boundaries_are_refused_and_change_nothing(client, admin_user, scored):
    profile = ScoringProfile.active()
    before = (everything(), ScoringProfile.objects.values_list("lo1", "lo2", "lo3", "version").get(pk=profile.pk))
    client.force_login(admin_user)
    url = reverse("admin:scoring_scoringprofile_change", args=[profile.pk])
    response = client.post(url, _profile_form(profile, lo1="0.4"))  # below lo2
    assert response.status_code == 200 and response.context["adminform"].form.errors
    assert (everything(), ScoringProfile.objects.values_list("lo1", "lo2", "lo3", "version").get(pk=profile.pk)) == before
    assert not AuditEvent.objects.filter(action="profile.change").exists()
