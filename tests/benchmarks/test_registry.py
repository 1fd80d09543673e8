"""The benchmark registry (inference/benchmarks.py): benchmarks found through their app configs, their
kinds in inference.kinds.KINDS, their urls under benchmarks/<key>/, clashes refused at start, and each
benchmark named in at most two files outside its folder."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from inference import benchmarks, kinds
from inference.forms import LaunchForm
from inference.kinds.judge import JudgeKind

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def isolated(monkeypatch):
    monkeypatch.setattr(benchmarks, "_registry", dict(benchmarks._registry))
    monkeypatch.setattr(kinds, "KINDS", dict(kinds.KINDS))


def test_installed_benchmarks_are_registered_with_their_kinds_and_urls(db):
    vpa = benchmarks.get("vispr-attributes")
    assert vpa in benchmarks.all_benchmarks() and benchmarks.discover() == benchmarks.all_benchmarks()  # idempotent
    assert all(kinds.KINDS[k.key] is k for k in vpa.kinds)
    assert benchmarks.of_kind("vispr-attributes") is vpa and benchmarks.of_kind("judge") is None
    assert "vispr-attributes" in dict(LaunchForm().fields["task"].choices)
    included = [str(p.pattern) for p in benchmarks.url_patterns() if str(p.pattern).startswith("benchmarks/")]
    assert included == [f"benchmarks/{b.key}/" for b in benchmarks.all_benchmarks()]
    with pytest.raises(ValueError, match="Unknown benchmark 'nope'"):
        benchmarks.get("nope")


def test_a_taken_key_or_kind_is_refused_and_changes_nothing(isolated):
    class Twin(benchmarks.Benchmark):
        key = "vispr-attributes"

    class Judgy(benchmarks.Benchmark):
        key = "judgy"
        kinds = (type("OtherJudge", (JudgeKind,), {"key": "judge"}),)

    class Keyless(benchmarks.Benchmark):
        pass

    before = dict(kinds.KINDS), dict(benchmarks._registry)
    with pytest.raises(ImproperlyConfigured, match="Two benchmarks use the key 'vispr-attributes'"):
        benchmarks.register(Twin)
    with pytest.raises(ImproperlyConfigured, match="the run kind 'judge' is taken"):
        benchmarks.register(Judgy)
    with pytest.raises(ImproperlyConfigured, match="has no key"):
        benchmarks.register(Keyless)
    assert (kinds.KINDS, benchmarks._registry) == before


def test_each_benchmark_is_named_in_at_most_two_files_outside_its_folder():
    """tests, docs, bench, migrations and Markdown aside (design benchmark-folders.md, "How we know it holds")."""
    for benchmark in benchmarks.all_benchmarks():
        folder = Path(type(benchmark).__module__.replace(".", "/")).parent.as_posix()
        found = subprocess.run(["git", "grep", "-il", benchmark.key, "--", "*.py", "*.html"], cwd=ROOT, capture_output=True, text=True).stdout
        outside = [f for f in found.split() if not f.startswith((folder + "/", "tests/", "docs/", "bench/")) and "/migrations/" not in f]
        assert len(outside) <= 2, outside


def test_old_paths_answer_301_to_the_same_rest_and_query(isolated, rf):
    class Moved(benchmarks.Benchmark):
        key, label = "moved-bench", "Moved"
        old_paths = (("oldplace/", "persons/"),)

    benchmarks.register(Moved)
    pattern = next(p for p in benchmarks.url_patterns() if p.pattern.regex.pattern.startswith("^oldplace/"))
    match = pattern.resolve("oldplace/7/edit")
    response = match.func(rf.get("/oldplace/7/edit", {"page": "2"}), **match.kwargs)
    assert response.status_code == 301 and response["Location"] == "/benchmarks/moved-bench/persons/7/edit?page=2"
    assert pattern.resolve("elsewhere/oldplace/") is None
