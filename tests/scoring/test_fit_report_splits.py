"""fit_report names the splits the fit used (a fit over the rows of both splits says "test, train"),
keeps the triggering import's split as import_split; migration scoring.0016 upgrades stored reports."""
from __future__ import annotations

import importlib
import io

import pytest
from django.apps import apps
from django.core.management import call_command

from scoring.models import ScoringProfile
from tests.scoring.test_import_profile_all_rows import TEST_ROWS, TRAIN_ROWS, write

migration = importlib.import_module("scoring.migrations.0016_fit_report_names_its_splits")


@pytest.mark.django_db
def test_a_fit_over_both_splits_names_both(tmp_path):
    call_command("import_cprt", write(tmp_path / "test.jsonl", TEST_ROWS), "--split", "test", stdout=io.StringIO())
    report = ScoringProfile.objects.get(name="cprt-bench").fit_report
    assert (report["split"], report["splits"], report["import_split"]) == ("test", ["test"], "test")
    call_command("import_cprt", write(tmp_path / "train.jsonl", TRAIN_ROWS), "--split", "train", stdout=io.StringIO())
    report = ScoringProfile.objects.get(name="cprt-bench").fit_report
    assert report["rows"] == 650
    assert (report["split"], report["splits"], report["import_split"]) == ("test, train", ["test", "train"], "train")


@pytest.mark.django_db
def test_the_migration_names_the_fitted_splits_of_stored_reports_and_goes_back():
    old = {"split": "train", "rows": 650, "per_split": [{"split": "test", "rows": 500}, {"split": "train", "rows": 150}]}
    profile = ScoringProfile.objects.create(name="old", version=1, weights=[1, 2, 3, 4], lo1=0.6, lo2=0.3, lo3=0.1, fit_report=old)
    empty = ScoringProfile.objects.create(name="never fitted", version=1, weights=[1, 2, 3, 4], lo1=0.6, lo2=0.3, lo3=0.1)
    migration.name_the_fitted_splits(apps, None)
    profile.refresh_from_db()
    assert profile.fit_report == {**old, "split": "test, train", "splits": ["test", "train"], "import_split": "train"}
    migration.name_the_fitted_splits(apps, None)  # twice: unchanged
    profile.refresh_from_db()
    assert profile.fit_report["import_split"] == "train"
    assert ScoringProfile.objects.get(pk=empty.pk).fit_report == {}
    migration.back_to_the_import_split(apps, None)
    profile.refresh_from_db()
    assert profile.fit_report == old
