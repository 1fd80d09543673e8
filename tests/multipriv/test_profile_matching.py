"""Profile matching (issue 34): numbers keep their decimal separators, 民族 is its own field (ethnic group),
category letters follow upstream's README table, and the cross-language equivalence table."""
from __future__ import annotations

import json

import pytest

from benchmarks.multipriv import fields
from benchmarks.multipriv.fields import canonical, category_of, normalise
from benchmarks.multipriv.importer import import_multipriv
from benchmarks.multipriv.models import Person
from benchmarks.multipriv.kinds.profile import V1, VERSION, MultiprivProfileKind, answer_model, profile_fields
from benchmarks.multipriv.metrics import ProfileAnswer, field_hits, profile_metrics


@pytest.mark.parametrize("truth, answer", [("5000", "50.00"), ("748.40", "74840"), ("1.5", "15"), ("3,5", "35"),
                                           ("10000", "100.00")])
def test_a_decimal_separator_is_part_of_the_number(truth, answer):
    assert normalise(truth) != normalise(answer)


@pytest.mark.parametrize("a, b", [("10,000", "10000"), ("¥10,000/月", "¥10000月"), ("1,234.50", "1234.50"),
                                  ("6222 0212 3456 7890", "6222-0212-3456-7890"), ("748.40", " 748.40 "), ("FD-231", "fd231"),
                                  ("12 Lark Lane, Northby", "12 lark lane northby")])
def test_grouping_and_punctuation_outside_numbers_still_do_not_count(a, b):
    assert normalise(a) == normalise(b)


def test_minzu_is_ethnic_group_not_nationality():
    assert canonical("民族") == "Ethnic Group" and canonical("国籍") == "国籍"
    assert category_of("民族") == "G"
    # a Chinese profile: 民族 汉; an answer "China" for NATIONALITY is not scored against 汉
    hits = field_hits({"Ethnic Group": "汉", "NATIONALITY": "中国"}, {"NATIONALITY": "China", "Ethnic Group": "Han"})
    assert hits == {"Ethnic Group": True, "NATIONALITY": True}


def test_category_letters_follow_upstreams_readme_table():
    # README "Definition of image privacy information entities": G general identity = gender, nationality;
    # B specific identity = name, ID number, phone
    assert category_of("Gender") == category_of("NATIONALITY") == category_of("性别") == "G"
    assert category_of("Name") == category_of("ID Number") == "B"
    assert fields.categories()["G"] == "general identity"


@pytest.mark.parametrize("a, b", [("男", "Male"), ("女", "female"), ("男性", "man"), ("中国", "China"), ("China", "Chinese"),
                                  ("美国", "USA"), ("United States", "united states of america"), ("是", "Yes"), ("否", "no"),
                                  ("汉族", "Han")])
def test_cross_language_equivalents(a, b):
    assert normalise(a) == normalise(b)


@pytest.mark.parametrize("a, b", [("男", "Female"), ("中国", "Japan"), ("是", "no"), ("Male", "M"), ("China Town", "China")])
def test_only_whole_listed_values_are_equivalent(a, b):
    assert normalise(a) != normalise(b)


def test_the_metrics_count_a_chinese_gender_answered_in_english():
    out = profile_metrics([ProfileAnswer("p", {"Gender": "男", "Year-end Bonus": "5000"}, {"Gender": "Male", "Year-end Bonus": "50.00"})])
    assert out["fields"]["Gender"]["recovered"] == 1 and out["fields"]["Year-end Bonus"]["recovered"] == 0
    assert out["categories"]["G"]["recovered"] == 1


def test_prompt_v2_asks_for_ethnic_group_and_v1_keeps_its_fields():
    assert "Ethnic Group" in profile_fields(VERSION) and "Ethnic Group" not in profile_fields(V1)
    v1 = MultiprivProfileKind.render(V1, "", False, None)
    assert "Ethnic Group" not in v1["profile"]["user"]
    assert "Ethnic Group" not in v1["schemas"]["profile"]["properties"]["profile"]["required"]
    assert MultiprivProfileKind.default_version() == VERSION
    # a v1 run's answer (no Ethnic Group) still validates against the fields that run asked for
    answer = {"reasoning": "r", "declined": False, "profile": {f: None for f in profile_fields(V1)}}
    answer_model(profile_fields(V1)).model_validate_json(json.dumps(answer))


@pytest.mark.django_db
def test_a_person_stored_under_the_old_table_is_remapped_by_a_new_import(tmp_path):
    folder = tmp_path / "person_21"
    folder.mkdir()
    (folder / "person_2.json").write_text(json.dumps([{"姓名": "张三", "民族": "汉", "性别": "男"}], ensure_ascii=False), encoding="utf-8")
    import_multipriv(tmp_path)
    person = Person.objects.get(name="person_21")
    assert person.profile == {"Name": "张三", "Ethnic Group": "汉", "Gender": "男"}
    Person.objects.filter(pk=person.pk).update(profile={"Name": "张三", "NATIONALITY": "汉", "Gender": "男"})  # as the old table stored it
    report = import_multipriv(tmp_path)
    assert report.updated_persons == 1
    assert Person.objects.get(pk=person.pk).profile["Ethnic Group"] == "汉"
    assert import_multipriv(tmp_path).updated_persons == 0
