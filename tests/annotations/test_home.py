"""The home page (image list with consensus scores) and the protected image-bytes view."""
from __future__ import annotations

import io
import re

import pytest
from django.urls import reverse
from PIL import Image as PILImage

from annotations.images import attach, clean_image
from annotations.models import Image
from scoring.models import ScoringProfile
from scoring.services.scores import recompute_scores


def jpeg_with_exif() -> bytes:
    exif = PILImage.Exif()
    exif[0x010F] = "SecretCam"  # Make
    exif[0x0110] = "Model X"  # Model
    exif[0x8825] = {2: (52.0, 31.0, 12.0), 1: "N", 4: (13.0, 24.0, 36.0), 3: "E"}  # GPS IFD
    buf = io.BytesIO()
    PILImage.new("RGB", (40, 30), (10, 120, 200)).save(buf, format="JPEG", exif=exif.tobytes())
    raw = buf.getvalue()
    assert b"SecretCam" in raw and PILImage.open(io.BytesIO(raw)).getexif()  # the fixture really has EXIF
    return raw


@pytest.fixture
def scored(make_image, model_annotators, set_labels):
    """Three images: one level 1 (biometrics), one with nothing present, one without consensus yet."""
    openai, gemini = model_annotators
    severe, plain, pending = make_image("2017_00000001"), make_image("2017_00000002"), make_image("2017_00000003")
    for annotator in (openai, gemini):
        set_labels(severe, annotator, {"biometrics": 1.0, "location": 0.5})
        set_labels(plain, annotator, {"location": 0.5})
    set_labels(pending, openai, {"gov_ids": 1.0})  # gemini has not labelled it: incomplete consensus
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([openai, gemini])
    recompute_scores(profile)
    return {"severe": severe, "plain": plain, "pending": pending, "profile": profile}


def tile(html: str, vispr_id: str) -> str:
    match = re.search(rf'<figure class="tile" data-vispr-id="{vispr_id}">(.*?)</figure>', html, re.S)
    assert match, f"no tile for {vispr_id}"
    return match.group(1)


def test_home_lists_images_with_level_score_and_provisional_badge(client_as, adjudicator, scored):
    response = client_as(adjudicator).get(reverse("home"))
    assert response.status_code == 200
    html = response.content.decode()
    assert scored["profile"].provisional
    assert "provisional boundaries" in html
    assert "level 1" in tile(html, "2017_00000001")
    lo1 = f'{scored["profile"].lo1:.3f}'
    assert f'<span class="score">{lo1}</span>' in tile(html, "2017_00000001")  # n=(1,0,0,0): t=0, so exactly lo(1)
    assert "level 4" in tile(html, "2017_00000002")
    assert '<span class="score">0.000</span>' in tile(html, "2017_00000002")
    assert "no consensus yet" in tile(html, "2017_00000003")


def test_home_without_a_provisional_profile_shows_no_badge(client_as, adjudicator, scored):
    ScoringProfile.objects.filter(pk=scored["profile"].pk).update(provisional=False)
    html = client_as(adjudicator).get(reverse("home")).content.decode()
    assert "provisional boundaries" not in html
    assert "level 1" in tile(html, "2017_00000001")


def test_home_is_blind_for_a_reviewer_until_they_submit(client_as, reviewer_a, scored):
    """Blind rule: a reviewer sees an image's consensus only once their own labeling of it is submitted."""
    from annotations.services.editing import submit
    from annotations.services.labeling_queue import claim_next
    from tests.support.labeling import answers

    html = client_as(reviewer_a).get(reverse("home")).content.decode()
    for vispr_id in ("2017_00000001", "2017_00000002", "2017_00000003"):
        assert "level " not in tile(html, vispr_id) and 'class="score"' not in tile(html, vispr_id)
    labeling = claim_next(reviewer_a)
    assert labeling.image == scored["severe"]
    html = client_as(reviewer_a).get(reverse("home")).content.decode()
    assert "level " not in tile(html, "2017_00000001")  # a draft is not a submission
    values = {k[len("value-"):]: float(v) for k, v in answers("0", biometrics="1").items()}
    submit(labeling, reviewer_a, version=labeling.version, values=values, rationales={})
    html = client_as(reviewer_a).get(reverse("home")).content.decode()
    assert "level " in tile(html, "2017_00000001")
    assert "level " not in tile(html, "2017_00000002")


def test_home_paginates(client_as, reviewer_a, make_image):
    for i in range(50):
        make_image(f"2017_{i:08d}", with_file=False)
    first = client_as(reviewer_a).get(reverse("home")).content.decode()
    second = client_as(reviewer_a).get(reverse("home"), {"page": 2}).content.decode()
    assert first.count('class="tile"') == 48 and "page 1 of 2" in first
    assert second.count('class="tile"') == 2 and "2017_00000049" in second


def test_home_rejects_post(client_as, reviewer_a):
    assert client_as(reviewer_a).post(reverse("home")).status_code == 405


def test_anonymous_is_sent_to_login(client_as, make_image):
    image = make_image("2017_00000001")
    for url in (reverse("home"), reverse("annotations:image_bytes", args=[image.pk])):
        response = client_as(None).get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_outsider_gets_403(client_as, outsider, make_image):
    image = make_image("2017_00000001")
    assert client_as(outsider).get(reverse("home")).status_code == 403
    assert client_as(outsider).get(reverse("annotations:image_bytes", args=[image.pk])).status_code == 403


def test_image_bytes_are_private_and_anonymous_and_stripped(client_as, reviewer_a, db):
    image = Image(vispr_id="2017_10000580", split="test", source="holiday-photo-of-jane.jpg")
    attach(image, clean_image(jpeg_with_exif()))
    image.save()
    response = client_as(reviewer_a).get(reverse("annotations:image_bytes", args=[image.pk]))
    assert response.status_code == 200
    assert response["Cache-Control"] == "private, no-store"
    assert response["Content-Type"] == "image/jpeg"
    disposition = response["Content-Disposition"]
    assert disposition == f'inline; filename="image-{image.pk}.jpg"'
    assert "jane" not in disposition and image.sha256 not in disposition
    body = b"".join(response.streaming_content)
    assert body == image.file.open("rb").read()
    assert b"SecretCam" not in body and b"Exif" not in body
    stored = PILImage.open(io.BytesIO(body))
    assert stored.format == "JPEG" and len(stored.getexif()) == 0


def test_image_bytes_of_a_record_without_file_is_404(client_as, reviewer_a, make_image):
    image = make_image("2017_00000001", with_file=False)
    assert client_as(reviewer_a).get(reverse("annotations:image_bytes", args=[image.pk])).status_code == 404
