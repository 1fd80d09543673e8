"""The three-way comparison's arithmetic (scoring/pixel_counterfactual.compare) and its form's refusals."""
from __future__ import annotations

import pytest

from scoring.forms import ThreeWayForm
from scoring.pixel_counterfactual import compare
from tests.support.permission_cases.scoring import make_run


def test_compare_changes_levels_groups_and_largest_gaps():
    original = {1: 0.9, 2: 0.8, 3: 0.2, 4: 0.5}
    prompt = {1: 0.2, 2: 0.7, 3: 0.2}
    pixel = {1: 0.85, 2: 0.3, 3: 0.2}
    data = compare(original, prompt, pixel, levels={1: 1, 2: 2, 3: 4}, contents={1: {"faces (detector)"}, 2: {"government IDs"}}, drop=0.3)
    assert data["common"] == 3 and data["only_some"] == 1
    assert data["overall"]["prompt"]["mean"] == pytest.approx((-0.7 - 0.1 + 0) / 3)
    assert data["overall"]["pixel"]["median"] == pytest.approx(-0.05)
    assert data["overall"]["prompt"]["collapsed"] == 1 and data["overall"]["pixel"]["collapsed"] == 1
    level1 = data["by_level"][0]
    assert level1["prompt"]["n"] == 1 and level1["prompt"]["mean"] == pytest.approx(-0.7) and level1["pixel"]["collapsed"] == 0
    assert data["by_level"][2]["prompt"]["n"] == 0 and data["by_level"][2]["prompt"]["mean"] is None
    faces = next(g for g in data["groups"] if g["group"] == "faces (detector)")
    assert faces["prompt"]["collapsed"] == 1 and faces["pixel"]["collapsed"] == 0  # told to ignore the face vs cannot see it
    ids = next(g for g in data["groups"] if g["group"] == "government IDs")
    assert ids["pixel"]["mean"] == pytest.approx(-0.5)
    assert [r["image_id"] for r in data["largest"]] == [1, 2, 3]
    assert data["largest"][0]["gap"] == pytest.approx(0.65)
    assert data["overall"]["prompt"]["test"]["changed"] == 2  # image 3 did not move
    gap = data["gap"]  # pixel change - prompt change per image: +0.65, -0.4, 0
    assert gap["n"] == 3 and gap["mean"] == pytest.approx(0.25 / 3) and gap["changed"] == 2 and gap["p_value"] == pytest.approx(1.0)


def test_compare_with_no_common_image():
    data = compare({1: 0.5}, {2: 0.5}, {3: 0.5}, levels={}, contents={}, drop=0.3)
    assert data["common"] == 0 and data["overall"]["pixel"]["mean"] is None and data["largest"] == [] and data["agreement"] is None


@pytest.mark.parametrize(("swap", "message"), [
    ("original", "original must judge the original images without counterfactual faces."),
    ("model", "same provider, model and strategy"),
    ("missing", "Give all three runs"),
])
def test_form_refuses_a_wrong_triple(db, swap, message):
    original = make_run()
    prompt = make_run(cf=True)
    pixel = make_run(face_variant={"method": "blur", "threshold": 0.5, "margin": 0.2})
    data = {"original": original.pk, "prompt": prompt.pk, "pixel": pixel.pk}
    if swap == "original":
        data["original"] = pixel.pk
    elif swap == "model":
        data["pixel"] = make_run(model="other", face_variant={"method": "fill", "threshold": 0.5, "margin": 0.2}).pk
    else:
        del data["pixel"]
    form = ThreeWayForm(data)
    assert not form.is_valid() and message in str(form.errors)
    assert ThreeWayForm({"original": original.pk, "prompt": prompt.pk, "pixel": pixel.pk}).is_valid()
