"""import_cprt: strict validation of CPRT-Bench files, boundary fitting, profile storage and activation."""
from __future__ import annotations

import io
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from annotations import taxonomy
from annotations.models import Annotator, Image, Label
from core.models import AuditEvent
from scoring import engine
from scoring.models import ImageScore, ScoringProfile

from tests.support.bench_rows import TRUE_BOUNDS, make_rows, write_jsonl  # noqa: E402


def run(*args) -> str:
    out = io.StringIO()
    call_command("import_cprt", *args, stdout=out)
    return out.getvalue()


def stored_counts() -> dict:
    return {
        "images": Image.objects.count(),
        "labels": Label.objects.count(),
        "profiles": ScoringProfile.objects.count(),
        "scores": ImageScore.objects.count(),
        "annotators": Annotator.objects.count(),
        "audit": AuditEvent.objects.count(),
        "profile_state": list(ScoringProfile.objects.order_by("id").values_list("name", "version", "is_active", "lo1")),
    }


@pytest.mark.django_db
def test_import_fits_boundaries_stores_labels_and_activates(tmp_path):
    rows = make_rows(300)
    out = run(write_jsonl(tmp_path / "bench.jsonl", rows), "--split", "test")

    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert (profile.lo1, profile.lo2, profile.lo3) == pytest.approx(TRUE_BOUNDS.lo[:3], abs=1e-5)
    assert profile.fit_report["max_residual"] < 1e-5
    assert profile.is_active and not profile.provisional and profile.version == 1
    gt = Annotator.objects.get(name="ground-truth:cprt-bench")
    assert list(profile.consensus_annotators.all()) == [gt]
    assert Image.objects.filter(split="test").count() == 300
    assert Label.objects.filter(annotator=gt).count() == 300 * 22
    # Published values are kept verbatim, labels stored per attribute.
    first = Image.objects.get(vispr_id=rows[0]["id"])
    assert (first.published_level, first.published_score) == (rows[0]["level"], rows[0]["score"])
    ids = taxonomy.attribute_ids()
    stored = dict(Label.objects.filter(image=first, annotator=gt).values_list("attribute_id", "value"))
    for level_key, group in rows[0]["binary_labels"].items():
        for key, value in group.items():
            assert stored[ids[key]] == value
    # Scores recomputed under the fitted profile reproduce the published ones.
    assert ImageScore.objects.filter(profile=profile).count() == 300
    for image_score in ImageScore.objects.filter(profile=profile).select_related("image"):
        assert image_score.level == image_score.image.published_level
        assert image_score.score == pytest.approx(image_score.image.published_score, abs=1e-5)
    assert "Fitted boundaries: lo1=0.874500" in out
    assert "Every published level equals the computed l*." in out
    assert "is now the active profile" in out
    event = AuditEvent.objects.get(action="import_cprt")
    assert event.data["rows"] == 300 and event.data["activated"] is True


@pytest.mark.django_db
def test_reimport_is_an_upsert_and_a_new_profile_version(tmp_path):
    rows = make_rows(120)
    path = write_jsonl(tmp_path / "bench.jsonl", rows)
    run(path, "--split", "test")
    before = (Image.objects.count(), Label.objects.count())
    rows[0]["binary_labels"]["level4"] = {k: 1 - v for k, v in rows[0]["binary_labels"]["level4"].items()}
    counts = engine.level_counts({k: v for g in rows[0]["binary_labels"].values() for k, v in g.items()}, taxonomy.from_file().level_of)
    rows[0]["level"], score = engine.severity(counts, TRUE_BOUNDS)
    rows[0]["score"] = round(score, 6)
    out = run(write_jsonl(tmp_path / "bench.jsonl", rows), "--split", "test")
    assert (Image.objects.count(), Label.objects.count()) == before
    assert "0 images created, 120 updated" in out
    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert profile.version == 2 and profile.is_active
    image = Image.objects.get(vispr_id=rows[0]["id"])
    assert image.published_score == rows[0]["score"]


@pytest.mark.django_db
@pytest.mark.parametrize("suffix", ["json", "parquet"])
def test_json_list_and_parquet_inputs(tmp_path, suffix):
    rows = make_rows(200, seed=5)
    path = tmp_path / f"bench.{suffix}"
    if suffix == "json":
        path.write_text(json.dumps(rows), encoding="utf-8")
    else:
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=64)
    run(str(path), "--split", "train", "--profile", "bench-" + suffix)
    profile = ScoringProfile.objects.get(name="bench-" + suffix)
    assert profile.bounds.lo == pytest.approx(TRUE_BOUNDS.lo, abs=1e-5)
    assert Image.objects.filter(split="train").count() == 200
    assert Label.objects.filter(annotator__name=f"ground-truth:bench-{suffix}").count() == 200 * 22
    by_id = {r["id"]: r for r in rows}
    for vispr_id, level, score in Image.objects.values_list("vispr_id", "published_level", "published_score"):
        assert (level, score) == (by_id[vispr_id]["level"], by_id[vispr_id]["score"])


@pytest.mark.django_db
def test_level_mismatches_are_printed_every_one(tmp_path):
    rows = make_rows(150)
    wrong = [i for i, r in enumerate(rows) if r["level"] in (1, 2)][:3]
    for i in wrong:
        rows[i]["level"] = 4 if rows[i]["level"] != 4 else 3
    out = run(write_jsonl(tmp_path / "bench.jsonl", rows), "--split", "test")
    assert "Rows whose published level differs from the computed l* (3):" in out
    for i in wrong:
        computed = engine.determined_level(engine.level_counts({k: v for g in rows[i]["binary_labels"].values() for k, v in g.items()},
                                                               taxonomy.from_file().level_of))
        assert f"{rows[i]['id']}: published 4, computed {computed}" in out
    report = ScoringProfile.objects.get(name="cprt-bench").fit_report
    assert [m["id"] for m in report["level_mismatches"]] == [rows[i]["id"] for i in wrong]


@pytest.mark.django_db
def test_scores_not_reproduced_keep_the_profile_provisional_and_inactive(tmp_path):
    rows = make_rows(200)
    rng = random.Random(3)
    for r in rows:
        r["score"] = min(1.0, max(0.0, round(r["score"] + rng.uniform(-0.01, 0.01), 6)))
    active_before = ScoringProfile.active()
    out = run(write_jsonl(tmp_path / "bench.jsonl", rows), "--split", "test")
    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert profile.provisional and not profile.is_active
    assert ScoringProfile.active() == active_before
    assert "was NOT activated" in out and "largest residual" in out
    assert profile.fit_report["max_residual"] >= 1e-4
    assert Label.objects.filter(annotator__name="ground-truth:cprt-bench").count() == 200 * 22


@pytest.mark.django_db
def test_a_fit_without_valid_bounds_still_stores_rows_but_stays_provisional(tmp_path):
    rows = [r for r in make_rows(400) if r["level"] == 1][:40]
    out = run(write_jsonl(tmp_path / "bench.jsonl", rows), "--split", "test")
    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert profile.provisional and not profile.is_active
    assert (profile.lo1, profile.lo2, profile.lo3) == engine.PROVISIONAL_LO[:3]
    assert "no valid boundaries" in out and "NOT activated" in out
    assert Image.objects.filter(published_level=1).count() == 40
    assert profile.fit_report["problems"]


@pytest.mark.django_db
def test_a_failed_refit_deactivates_a_previously_active_profile(tmp_path):
    run(write_jsonl(tmp_path / "good.jsonl", make_rows(150)), "--split", "test")
    assert ScoringProfile.objects.get(name="cprt-bench").is_active
    noisy = make_rows(150, seed=9)
    for r in noisy:
        r["score"] = round(r["score"] * 0.97, 6)
    run(write_jsonl(tmp_path / "noisy.jsonl", noisy), "--split", "test")
    profile = ScoringProfile.objects.get(name="cprt-bench")
    assert profile.version == 2 and profile.provisional and not profile.is_active


def _mutate(rows, i, fn):
    fn(rows[i])
    return rows


REJECTIONS = [
    ("missing attribute", lambda r: r["binary_labels"]["level1"].pop("biometrics"), "line 3: missing attribute 'biometrics'"),
    ("unknown attribute", lambda r: r["binary_labels"]["level4"].update(weather=1), "line 3: unknown attribute 'weather'"),
    (
        "wrong level",
        lambda r: r["binary_labels"]["level2"].update(gov_ids=r["binary_labels"]["level1"].pop("gov_ids")),
        "line 3: attribute 'gov_ids' is under level2 but belongs to level1",
    ),
    ("half label", lambda r: r["binary_labels"]["level1"].update(biometrics=0.5), "binary_labels.level1.biometrics = 0.5"),
    ("bool label", lambda r: r["binary_labels"]["level1"].update(biometrics=True), "binary_labels.level1.biometrics = true"),
    ("string label", lambda r: r["binary_labels"]["level1"].update(biometrics="1"), 'binary_labels.level1.biometrics = "1"'),
    ("unknown level key", lambda r: r["binary_labels"].update(level5={}), "unknown level 'level5'"),
    ("level 0", lambda r: r.update(level=0), "line 3: level 0 is not an integer from 1 to 4"),
    ("level 5", lambda r: r.update(level=5), "line 3: level 5 is not an integer from 1 to 4"),
    ("level bool", lambda r: r.update(level=True), "line 3: level true is not an integer"),
    ("level string", lambda r: r.update(level="2"), 'line 3: level "2" is not an integer'),
    ("missing level", lambda r: r.pop("level"), "line 3: missing level"),
    ("score above 1", lambda r: r.update(score=1.5), "line 3: score 1.5 is outside [0, 1]"),
    ("score below 0", lambda r: r.update(score=-0.1), "line 3: score -0.1 is outside [0, 1]"),
    ("score string", lambda r: r.update(score="0.5"), 'line 3: score "0.5" is not a number'),
    ("score nan", lambda r: r.update(score=float("nan")), "line 3: score NaN is not a number"),
    ("missing score", lambda r: r.pop("score"), "line 3: missing score"),
    ("missing id", lambda r: r.pop("id"), "line 3: missing id"),
    ("empty id", lambda r: r.update(id=""), "line 3: missing id"),
    ("id with a slash", lambda r: r.update(id="../etc"), "is not a VISPR id"),
    ("duplicate id", lambda r: r.update(id="2017_10000000"), "line 3: duplicate id '2017_10000000' (first at line 1)"),
    ("missing labels", lambda r: r.pop("binary_labels"), "line 3: missing binary_labels"),
    ("missing level group", lambda r: r["binary_labels"].pop("level3"), "line 3: binary_labels.level3 is missing"),
    ("labels not an object", lambda r: r.update(binary_labels=[1, 0]), "line 3: binary_labels must be an object"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("name,mutate,message", REJECTIONS, ids=[r[0] for r in REJECTIONS])
def test_each_bad_row_refuses_the_whole_file(tmp_path, name, mutate, message):
    run(write_jsonl(tmp_path / "earlier.jsonl", make_rows(60, seed=2)), "--split", "test", "--profile", "earlier")
    rows = make_rows(80)
    mutate(rows[2])
    before = stored_counts()
    with pytest.raises(CommandError) as exc:
        run(write_jsonl(tmp_path / "bad.jsonl", rows), "--split", "test")
    assert message in str(exc.value)
    assert "nothing was written" in str(exc.value)
    assert stored_counts() == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content,message",
    [
        (b'{"id": "a"\n', "line 1: malformed JSON"),
        (None, "line 2: malformed JSON"),
        (None, "line 3: not UTF-8"),
        (b"", "no rows"),
        (b"[1, 2]\n", "line 1: a row must be a JSON object"),
    ],
    ids=["truncated", "malformed-line-2", "non-utf8", "empty", "not-objects"],
)
def test_unreadable_jsonl_is_refused_with_line_numbers(tmp_path, content, message):
    rows = make_rows(5)
    lines = [json.dumps(r).encode() for r in rows]
    if message.startswith("line 2: malformed"):
        lines[1] = lines[1][:-5]
        content = b"\n".join(lines)
    elif "UTF-8" in message:
        lines[2] = lines[2].replace(b'"2017_', b'"2017\xff_')
        content = b"\n".join(lines)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    before = stored_counts()
    with pytest.raises(CommandError) as exc:
        run(str(path), "--split", "test")
    assert message in str(exc.value)
    assert stored_counts() == before


@pytest.mark.django_db
def test_every_problem_is_listed_with_its_row(tmp_path):
    rows = make_rows(10)
    rows[1]["level"] = 9
    rows[6]["score"] = 2
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    with pytest.raises(CommandError) as exc:
        run(str(path), "--split", "test")
    assert "2 problems" in str(exc.value)
    assert "row 2: level 9" in str(exc.value) and "row 7: score 2 is outside" in str(exc.value)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name,content,message",
    [
        ("bad.json", b'[{"id": "a",\n  "level": }]', "line 2, column"),
        ("bad.json", b'{"id": "a"}', "must hold a JSON list"),
        ("bad.json", b'[{"id": "caf\xe9"}]', "line 1: not UTF-8"),
        ("bad.parquet", b"PAR1 this is not parquet", "not a readable parquet file"),
        ("bad.csv", b"id,level\n", "unknown file type '.csv'"),
    ],
)
def test_unreadable_files_are_refused(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    before = stored_counts()
    with pytest.raises(CommandError) as exc:
        run(str(path), "--split", "test")
    assert message in str(exc.value)
    assert stored_counts() == before


@pytest.mark.django_db
def test_parquet_rows_are_validated_like_json(tmp_path):
    rows = make_rows(30)
    rows[4]["binary_labels"]["level3"]["age"] = 2
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(CommandError) as exc:
        run(str(path), "--split", "test")
    assert "row 5: " in str(exc.value)


@pytest.mark.django_db
def test_missing_file_bad_profile_name_and_split(tmp_path):
    before = stored_counts()
    with pytest.raises(CommandError, match="no such file"):
        run(str(tmp_path / "nope.jsonl"), "--split", "test")
    path = write_jsonl(tmp_path / "ok.jsonl", make_rows(20))
    with pytest.raises(CommandError, match="must be a slug"):
        run(path, "--split", "test", "--profile", "no spaces/please")
    with pytest.raises(CommandError):
        run(path, "--split", "validation")
    assert stored_counts() == before


def test_a_missing_level_is_reported_once_not_per_attribute():
    from scoring.cprt_bench import parse_labels

    row = make_rows(1)[0]
    del row["binary_labels"]["level2"]
    labels, problems = parse_labels(row["binary_labels"], taxonomy.from_file())
    assert labels is None and problems == ["binary_labels.level2 is missing"]
