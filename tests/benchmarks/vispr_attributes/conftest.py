"""A hand-made VISPR release (tests/support/vispr_release.py), imported, and a fake model that answers
VISPR attribute prompts from the image bytes: probabilities that depend on the true labels and on the
bytes, one image refused, one attribute omitted on another image."""
from __future__ import annotations

import hashlib
import io
import json

import pytest
from django.core.management import call_command

from annotations.models import Image
from tests.fakes import openai_server as ofake
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.vispr_release import write_release

# Labels as the release's annotation files list them (presence-only); a2_weight_approx and a73_landmark
# are on no test image (left out of cmAP); a0_safe on two.
TEST2017 = {
    "2017_10000001": ["a4_gender", "a9_face_complete"],
    "2017_10000002": ["a4_gender", "a10_face_partial", "a82_date_time"],
    "2017_10000003": ["a30_credit_card"],
    "2017_10000004": ["a31_passport", "a9_face_complete", "a4_gender", "a1_age_approx"],
    "2017_10000005": ["a0_safe"],
    "2017_10000006": ["a43_medicine", "a1_age_approx"],
    "2017_10000007": ["a0_safe"],
    "2017_10000008": ["a9_face_complete", "a30_credit_card", "a82_date_time"],
    "2017_10000009": ["a10_face_partial", "a43_medicine"],
}
VAL2017 = {"2017_20000001": ["a4_gender"], "2017_20000002": ["a0_safe"]}
REFUSED = "2017_10000003"
OMITTING = "2017_10000006"  # its answer leaves out a1_age_approx


def probability(digest: bytes, attribute: str, present: bool) -> float:
    """Deterministic, informative but imperfect, with ties (one decimal)."""
    h = hashlib.sha256(digest + attribute.encode()).digest()[0] / 255
    return round(min(1.0, 0.45 * present + 0.6 * h), 1)


@pytest.fixture
def release(tmp_path, db):
    root = write_release(tmp_path / "vispr", {"test2017": TEST2017, "val2017": VAL2017})
    call_command("import_vispr", str(root), stdout=io.StringIO(), stderr=io.StringIO())
    return root


@pytest.fixture
def fake_model(openai_server, release):
    """The fake server learns, per image (by its stored bytes), what the model answers."""
    by_digest = {}
    for image in Image.objects.exclude(vispr_split=""):
        with image.file.open("rb") as f:
            by_digest[hashlib.sha256(f.read()).digest()] = image
    seen = []

    def answer(path, payload):
        text, image_bytes, schema, _ = ofake.request_parts(payload)
        digest = hashlib.sha256(image_bytes or b"").digest()
        image = by_digest[digest]
        seen.append((image.vispr_id, text, schema))
        if image.vispr_id == REFUSED:
            return ofake.refusal("I can't help with identifying private details.")
        ids = list(schema["properties"])
        answer = {a: probability(digest, a, a in image.vispr_labels) for a in ids}
        if image.vispr_id == OMITTING:
            del answer["a1_age_approx"]
        return ofake.ok(json.dumps(answer))

    openai_server.queue(*[answer] * 50)
    openai_server.seen_answers = seen
    return openai_server
