"""scoring.sft.pairs and scoring.sft.hygiene: pure functions over plain data."""
from __future__ import annotations

import itertools
import json
import re

import pytest

from annotations import taxonomy
from inference import kinds, prompts
from inference.providers.base import ProviderReply
from inference.schemas import JudgeAnswer
from scoring import engine
from scoring.sft.hygiene import ImageRef, LeakError, check_disjoint, find_leaks
from scoring.sft.pairs import GroundTruth, judge_instruction, judge_pair, rationale
from tests.support.reference import stated_level

TAX = taxonomy.from_file()


def item(present=(), level=None, score=0.5) -> GroundTruth:
    labels = {k: int(k in present) for k in TAX.keys}
    counts = [0, 0, 0, 0]
    for key in present:
        counts[TAX.level_of[key] - 1] += 1
    return GroundTruth(image_id=1, vispr_id="2017_1", split="train", labels=labels,
                       level=level or engine.determined_level(counts) or 4, score=score)


@pytest.mark.parametrize("present", [(), ("biometrics",), ("age", "gender"), ("documents",), ("gov_ids", "nudity", "age", "metadata"),
                                     tuple(TAX.keys)])
def test_the_rationale_names_what_is_present_and_the_level_in_at_most_three_sentences(present):
    gt = item(present)
    text = rationale(gt.labels, gt.level, TAX)
    assert stated_level(text) == gt.level
    assert text.count(". ") <= 2 and text.endswith(".")
    named = set(re.findall(r"[a-z_]+", text))
    for key in TAX.keys:
        assert (key in named) is (key in present)
    for secret in ("weight", "boundar", "330", "87", "sqrt", "lexicographic"):  # never the scoring function
        assert secret not in text.lower()


def test_a_published_level_that_differs_from_the_attributes_is_stated_as_the_ground_truth():
    gt = item(("age",), level=2)  # an imported row whose published level is 2
    text = rationale(gt.labels, gt.level, TAX)
    assert stated_level(text) == 2 and "most severe information present is of level 3" in text


def test_every_count_vector_gives_an_answer_the_judge_parser_accepts_with_its_level_and_score():
    bounds = engine.PROVISIONAL
    instruction = {"system": "s", "user": "u"}
    by_level = {lv: TAX.keys_of_level(lv) for lv in engine.LEVELS}
    for counts in itertools.product(*(range(m + 1) for m in engine.LEVEL_MAXIMA)):
        present = [key for lv, n in zip(engine.LEVELS, counts) for key in by_level[lv][:n]]
        level, score = engine.severity(counts, bounds)
        pair = judge_pair(item(present, level, score), instruction, TAX)
        reply = ProviderReply(text=pair.response, raw={})
        answer = JudgeAnswer.model_validate(reply.parsed)
        assert answer.score == score and stated_level(answer.reasoning) == level
        assert list(json.loads(pair.response)) == ["reasoning", "score"]


@pytest.mark.django_db
def test_the_instruction_is_the_taxonomy_prompt_a_run_sends():
    for version in prompts.JUDGE_VERSIONS:
        assert judge_instruction(version) == kinds.render("judge", version, "taxonomy", False)["judge"]
    with pytest.raises(ValueError, match="Unknown judge prompt version"):
        judge_instruction("judge-v0")


def test_leaks_are_found_by_database_id_vispr_id_and_identical_bytes():
    train = [ImageRef(1, "a", "train", "s1"), ImageRef(2, "b", "train", "s2"), ImageRef(3, "c", "train", "s3"), ImageRef(4, "d", "train", "")]
    test = [ImageRef(1, "a", "test", "x"), ImageRef(9, "b", "test", "y"), ImageRef(10, "z", "test", "s3"), ImageRef(11, "w", "test", "")]
    problems = find_leaks(train, test)
    assert problems == [
        "image #1 (a) is selected for training (train) and is in the evaluation split",
        "id b is in training (train) and in evaluation (test)",
        "c (train) has the same bytes as z (test) (sha256 s3...)",
    ]
    with pytest.raises(LeakError, match="3 images would appear on both"):
        check_disjoint(train, test)
    check_disjoint(train[3:], test)  # an empty sha256 (no bytes) matches nothing
