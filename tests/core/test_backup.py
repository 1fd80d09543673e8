"""deploy/backup.sh -> deploy/restore.sh round trip on PostgreSQL: every row and every media file comes back.

Runs where the tests run on PostgreSQL (DATABASE_URL=postgres://...); restores into a fresh database
named after the test database (`<name>_restore`), dropped afterwards.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from annotations.models import Image
from tests.support.workers import ROOT

needs_postgres = [
    pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="the backup round trip needs PostgreSQL"),
    pytest.mark.skipif(not shutil.which("pg_dump"), reason="pg_dump is not installed"),
]


def url(name: str) -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{name}"


def rows(dsn: str) -> dict[str, tuple[int, str]]:
    """table -> (row count, md5 of every row's text, in order)."""
    with psycopg.connect(dsn) as conn:
        tables = [t for (t,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
        return {t: conn.execute(f"SELECT count(*), md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) "
                                f'FROM "{t}" x').fetchone() for t in tables}


def checksums(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def script(name: str, *args, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(ROOT / "deploy" / name), *args], env=dict(os.environ, **env), capture_output=True, text=True, timeout=300)


@needs_postgres[0]
@needs_postgres[1]
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_backup_restores_into_an_empty_stack(settings, tmp_path, make_image, set_labels, model_annotators):
    image_root = Path(settings.PRIVATE_IMAGE_ROOT)  # where the image storage writes
    images = [make_image(f"2017_{i:05d}", color=(30 * i, 90, 200 - 20 * i)) for i in range(3)]
    gpt, _ = model_annotators
    for image in images:
        set_labels(image, gpt, {"biometrics": 1, "age": 0.5})
    (tmp_path / "exports" / "job-1").mkdir(parents=True)
    (tmp_path / "exports" / "job-1" / "dataset.zip").write_bytes(os.urandom(4096))
    stored = {image.file.name for image in Image.objects.all()}
    assert len(stored) == 3 and stored <= set(checksums(image_root))
    parked = image_root / ".import-vispr-abc123" / f"{'0' * 64}.jpg"  # an import under way: its parking folder
    parked.parent.mkdir()
    parked.write_bytes(b"parked")

    source = url(connection.settings_dict["NAME"])
    archive = tmp_path / "backup.tar"
    done = script("backup.sh", str(archive),
                  env={"DATABASE_URL": source, "PRIVATE_IMAGE_ROOT": str(image_root), "CPRT_EXPORT_ROOT": str(tmp_path / "exports")})
    assert done.returncode == 0, done.stderr
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert {"VERSION", "MANIFEST.sha256", "database.dump"} <= set(names)

    target_name = f"{connection.settings_dict['NAME']}_restore"
    admin = url("postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{target_name}"')
        conn.execute(f'CREATE DATABASE "{target_name}"')
    try:
        target = url(target_name)
        restored = {"DATABASE_URL": target, "PRIVATE_IMAGE_ROOT": str(tmp_path / "new" / "images"),
                    "CPRT_EXPORT_ROOT": str(tmp_path / "new" / "exports")}
        done = script("restore.sh", str(archive), env=restored)
        assert done.returncode == 0, done.stderr

        assert rows(target) == rows(source)
        assert rows(target)["annotations_label"][0] >= 3
        parked.unlink()
        parked.parent.rmdir()
        assert checksums(tmp_path / "new" / "images") == checksums(image_root) != {}  # the parking folder left out
        assert checksums(tmp_path / "new" / "exports") == checksums(tmp_path / "exports") != {}

        # A second restore would mix two states: refused, nothing changed.
        before = rows(target)
        again = script("restore.sh", str(archive), env=restored)
        assert again.returncode == 3 and "restore only into an empty database" in again.stderr
        assert rows(target) == before
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{target_name}" WITH (FORCE)')


def test_a_damaged_archive_is_refused(tmp_path):
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "VERSION").write_text("cprt-backup 1\n")
    (tmp_path / "pack" / "database.dump").write_bytes(b"changed")
    (tmp_path / "pack" / "MANIFEST.sha256").write_text(f"{hashlib.sha256(b'original').hexdigest()}  database.dump\n")
    with tarfile.open(tmp_path / "bad.tar", "w") as tar:
        for name in ("VERSION", "MANIFEST.sha256", "database.dump"):
            tar.add(tmp_path / "pack" / name, arcname=name)
    nowhere = {"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "PRIVATE_IMAGE_ROOT": str(tmp_path / "i"),
               "CPRT_EXPORT_ROOT": str(tmp_path / "e")}
    done = script("restore.sh", str(tmp_path / "bad.tar"), env=nowhere)
    assert done.returncode == 2 and "damaged" in done.stderr
