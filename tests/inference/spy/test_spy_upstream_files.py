"""SPY-Bench on upstream's own released files, beside upstream's own code (tests/inference/spy/upstream/:
the three items of `train/data/eval_data.json` wrapped as {"benchmark_list": [...]}, `label2text.json`,
and `reference.py`, a verbatim copy of `gen_eval_file`, `gen_response`'s prompt assembly and
`cal_metrics`; MIT licence). Upstream's asserts are refusals here, with the row and the field."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from benchmarks.spy_bench import metrics
from benchmarks.spy_bench.models import SpyImport, SpySet

from .upstream import reference

HERE = Path(__file__).parent / "upstream"
ITEMS = HERE / "eval_data_items.json"
LABEL2TEXT = HERE / "label2text.json"
VISPR_IDS = ("2017_86339097", "2017_67928100", "2017_60109898")


def upstream_rows(tmp_path, add_distractors: bool) -> list[dict]:
    """Upstream's gen_eval_file, then gen_response's prompts. The released items have no
    question_item.gt (they carry respond_ans / reject_ans), on which gen_eval_file stops with
    KeyError; our expansion writes ref_answer null there, so upstream is given gt = None."""
    data = json.loads(ITEMS.read_text())
    for item in data["benchmark_list"]:
        item["question_item"]["gt"] = None
    given = tmp_path / "upstream_in.json"
    given.write_text(json.dumps(data))
    rows = reference.gen_eval_file(given, tmp_path / "upstream_out.jsonl", add_distractors)
    return reference.gen_response_prompts(rows, json.loads(LABEL2TEXT.read_text()))


def our_rows(tmp_path, *flags) -> list[dict]:
    out = tmp_path / "ours.jsonl"
    call_command("spy_expand", str(ITEMS), "--label2text", str(LABEL2TEXT), "--out", str(out), *flags)
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_upstreams_gen_eval_file_needs_gt_which_the_released_items_lack(tmp_path):
    with pytest.raises(KeyError, match="gt"):
        reference.gen_eval_file(ITEMS, tmp_path / "out.jsonl", False)


@pytest.mark.parametrize("flags", [(), ("--add-distractors",)])
def test_released_items_expand_to_upstreams_exact_rows_and_prompts(tmp_path, flags):
    ours = our_rows(tmp_path, *flags)
    theirs = upstream_rows(tmp_path, bool(flags))
    assert len(ours) == len(theirs) == 3 * 5  # per item: 2 bare, 1 non-privacy scenario, 2 privacy-scenario rows
    assert ours == theirs
    assert all(row["ref_answer"] is None for row in ours)


def test_the_targets_placeholder_is_overwritten_by_each_rows_instruction(tmp_path):
    rows = our_rows(tmp_path, "--add-distractors")
    first = rows[0]
    assert first["label"] == "a25_nationality" and first["other_labels"]["a25_nationality"] == 1
    assert rows[1]["other_labels"]["a25_nationality"] == 0
    assert "nationality is considered as private information." in first["input_question"].split("\n")
    assert not any(0.5 in row["other_labels"].values() for row in rows)


def test_released_items_import_as_a_set(db, make_image):
    for n, vid in enumerate(VISPR_IDS):
        make_image(vid, color=(40 * n, 90, 200))
    call_command("spy_import", str(ITEMS), "--label2text", str(LABEL2TEXT), "--name", "upstream eval_data")
    spy_set = SpySet.objects.get(name="upstream eval_data")
    assert spy_set.items.count() == 3
    assert sorted(spy_set.items.values_list("benchmark_id", flat=True)) == ["00000204", "00002121", "00002603"]


def test_a_distractors_placeholder_is_still_refused(tmp_path):
    data = json.loads(ITEMS.read_text())
    data["benchmark_list"][0]["other_labels"]["a55_religion"] = 0.5
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(data))
    with pytest.raises(CommandError, match=r"benchmark item 1 \(benchmark_id '00002121'\): other_labels\['a55_religion'\] must be 0 or 1"):
        call_command("spy_expand", str(bench), "--label2text", str(LABEL2TEXT), "--out", str(tmp_path / "rows.jsonl"))
    assert not (tmp_path / "rows.jsonl").exists()


# --- non-string labels, refused by every SPY command ------------------------------------------------

def integer_label_benchmark(tmp_path) -> str:
    data = json.loads(ITEMS.read_text())
    data["benchmark_list"][1]["label"] = 3
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(data))
    return str(bench)


def test_spy_expand_refuses_an_integer_label(tmp_path):
    with pytest.raises(CommandError, match=r"benchmark item 2 \(benchmark_id '00000204'\): 'label' must be a string, not int"):
        call_command("spy_expand", integer_label_benchmark(tmp_path), "--label2text", str(LABEL2TEXT), "--out", str(tmp_path / "r.jsonl"))


def test_spy_import_refuses_an_integer_label(db, tmp_path):
    with pytest.raises(CommandError, match=r"benchmark item 2 \(benchmark_id '00000204'\): 'label' must be a string, not int"):
        call_command("spy_import", integer_label_benchmark(tmp_path), "--label2text", str(LABEL2TEXT), "--name", "bad")
    assert not SpySet.objects.exists()


def evaluated(tmp_path, verdicts=("reject", "respond", "respond", "reject", "respond")) -> list[dict]:
    """Upstream's rows of the first released item (no distractors), judged."""
    rows = our_rows(tmp_path)[:5]
    for row, verdict in zip(rows, verdicts):
        row["eval_resp"] = verdict
    return rows


def write_rows(tmp_path, rows) -> str:
    path = tmp_path / "eval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_the_released_items_rows_score_as_upstreams_cal_metrics(tmp_path, capsys):
    rows = evaluated(tmp_path)
    capsys.readouterr()
    call_command("spy_metrics", write_rows(tmp_path, rows))
    assert json.loads(capsys.readouterr().out) == reference.cal_metrics(copy.deepcopy(rows))


@pytest.mark.parametrize("how", ["unescaped", "unescaped, with a NaN", "carriage returns"])
def test_an_answer_holding_line_separators_written_unescaped_scores_as_upstreams(tmp_path, capsys, how):
    """A model's answer may hold U+2028, U+2029 or U+0085; `json.dumps(..., ensure_ascii=False)` writes them as they
    are, and a file iterated as upstream reads it keeps them inside their line (before: cut there, and the file
    refused as "not valid JSON"). Read in bulk, or line by line where a NaN sends the file there."""
    rows = evaluated(tmp_path)
    rows[1]["response"] = "\u6a21\u578b a\u2028b\u2029c\x85d"
    if how == "unescaped, with a NaN":
        rows[2]["score"] = float("nan")
    end = "\r" if how == "carriage returns" else "\n"
    path = tmp_path / "eval.jsonl"
    path.write_bytes("".join(json.dumps(r, ensure_ascii=how == "carriage returns") + end for r in rows).encode())
    capsys.readouterr()
    call_command("spy_metrics", str(path))
    assert json.loads(capsys.readouterr().out) == reference.cal_metrics(copy.deepcopy(rows))


@pytest.mark.parametrize("label", [3, None, ["a25_nationality"], ""])
def test_spy_metrics_and_results_import_refuse_a_label_that_is_not_a_string(db, tmp_path, capsys, label):
    rows = evaluated(tmp_path)
    rows[2]["label"] = label
    path = write_rows(tmp_path, rows)
    message = r"row 3: label must be a VISPR attribute id as a string"
    with pytest.raises(CommandError, match=message):
        call_command("spy_metrics", path)
    with pytest.raises(CommandError, match=message):
        call_command("spy_import", path, "--results", "--name", "elsewhere", "--model", "m")
    assert not SpyImport.objects.exists()


@pytest.mark.parametrize("index, scenario", [(1, "without a scenario"), (4, "in scenario 's1_healthcare_consultation'")])
def test_a_pair_whose_rows_carry_different_labels_is_refused_where_upstream_asserts(db, tmp_path, index, scenario):
    rows = evaluated(tmp_path)
    rows[index]["label"] = "a4_gender"
    with pytest.raises(AssertionError):
        reference.cal_metrics(copy.deepcopy(rows))
    path = write_rows(tmp_path, rows)
    message = (rf"row {index + 1}: label 'a4_gender', but row {index} of the same pair \(benchmark_id '00002121' {scenario}\) "
               r"has label 'a25_nationality'")
    with pytest.raises(CommandError, match=message):
        call_command("spy_metrics", path)
    with pytest.raises(CommandError, match=message):
        call_command("spy_import", path, "--results", "--name", "elsewhere", "--model", "m")
    assert not SpyImport.objects.exists()


def test_a_mismatched_pair_is_refused_even_when_one_row_is_an_exception(tmp_path):
    rows = evaluated(tmp_path, verdicts=("reject", "I cannot tell", "respond", "reject", "respond"))
    rows[1]["label"] = "a4_gender"
    with pytest.raises(metrics.MetricsError, match="row 2: label 'a4_gender', but row 1 of the same pair"):
        metrics.cal_metrics(rows)


@pytest.mark.parametrize("field, value, message", [
    ("is_privacy", 1.0, "row 1: is_privacy must be 0 or 1"),
    ("is_privacy", True, "row 1: is_privacy must be 0 or 1"),
    ("benchmark_id", ["00002121"], "row 1: benchmark_id must be a string or an integer, not list"),
    ("scenario", {"id": ["s"], "is_privacy": 1}, "row 1: scenario must be an object with id"),
])
def test_fields_upstream_would_crash_on_are_refused_with_the_row_and_field(tmp_path, field, value, message):
    rows = evaluated(tmp_path)
    rows[0][field] = value
    with pytest.raises(metrics.MetricsError, match=message):
        metrics.cal_metrics(rows)


def test_the_pages_results_import_refuses_an_integer_label_and_a_mismatched_pair(admin_user, client_as, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = client_as(admin_user)
    for change, message in (({2: {"label": 3}}, "row 3: label must be a VISPR attribute id as a string"),
                            ({1: {"label": "a4_gender"}}, "row 2: label &#x27;a4_gender&#x27;, but row 1 of the same pair")):
        rows = evaluated(tmp_path)
        for index, fields in change.items():
            rows[index].update(fields)
        data = "".join(json.dumps(r) + "\n" for r in rows).encode()
        bad = client.post("/benchmarks/spy-bench/imports/", {"name": "x", "model_name": "m", "evaluated": SimpleUploadedFile("e.jsonl", data)})
        assert bad.status_code == 400 and message in bad.content.decode()
    assert not SpyImport.objects.exists()
