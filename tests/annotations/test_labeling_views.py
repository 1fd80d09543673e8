"""The labeling views: queue, next image, labeling page, draft autosave, submit, skip, history, preferences."""
from __future__ import annotations

import pytest
from django.urls import reverse
from prometheus_client import REGISTRY

from annotations import taxonomy
from annotations.models import Adjudication, Batch, Label, Labeling
from core.models import Profile
from core.models import AuditEvent
from inference.models import Run
from scoring.models import ImageScore, ScoringProfile
from tests.support.labeling import claim, form_data, labels_of

pytestmark = pytest.mark.django_db


def url(name, labeling):
    return reverse(f"annotations:{name}", kwargs={"labeling_id": labeling.pk})


@pytest.fixture
def image(make_image):
    return make_image("2017_00000100")


@pytest.fixture
def labeling(image, reviewer_a):
    return claim(reviewer_a)


# --- queue and next image ---------------------------------------------------------------------------------


def test_queue_page_shows_progress(client_as, reviewer_a, make_image):
    make_image("2017_00000001")
    make_image("2017_00000002")
    response = client_as(reviewer_a).get(reverse("annotations:queue"))
    assert response.status_code == 200
    assert response.context["progress"].left_in_queue == 2
    assert response.context["progress"].done_total == 0
    assert b"Left in queue" in response.content


def test_next_image_claims_and_redirects(client_as, reviewer_a, image):
    response = client_as(reviewer_a).post(reverse("annotations:next_image"))
    labeling = Labeling.objects.get(annotator__user=reviewer_a)
    assert response.status_code == 302 and response["Location"] == url("labeling", labeling)
    assert labeling.status == "draft" and labeling.image == image


def test_next_image_with_empty_queue_says_so(client_as, reviewer_a):
    response = client_as(reviewer_a).post(reverse("annotations:next_image"), follow=True)
    assert b"No image needs your labels right now." in response.content
    assert not Labeling.objects.exists()


def test_next_image_rejects_get(client_as, reviewer_a):
    assert client_as(reviewer_a).get(reverse("annotations:next_image")).status_code == 405


# --- the labeling page ---------------------------------------------------------------------------------


def test_labeling_page_shows_22_questions_grouped_by_level(client_as, reviewer_a, labeling):
    response = client_as(reviewer_a).get(url("labeling", labeling))
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count('class="q-row') == 22
    for level in (1, 2, 3, 4):
        assert f"Level {level}</span>" in body
    assert 'src="/static/js/labeling.js"' in body and "css/labeling.css" in body
    assert "<script>" not in body and "onclick" not in body  # no inline code (strict CSP later)
    assert 'class="labeling-image blurred"' in body  # blurred by default (profile)
    assert reverse("annotations:image_bytes", kwargs={"image_id": labeling.image_id}) in body


def test_labeling_page_not_blurred_when_preference_off(client_as, reviewer_a, labeling):
    Profile.objects.filter(user=reviewer_a).update(blur_images_by_default=False)
    reviewer_a.refresh_from_db()
    body = client_as(reviewer_a).get(url("labeling", labeling)).content.decode()
    assert 'class="labeling-image"' in body and "labeling-image blurred" not in body


def test_other_reviewers_labeling_is_404(client_as, reviewer_b, adjudicator, admin_user, labeling):
    for user in (reviewer_b, adjudicator, admin_user):
        client = client_as(user)
        assert client.get(url("labeling", labeling)).status_code == 404
        assert client.post(url("labeling_draft", labeling), form_data(labeling)).status_code == 404
        assert client.post(url("labeling_submit", labeling), form_data(labeling)).status_code == 404
        assert client.post(url("labeling_skip", labeling)).status_code == 404
    labeling.refresh_from_db()
    assert labeling.version == 1 and labeling.status == "draft" and not Label.objects.exists()


def test_outsider_gets_403_and_anonymous_goes_to_login(client_as, outsider, labeling):
    assert client_as(outsider).get(url("labeling", labeling)).status_code == 403
    response = client_as(None).post(url("labeling_submit", labeling), form_data(labeling))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not Label.objects.exists()


@pytest.mark.parametrize("name,method", [("labeling", "post"), ("labeling_draft", "get"), ("labeling_submit", "get"), ("labeling_skip", "get")])
def test_wrong_methods_are_405(client_as, reviewer_a, labeling, name, method):
    assert getattr(client_as(reviewer_a), method)(url(name, labeling)).status_code == 405


# --- draft autosave ----------------------------------------------------------------------------------------


def test_draft_save_keeps_answers_and_bumps_version(client_as, reviewer_a, labeling):
    client = client_as(reviewer_a)
    data = {"version": 1, "value-biometrics": "1", "value-age": "0.5", "rationale-age": "looks young", "note": "hm", "flag": ""}
    response = client.post(url("labeling_draft", labeling), data)
    assert response.status_code == 200
    assert response.json() == {"ok": True, "version": 2, "answered": 2, "saved_at": response.json()["saved_at"]}
    labeling.refresh_from_db()
    assert labeling.draft_values == {"biometrics": 1.0, "age": 0.5}
    assert labeling.draft_rationales == {"age": "looks young"} and labeling.note == "hm"
    assert not Label.objects.exists()  # drafts never become Label rows
    # Reloading loses nothing already answered.
    body = client.get(url("labeling", labeling)).content.decode()
    assert 'name="value-biometrics" value="1" checked' in body
    assert 'name="value-age" value="0.5" checked' in body
    assert 'value="looks young"' in body
    assert 'name="version" value="2"' in body


def test_saves_are_counted_for_the_metrics_page(client_as, reviewer_a, labeling):
    """cprt_labeling_saves (core/metrics.py, /metrics) counts each draft save and each submission."""
    def count(action):
        return REGISTRY.get_sample_value("cprt_labeling_saves_total", {"action": action}) or 0

    drafts, submits = count("draft"), count("submit")
    client = client_as(reviewer_a)
    assert client.post(url("labeling_draft", labeling), {"version": 1, "value-age": "0.5"}).status_code == 200
    assert client.post(url("labeling_draft", labeling), {"version": 1, "value-age": "1"}).status_code == 409  # stale: not counted
    assert (count("draft") - drafts, count("submit") - submits) == (1, 0)
    client.post(url("labeling_submit", labeling), form_data(labeling, version=2))
    assert Label.objects.filter(annotator__user=reviewer_a).count() == len(taxonomy.active().keys)
    assert (count("draft") - drafts, count("submit") - submits) == (1, 1)


def test_stale_draft_save_is_409_and_changes_nothing(client_as, reviewer_a, labeling):
    client = client_as(reviewer_a)
    assert client.post(url("labeling_draft", labeling), {"version": 1, "value-age": "1"}).status_code == 200
    response = client.post(url("labeling_draft", labeling), {"version": 1, "value-age": "0"})
    assert response.status_code == 409
    assert "saved elsewhere" in response.json()["error"] and "Nothing was overwritten" in response.json()["error"]
    assert response.json()["reload"] == url("labeling", labeling)
    labeling.refresh_from_db()
    assert labeling.version == 2 and labeling.draft_values == {"age": 1.0}


@pytest.mark.parametrize(
    "data,message",
    [
        ({"version": 1, "value-age": "0.7"}, "0.7 is not a valid answer for age"),
        ({"version": 1, "value-age": "2"}, "2 is not a valid answer for age"),
        ({"version": 1, "value-age": "yes"}, "not a valid answer for age"),
        ({"version": 1, "value-hair_colour": "1"}, "Unknown attribute(s): hair_colour"),
        ({"version": 1, "rationale-made_up": "x"}, "Unknown attribute(s): made_up"),
        ({"value-age": "1"}, "did not say which version"),
        ({"version": "abc", "value-age": "1"}, "version"),
        ({"version": 1, "flag": "ugly"}, "ugly is not a flag"),
        ({"version": 1, "rationale-age": "x" * 2001}, "rationale for age"),
    ],
)
def test_bad_draft_input_is_refused_and_changes_nothing(client_as, reviewer_a, labeling, data, message):
    response = client_as(reviewer_a).post(url("labeling_draft", labeling), data)
    assert response.status_code == 400
    assert message in response.json()["error"]
    labeling.refresh_from_db()
    assert labeling.version == 1 and labeling.draft_values == {} and labeling.flag == ""


def test_flag_is_saved_and_audited(client_as, reviewer_a, labeling):
    client_as(reviewer_a).post(url("labeling_draft", labeling), {"version": 1, "flag": "broken"})
    labeling.refresh_from_db()
    assert labeling.flag == "broken"
    event = AuditEvent.objects.get(action="labeling.flag")
    assert event.actor == reviewer_a and event.data["new"] == "broken" and event.data["old"] == ""


# --- submit ------------------------------------------------------------------------------------------------


def test_submit_writes_labels_with_history_and_rescores(client_as, reviewer_a, labeling, django_capture_on_commit_callbacks):
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([labeling.annotator])
    data = form_data(labeling, biometrics="1", age="0.5")
    data["rationale-biometrics"] = "clear face"
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client_as(reviewer_a).post(url("labeling_submit", labeling), data)
    assert response.status_code == 302 and response["Location"] == reverse("annotations:queue")  # no next image
    assert len(callbacks) == 1
    labeling.refresh_from_db()
    assert labeling.status == "submitted" and labeling.submitted_at is not None and labeling.version == 2
    labels = labels_of(labeling)
    assert len(labels) == 22 and labels["biometrics"] == 1.0 and labels["age"] == 0.5 and labels["gov_ids"] == 0.0
    assert Label.objects.get(attribute__key="biometrics").rationale == "clear face"
    history = Label.history.filter(image_id=labeling.image_id)
    assert history.count() == 22 and set(history.values_list("history_user__username", flat=True)) == {"reviewer_a"}
    score = ImageScore.objects.get(image_id=labeling.image_id, profile=profile)
    assert score.level == 1  # biometrics (level 1) is the only binary-1 attribute


@pytest.mark.parametrize("missing", [["biometrics"], ["age", "metadata", "gender"]])
def test_submit_with_missing_answers_names_them_and_changes_nothing(client_as, reviewer_a, labeling, missing):
    data = form_data(labeling)
    for key in missing:
        del data[f"value-{key}"]
    response = client_as(reviewer_a).post(url("labeling_submit", labeling), data)
    assert response.status_code == 400
    body = response.content.decode()
    assert f"Missing ({len(missing)}): {', '.join(k for k in taxonomy.active().keys if k in missing)}." in body
    for key in missing:
        assert f'class="q-row missing" data-key="{key}"' in body
    # The posted answers are kept on the page so nothing typed is lost.
    assert 'name="value-gov_ids" value="0" checked' in body
    labeling.refresh_from_db()
    assert labeling.status == "draft" and labeling.version == 1 and not Label.objects.exists()


@pytest.mark.parametrize(
    "bad,message",
    [({"value-age": "0.25"}, "0.25 is not a valid answer for age"), ({"value-nonexistent": "1"}, "Unknown attribute(s): nonexistent")],
)
def test_submit_with_bad_values_is_refused(client_as, reviewer_a, labeling, bad, message):
    data = form_data(labeling)
    data.update(bad)
    response = client_as(reviewer_a).post(url("labeling_submit", labeling), data)
    assert response.status_code == 400 and message in response.content.decode()
    assert not Label.objects.exists()
    labeling.refresh_from_db()
    assert labeling.status == "draft"


def test_stale_submit_is_409_with_reload_link_and_overwrites_nothing(client_as, reviewer_a, labeling):
    client = client_as(reviewer_a)
    client.post(url("labeling_draft", labeling), {"version": 1, "value-age": "1"})  # another tab saved
    response = client.post(url("labeling_submit", labeling), form_data(labeling, version=1))
    assert response.status_code == 409
    body = response.content.decode()
    assert "saved elsewhere" in body and f'href="{url("labeling", labeling)}"' in body
    labeling.refresh_from_db()
    assert labeling.status == "draft" and labeling.version == 2 and labeling.draft_values == {"age": 1.0}
    assert not Label.objects.exists()


def test_submitted_labeling_is_frozen_so_a_placeholder_cannot_copy_the_majority(client_as, reviewer_a, reviewer_b, labeling):
    """The placeholder hole: submit anything, see everyone's labels, resubmit the majority. Closed: after
    submitting, others' labels are shown and the labeling never changes again (page, draft and API)."""
    other = claim(reviewer_b)
    client_as(reviewer_b).post(url("labeling_submit", other), form_data(other, default="1"))
    client = client_as(reviewer_a)
    client.post(url("labeling_submit", labeling), form_data(labeling))  # the placeholder: every answer No
    labeling.refresh_from_db()
    body = client.get(url("labeling", labeling)).content.decode()
    assert "reviewer #1: Yes" in body and "is final" in body and 'data-editable="0"' in body
    assert 'data-action="submit"' not in body
    response = client.post(url("labeling_submit", labeling), form_data(labeling, default="1"))
    assert response.status_code == 403 and "is final" in response.content.decode()
    response = client.post(url("labeling_draft", labeling), form_data(labeling, default="1"))
    assert response.status_code == 403 and "is final" in response.json()["error"]
    api = reverse("api:labeling-submit", kwargs={"labeling_id": labeling.pk})
    response = client.post(api, {"version": labeling.version, "values": {k: 1 for k in taxonomy.active().keys}}, content_type="application/json")
    assert response.status_code == 423
    assert set(labels_of(labeling).values()) == {0.0}
    assert not Label.history.filter(history_type="~").exists()
    labeling.refresh_from_db()
    assert labeling.version == 2 and labeling.status == "submitted"


def test_adjudicated_image_makes_labeling_read_only(client_as, reviewer_a, adjudicator, labeling):
    client = client_as(reviewer_a)
    client.post(url("labeling_submit", labeling), form_data(labeling))
    labeling.refresh_from_db()
    attribute = labeling.image.labels.first().attribute
    Adjudication.objects.create(image=labeling.image, attribute=attribute, value=1.0, adjudicator=adjudicator)
    body = client.get(url("labeling", labeling)).content.decode()
    assert "read-only" in body and 'data-editable="0"' in body and "disabled" in body
    response = client.post(url("labeling_submit", labeling), form_data(labeling, age="1"))
    assert response.status_code == 403 and "read-only" in response.content.decode()
    response = client.post(url("labeling_draft", labeling), form_data(labeling, age="1"))
    assert response.status_code == 403 and "read-only" in response.json()["error"]
    assert labels_of(labeling)["age"] == 0.0
    labeling.refresh_from_db()
    assert labeling.version == 2


# --- blind labeling and model suggestions ----------------------------------------------------------------------


def test_blind_until_submitted_then_others_are_shown(client_as, reviewer_a, reviewer_b, labeling, model_annotators, set_labels):
    gpt, _ = model_annotators
    set_labels(labeling.image, gpt, {"biometrics": 1.0})
    other = claim(reviewer_b)
    assert other.image_id == labeling.image_id
    client_as(reviewer_b).post(url("labeling_submit", other), form_data(other, default="1"))
    client = client_as(reviewer_a)
    body = client.get(url("labeling", labeling)).content.decode()
    assert "reviewer #" not in body and "gpt-5.1" not in body and "Suggestion" not in body
    client.post(url("labeling_submit", labeling), form_data(labeling))
    body = client.get(url("labeling", labeling)).content.decode()
    assert "openai/gpt-5.1 · prompt annotate-v1: Yes" in body
    assert "reviewer #1: Yes" in body
    assert "reviewer_b" not in body  # other reviewers stay anonymous


def test_batch_suggestions_are_marked_and_never_saved_as_answers(client_as, reviewer_a, labeling, model_annotators, set_labels):
    gpt, gemini = model_annotators
    set_labels(labeling.image, gpt, {"biometrics": 1.0})
    set_labels(labeling.image, gemini, {"biometrics": 0.5})
    batch = Batch.objects.create(name="pilot", show_model_suggestions=True)
    batch.suggestion_annotators.set([gpt])
    labeling.image.batch = batch
    labeling.image.save()
    client = client_as(reviewer_a)
    body = client.get(url("labeling", labeling)).content.decode()
    # One suggestion row per attribute: the value, how many models gave it, who said what in its hover text.
    assert body.count("data-suggested-value=") == 22
    assert 'data-suggested-value="1" title="openai/gpt-5.1 · prompt annotate-v1: Yes"' in body
    assert "Suggested: <strong>Yes</strong>" in body and "(1 of 1 model)" in body
    assert "not your answers" in body and "gemini" not in body
    assert " checked" not in body  # suggestions never pre-fill the answers
    # Submitting without answering is still refused: suggestions are not answers.
    response = client.post(url("labeling_submit", labeling), {"version": 1})
    assert response.status_code == 400 and "Missing (22)" in response.content.decode()
    assert not Label.objects.filter(annotator=labeling.annotator).exists()
    batch.show_model_suggestions = False
    batch.save()
    assert "Suggest" not in client.get(url("labeling", labeling)).content.decode()


@pytest.mark.parametrize("run_fields, origin", [({"stand_in": True}, "stand-in"), ({"selection": {"demo": "seeded"}}, "demo"), ({}, "")])
def test_suggestions_carry_the_provenance_badge_of_the_runs_that_wrote_them(client_as, reviewer_a, labeling, model_annotators, set_labels,
                                                                            run_fields, origin):
    """A model annotator's suggestions are badged "stand-in" or "demo" as its runs are (issue 35); a real
    model's carry no badge. The badge is on each suggestion row and on the model in the "From:" note."""
    gpt, _ = model_annotators
    Run.objects.create(task="annotate", provider="openai", model_name="gpt-5.1", prompt_version="annotate-v1", annotator=gpt,
                       status=Run.STATUS_FINISHED, total=1, done=1, **run_fields)
    set_labels(labeling.image, gpt, {"biometrics": 1.0})
    labeling.image.batch = Batch.objects.create(name="pilot", show_model_suggestions=True)
    labeling.image.save()
    body = client_as(reviewer_a).get(url("labeling", labeling)).content.decode()
    assert body.count("data-suggested-value=") == 22
    if origin:
        assert body.count(f'data-provenance="{origin}"') == 22 + 1 and f">{origin}</span>" in body
        assert 'Suggested: <strong>Yes</strong> <span class="badge' in body
    else:
        assert "data-provenance" not in body


# --- skip ----------------------------------------------------------------------------------------------------


def test_skip_gives_the_slot_back_and_moves_on(client_as, reviewer_a, labeling, make_image):
    second = make_image("2017_00000200")
    response = client_as(reviewer_a).post(url("labeling_skip", labeling))
    labeling.refresh_from_db()
    assert labeling.status == "skipped"
    nxt = Labeling.objects.get(annotator__user=reviewer_a, image=second)
    assert response.status_code == 302 and response["Location"] == url("labeling", nxt)


def test_submit_opens_the_next_image_unless_the_preference_says_stay(client_as, reviewer_a, labeling, make_image):
    second = make_image("2017_00000200")
    client = client_as(reviewer_a)
    response = client.post(url("labeling_submit", labeling), form_data(labeling))
    nxt = Labeling.objects.get(annotator__user=reviewer_a, image=second)
    assert response.status_code == 302 and response["Location"] == url("labeling", nxt)
    assert client.post(reverse("annotations:preferences"), {"blur_images_by_default": "on", "stay_after_submit": "on"}).status_code == 302
    response = client.post(url("labeling_submit", nxt), form_data(nxt))
    assert response.status_code == 302 and response["Location"] == url("labeling", nxt)


def test_skip_can_be_undone_once_then_reopened_from_the_skipped_list(client_as, reviewer_a, labeling, make_image):
    make_image("2017_00000200")
    client = client_as(reviewer_a)
    client.post(url("labeling_draft", labeling), {"version": 1, "value-age": "1"})
    page = client.post(url("labeling_skip", labeling), follow=True).content.decode()
    assert f'action="{url("labeling_unskip", labeling)}"' in page and "Undo skip" in page
    queue = client.get(reverse("annotations:queue")).content.decode()
    assert "Undo skip" not in queue  # offered once
    assert "Skipped" in queue and f'action="{url("labeling_unskip", labeling)}"' in queue and "1 answers kept" in queue
    response = client.post(url("labeling_unskip", labeling))
    assert response.status_code == 302 and response["Location"] == url("labeling", labeling)
    labeling.refresh_from_db()
    assert labeling.status == "draft" and labeling.draft_values == {"age": 1.0}
    assert AuditEvent.objects.filter(action="labeling.unskip").count() == 1


def test_unskip_is_refused_when_the_slots_are_gone(client_as, reviewer_a, labeling, settings):
    from tests.conftest import make_user

    client = client_as(reviewer_a)
    client.post(url("labeling_skip", labeling))
    settings.CPRT_LABELINGS_PER_IMAGE = 1
    taker = claim(make_user("taker", "reviewer"))
    assert taker.image_id == labeling.image_id
    page = client.post(url("labeling_unskip", labeling), follow=True).content.decode()
    assert "taken every slot" in page
    labeling.refresh_from_db()
    assert labeling.status == "skipped"


def test_submitted_labeling_cannot_be_skipped(client_as, reviewer_a, labeling):
    client = client_as(reviewer_a)
    client.post(url("labeling_submit", labeling), form_data(labeling))
    response = client.post(url("labeling_skip", labeling), follow=True)
    assert "Only a draft can be skipped" in response.content.decode()
    labeling.refresh_from_db()
    assert labeling.status == "submitted"


# --- image history --------------------------------------------------------------------------------------------


def test_history_page_for_staff_only(client_as, reviewer_a, adjudicator, admin_user, labeling):
    client_as(reviewer_a).post(url("labeling_submit", labeling), form_data(labeling))
    target = reverse("annotations:image_history", kwargs={"image_id": labeling.image_id})
    assert client_as(reviewer_a).get(target).status_code == 403
    for user in (adjudicator, admin_user):
        response = client_as(user).get(target)
        assert response.status_code == 200
        assert len(response.context["changes"].object_list) == 22
        assert "submitted" in response.content.decode()
    assert client_as(admin_user).get(reverse("annotations:image_history", kwargs={"image_id": 999999})).status_code == 404
    assert client_as(admin_user).post(target).status_code == 405


# --- preferences ----------------------------------------------------------------------------------------------


def test_preferences_toggle_blur(client_as, reviewer_a):
    client = client_as(reviewer_a)
    assert client.get(reverse("annotations:preferences")).status_code == 200
    response = client.post(reverse("annotations:preferences"), {})  # unchecked box: blur off
    assert response.status_code == 302
    assert Profile.objects.get(user=reviewer_a).blur_images_by_default is False
    client.post(reverse("annotations:preferences"), {"blur_images_by_default": "on"})
    assert Profile.objects.get(user=reviewer_a).blur_images_by_default is True
    assert client.delete(reverse("annotations:preferences")).status_code == 405


def test_preferences_cannot_change_role(client_as, reviewer_a):
    client_as(reviewer_a).post(reverse("annotations:preferences"), {"role": "admin"})
    assert Profile.objects.get(user=reviewer_a).role == "reviewer"


def test_password_change(client_as, reviewer_a):
    client = client_as(reviewer_a)
    target = reverse("annotations:password_change")
    assert client.get(target).status_code == 200
    bad = client.post(target, {"old_password": "wrong", "new_password1": "x", "new_password2": "x"})
    assert bad.status_code == 400 and bad.context["form"].errors
    reviewer_a.refresh_from_db()
    assert reviewer_a.check_password("correct-horse-battery-staple")
    good = client.post(target, {"old_password": "correct-horse-battery-staple",
                                "new_password1": "a-much-newer-secret-42", "new_password2": "a-much-newer-secret-42"})
    assert good.status_code == 302
    reviewer_a.refresh_from_db()
    assert reviewer_a.check_password("a-much-newer-secret-42")
