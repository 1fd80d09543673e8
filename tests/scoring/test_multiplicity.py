"""Holm and Benjamini-Hochberg adjusted p-values (issue 27): the pure functions against scipy and a
textbook loop, and the calibration and compare pages' families, raw beside adjusted."""
from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats

from scoring import multiplicity


def holm_reference(p):
    """Holm (1979) as written: step down through the sorted p-values, running maximum, capped at 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, (m - rank) * p[i])
        out[i] = min(1.0, running)
    return out


P = [0.01, 0.04, 0.03, 0.005, 0.5, 0.04, 0.2, 0.0001]


def test_holm_equals_the_textbook_step_down():
    assert multiplicity.adjust(P, "holm") == pytest.approx(holm_reference(P))


def test_bh_equals_scipy():
    assert multiplicity.adjust(P, "bh") == pytest.approx(list(stats.false_discovery_control(P, method="bh")))


def test_missing_p_values_stay_out_of_the_family():
    got = multiplicity.adjust([0.01, None, 0.02], "holm")
    assert got[1] is None and got[0] == pytest.approx(0.02) and got[2] == pytest.approx(0.02)


def test_a_resampling_zero_enters_as_its_bound_and_prints_as_one():
    assert multiplicity.adjust([0.0, 0.5], "holm", floor=1 / 1000) == pytest.approx([0.002, 0.5])
    assert multiplicity.resampling_p(0.0, 1000) == "< 1/1000" and multiplicity.resampling_p(0.25, 1000) == 0.25
    with pytest.raises(ValueError, match="Unknown adjustment"):
        multiplicity.adjust([0.1], "bonferroni")


def _calibration_world():
    from annotations.models import Annotator
    from tests.conftest import make_user
    from tests.support.permission_cases.scoring import label_everything, make_images, make_run, submit

    images = make_images(14, prefix="2017_75")
    for name in ("mult-a", "mult-b"):
        human = Annotator.for_user(make_user(name, "reviewer"))
        label_everything(images, human, lambda i, k: 1.0 if (k in ("race_ethnicity", "gender") and i < 7) else 0.0)
        for image in images:
            submit(image, human)
    model = Annotator.objects.create(kind="model", name="model:mult", provider="openai", model_name="gpt-mult")
    label_everything(images, model, lambda i, k: 1.0 if k == "age" or (k == "gender" and i < 9) else 0.0)
    run = make_run(task="annotate", annotator=model)
    run.image_ids = [i.pk for i in images]
    run.save()
    return run


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["holm", "bh"])
def test_calibration_tables_print_raw_and_adjusted_p(client, method):
    from tests.conftest import make_user

    run = _calibration_world()
    client.force_login(make_user("mult-staff", "adjudicator"))
    data = client.get(reverse("scoring:calibration", args=[run.pk]), {"format": "json", "adjust": method}).json()
    for name in ("human_majority", "consensus"):
        rows = data["tables"][name]["rows"]
        raw = [r["p_value"] for r in rows]
        present = [p for p in raw if p is not None]
        want = holm_reference(present) if method == "holm" else list(stats.false_discovery_control(present, method="bh"))
        assert [r["p_adjusted"] for r in rows if r["p_value"] is not None] == pytest.approx(want)
    assert data["meta"]["adjustment"] == method
    page = client.get(reverse("scoring:calibration", args=[run.pk]), {"adjust": method}).content.decode()
    assert multiplicity.METHODS[method] in page and "p (exact McNemar, raw)" in page


@pytest.mark.django_db
def test_bad_adjustment_is_refused(client):
    from tests.conftest import make_user

    run = _calibration_world()
    client.force_login(make_user("mult-staff2", "adjudicator"))
    response = client.get(reverse("scoring:calibration", args=[run.pk]), {"adjust": "bonferroni"})
    assert response.status_code == 400 and "adjust must be holm or bh; got bonferroni." in response.content.decode()
    response = client.get(reverse("scoring:compare"), {"adjust": "x"})
    assert response.status_code == 400


@pytest.mark.django_db
def test_compare_prints_the_resampling_bound_adjusted_p_and_coverage(client):
    from tests.conftest import make_user
    from tests.support.permission_cases.scoring import add_results, make_images, make_run

    images = make_images(40, prefix="2017_76")
    rng = np.random.default_rng(4)
    good, bad = make_run(model="good"), make_run(model="bad")
    add_results(good, [(i, "ok", float(np.clip(i.published_score + rng.normal(0, 0.02), 0, 1))) for i in images])
    add_results(bad, [(i, "ok", float(rng.uniform())) if k < 36 else (i, "refused", None) for k, i in enumerate(images)])
    client.force_login(make_user("cmp-staff", "adjudicator"))
    data = client.get(reverse("scoring:compare"), {"a": good.pk, "b": bad.pk, "format": "json"}).json()
    assert data["meta"]["coverage"] == {"a": pytest.approx(1.0), "b": pytest.approx(0.9)}
    rows = {r["metric"]: r for r in data["tables"]["comparison"]["rows"]}
    assert rows["MAE"]["p_value"] == "< 1/1000"  # no resample crosses 0: a resampling bound, not a bare 0
    raw = [1 / 1000 if r["p_value"] == "< 1/1000" else r["p_value"] for r in data["tables"]["comparison"]["rows"]]
    present = [p for p in raw if p is not None]
    assert [r["p_adjusted"] for r in data["tables"]["comparison"]["rows"] if r["p_value"] is not None] == pytest.approx(holm_reference(present))
    page = client.get(reverse("scoring:compare"), {"a": good.pk, "b": bad.pk}).content.decode()
    assert "paired bootstrap" in page and "&lt; 1/1000" in page and "Holm" in page


def test_small_p_values_never_print_as_zero():
    from scoring.tables import p_value
    from scoring.templatetags.scoring_tags import cell

    assert str(cell(p_value(2.3e-7))) == "2.3e-07" and str(cell(p_value(0.04))) == "0.040"
    assert p_value("< 1/1000") == "< 1/1000" and p_value(None) is None
