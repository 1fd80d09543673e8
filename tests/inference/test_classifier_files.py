"""register_classifier never leaves a file without its row or a row without its file (issue 36): a
database connection cut after the row is written, or an audit write that fails, leaves neither."""
from __future__ import annotations

import pytest
from django.db import DatabaseError, OperationalError
from django.db.backends import utils as db_utils

from core.models import AuditEvent
from inference.models import ClassifierModel
from inference.providers.onnx import registry
from tests.support.classifiers import tiny_classifier

# Like every transactional test here: a flush without serialized_rollback recreates content types that the next
# serialized test reloads.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    return settings.DATA_DIR


def files(data_dir) -> list[str]:
    folder = data_dir / "classifiers"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.fixture
def cut_after_the_row(monkeypatch):
    """Once the row is inserted, every statement fails as on a connection the server closed (which
    also discards the open transaction: ROLLBACK still goes through)."""
    real_create, real_execute = ClassifierModel.objects.create, db_utils.CursorWrapper.execute
    cut = {"now": False}

    def create(**kwargs):
        row = real_create(**kwargs)
        cut["now"] = True
        return row

    def execute(self, sql, params=None):
        if cut["now"] and not sql.lstrip().upper().startswith("ROLLBACK"):
            raise OperationalError("server closed the connection unexpectedly")
        return real_execute(self, sql, params)

    monkeypatch.setattr(ClassifierModel.objects, "create", create)
    monkeypatch.setattr(db_utils.CursorWrapper, "execute", execute)
    return cut


def test_a_cut_connection_leaves_neither_file_nor_row(data_dir, tmp_path, cut_after_the_row):
    source = tiny_classifier(tmp_path / "tiny.onnx")
    with pytest.raises(OperationalError):
        registry.register("cut", source, ["private", "public"])
    assert cut_after_the_row["now"]
    cut_after_the_row["now"] = False  # the database is back
    assert files(data_dir) == []
    assert not ClassifierModel.objects.exists() and not AuditEvent.objects.filter(action="classifier.register").exists()


def test_a_failing_audit_write_leaves_neither_file_nor_row(data_dir, tmp_path, monkeypatch):
    def audit(*args, **kwargs):
        raise DatabaseError("the audit table is full")

    monkeypatch.setattr(registry, "audit", audit)
    source = tiny_classifier(tmp_path / "tiny.onnx")
    with pytest.raises(DatabaseError):
        registry.register("no-audit", source, ["private", "public"])
    assert files(data_dir) == [] and not ClassifierModel.objects.exists()


def test_a_failure_keeps_the_file_another_classifier_shares(data_dir, tmp_path, monkeypatch):
    source = tiny_classifier(tmp_path / "tiny.onnx")
    first = registry.register("same", source, ["private", "public"])
    monkeypatch.setattr(registry, "re", type("R", (), {"sub": staticmethod(lambda *a: "same")}))  # the same file name
    monkeypatch.setattr(registry, "NAME", type("N", (), {"match": staticmethod(lambda name: True)}))

    def audit(*args, **kwargs):
        raise DatabaseError("the audit table is full")

    monkeypatch.setattr(registry, "audit", audit)
    with pytest.raises(DatabaseError):
        registry.register("same-again", source, ["private", "public"])
    assert files(data_dir) == [first.path.name] and list(ClassifierModel.objects.values_list("name", flat=True)) == ["same"]
    assert first.path.read_bytes() == source.read_bytes()
