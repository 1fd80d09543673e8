"""The benchmark registry (inference/benchmarks.py): benchmarks found through their app configs, their
kinds in inference.kinds.KINDS, their urls under benchmarks/<key>/, clashes refused at start, and each
benchmark named in at most two files outside its folder."""
from __future__ import annotations

import re
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


def _outside(folder: str, patterns=("*.py", "*.html")) -> list[str]:
    """Tracked and new files outside a benchmark's folder (tests, docs, bench and migrations aside)."""
    found = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "--", *patterns], cwd=ROOT, capture_output=True, text=True).stdout
    return [f for f in found.split() if not f.startswith((folder + "/", "tests/", "docs/", "bench/")) and "/migrations/" not in f
            and (ROOT / f).is_file()]


def _kind_key_use(key: str) -> str:
    """A kind key where a run's task or a kind is named: after task, TASK_..., kind(s) or KINDS and up to 8
    other characters (quotes, =, ==, (, [, ", "), and not followed by more of a name."""
    return rf"(?:task|TASK\w*|kinds?|KINDS)[^\w\n]{{1,8}}{re.escape(key)}(?![\w-])"


def test_no_file_outside_a_benchmarks_folder_imports_it_or_names_its_kinds():
    """Below and beside its folder, a benchmark is reached through the registry only: no import of its package,
    no use of its kind classes, no kind key as a run's task or kind (`task == "binary"`, `?task=binary`,
    `TASK_X = "binary"`, `kinds = ("binary",)`, `--kind", "binary"`, `KINDS["binary"]`). Other uses of the same
    word stay: CPRT's binary view of severity (`report["binary"]`, `Table("binary", ...)`, `"binary_view"`)."""
    for benchmark in benchmarks.all_benchmarks():
        package = type(benchmark).__module__.rsplit(".", 1)[0]
        uses = [rf"(?:from|import)\s+{re.escape(package)}\b"]
        for kind in benchmark.kinds:
            uses += [_kind_key_use(kind.key), rf"\b{re.escape(kind.__name__)}\b"]
        use = re.compile("|".join(uses))
        named = [f"{path}:{n}: {line.strip()[:120]}" for path in _outside(package.replace(".", "/"))
                 for n, line in enumerate((ROOT / path).read_text(encoding="utf-8", errors="replace").splitlines(), 1) if use.search(line)]
        assert not named, (benchmark.key, named)


def test_the_kind_key_check_finds_what_it_looks_for():
    """The check above catches the ways the binary kind was named before its folder, and not CPRT's binary view."""
    use = re.compile(_kind_key_use("binary"))
    for line in ('if run.task == "binary":', 'TASK_BINARY = "binary"', 'kinds = ("binary",)', '<a href="/runs/new/?task=binary">',
                 'call_command("launch_run", "--kind", "binary")', 'KINDS["binary"]', 'Run(task="binary")'):
        assert use.search(line), line
    for line in ('report["binary"] = binary', 'Table("binary", "Binary view", cols, rows)', 'spec={"kind": "binary_view"}',
                 'table_names = ("classifiers", "judges", "binary", "confusion")', '{% with t=tables.binary %}'):
        assert not use.search(line), line


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


def test_an_old_path_with_an_id_moves_it_into_the_new_one(isolated, rf):
    class Moved(benchmarks.Benchmark):
        key, label = "moved-bench", "Moved"
        old_paths = (("oldscoring/runs/<id>/figures/", "runs/<id>/"),)

    benchmarks.register(Moved)
    pattern = next(p for p in benchmarks.url_patterns() if p.pattern.regex.pattern.startswith("^oldscoring/"))
    match = pattern.resolve("oldscoring/runs/42/figures/")
    response = match.func(rf.get("/oldscoring/runs/42/figures/", {"threshold": "1"}), **match.kwargs)
    assert response.status_code == 301 and response["Location"] == "/benchmarks/moved-bench/runs/42/?threshold=1"
    assert pattern.resolve("oldscoring/runs/x/figures/") is None
