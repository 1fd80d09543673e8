"""The CPRT-Bench import's write pass on PostgreSQL: the file streamed with COPY into a staging table,
then set-based merges, so the rate is close to a bare COPY and memory does not grow with the file.

The same results as the bulk path (`importing._store_rows`, kept for SQLite; tests compare both on one
file): images created with the import's split and source, existing images' published level and
score updated (their split kept and reported), the ground-truth annotator's labels inserted or
updated (rationale emptied), a history row per label created ('+') or changed ('~') stamped with the
import's time and actor, nothing for unchanged labels.

Every statement below is one set-based statement over the staging tables (no per-row Python after the
COPY): the labels and their history rows are written together (`_merge_labels`, the one place that
writes labels here), in (image, attribute) order so that the label and history indexes are appended
to rather than written all over. The staging tables are TEMPORARY (no WAL, dropped at commit) and have
no index: every merge is a hash join over the whole staging table, which ANALYZE sizes.
"""
from __future__ import annotations

from collections.abc import Iterator

from django.db import connection
from django.utils import timezone

from annotations import label_version
from annotations.models import Image, Label

from .common import CHUNK
from .reading import check_rows, duplicate_problem, refuse_on_problems

STAGE = "cprt_import_stage"
IDS = "cprt_import_ids"


def store_file_with_copy(path, tax, attribute_pks: list[int], split: str, annotator_id: int, source: str, user_id: int | None):
    """Validate the file and write its rows in one pass; returns (rows, image ids (StagedImageIds), created, updated, split_differs).

    Each row is checked as it is read and COPYed into the staging table (a refused row with its id only,
    for the duplicate check); duplicate ids are then found by the database, and a file with any problem
    raises BenchFileError listing them all, like `reading.scan_file`: the caller's transaction rolls back.
    """
    quote = connection.ops.quote_name
    image = quote(Image._meta.db_table)
    stamp = timezone.now()
    problems: list[tuple[int, str]] = []
    rows = 0
    with connection.cursor() as cursor:
        # The import is one transaction that can be run again (it is idempotent): its commit need not wait
        # for the WAL to reach the disk. A crash just after the commit loses the import, never half of it.
        cursor.execute("SET LOCAL synchronous_commit = off")
        cursor.execute(f"CREATE TEMPORARY TABLE {STAGE} (ord integer, place text, vispr_id text, level smallint, "
                       "score double precision, labels text) ON COMMIT DROP")
        with cursor.cursor.copy(f"COPY {STAGE} (ord, place, vispr_id, level, score, labels) FROM STDIN") as copy:
            # COPY text written as it is: a place ("line 3", "row 3") and a VISPR id hold no tab, newline or backslash.
            lines = []
            for position, where, row_id, row in check_rows(path, tax, problems):
                if row is None:
                    lines.append(f"{position}\t{where}\t{row_id}\t\\N\t\\N\t\\N\n")
                else:
                    rows += 1
                    lines.append(f"{position}\t{where}\t{row_id}\t{row.level}\t{row.score!r}\t{''.join(map(str, row.labels))}\n")
                if len(lines) == CHUNK:
                    copy.write("".join(lines))
                    lines.clear()
            copy.write("".join(lines))
        # Duplicate ids: every row after the first of its id, against the first (a refused row's id counts).
        cursor.execute(
            f"WITH d AS (SELECT vispr_id, min(ord) AS first FROM {STAGE} GROUP BY vispr_id HAVING count(*) > 1) "
            f"SELECT s.ord, s.place, s.vispr_id, f.place FROM d JOIN {STAGE} s ON s.vispr_id = d.vispr_id AND s.ord > d.first "
            f"JOIN {STAGE} f ON f.ord = d.first WHERE s.labels IS NOT NULL ORDER BY s.ord"
        )
        problems.extend((position, duplicate_problem(where, row_id, first)) for position, where, row_id, first in cursor.fetchall())
        refuse_on_problems(path, problems, rows)
        cursor.execute(f"ANALYZE {STAGE}")
        cursor.execute(f"SELECT i.vispr_id FROM {image} i JOIN {STAGE} s ON s.vispr_id = i.vispr_id WHERE i.split <> %s ORDER BY s.ord",
                       [split])
        split_differs = [r[0] for r in cursor.fetchall()]
        cursor.execute(f"UPDATE {image} i SET published_level = s.level, published_score = s.score FROM {STAGE} s "
                       "WHERE i.vispr_id = s.vispr_id")
        updated = cursor.rowcount
        cursor.execute(
            f"INSERT INTO {image} (vispr_id, split, file, width, height, sha256, source, vispr_split, vispr_labels, published_level, "
            "published_score, batch_id, unsuitable, created_at) "
            f"SELECT s.vispr_id, %s, '', NULL, NULL, '', %s, '', '[]'::jsonb, s.level, s.score, NULL, false, %s FROM {STAGE} s "
            f"WHERE NOT EXISTS (SELECT 1 FROM {image} i WHERE i.vispr_id = s.vispr_id) ORDER BY s.ord",
            [split, source, stamp],
        )
        created = cursor.rowcount
        # The labels of the file: one row per (image, attribute), beside the image's id, in index order.
        cursor.execute(
            f"CREATE TEMPORARY TABLE {STAGE}_labels ON COMMIT DROP AS "
            f"SELECT i.id AS image_id, a.attribute_id, substr(s.labels, a.n::integer, 1)::double precision AS value FROM {STAGE} s "
            f"JOIN {image} i ON i.vispr_id = s.vispr_id CROSS JOIN unnest(%s::integer[]) WITH ORDINALITY a(attribute_id, n) "
            "ORDER BY i.id, a.attribute_id",
            [attribute_pks],
        )
        cursor.execute(f"ANALYZE {STAGE}_labels")
        _merge_labels(cursor, f"{STAGE}_labels", annotator_id, stamp, user_id)
        label_version.bump([annotator_id])  # as write_label_sets does: the label fingerprint changes with the import
        # The imported images' ids stay in the database (a million of them are not held here) for the rescoring.
        cursor.execute(f"DROP TABLE IF EXISTS {IDS}")  # an earlier import in the same transaction
        cursor.execute(f"CREATE TEMPORARY TABLE {IDS} (id bigint PRIMARY KEY) ON COMMIT DROP")
        cursor.execute(f"INSERT INTO {IDS} (id) SELECT i.id FROM {STAGE} s JOIN {image} i ON i.vispr_id = s.vispr_id ORDER BY i.id")
        cursor.execute(f"ANALYZE {IDS}")
        cursor.execute(f"DROP TABLE {STAGE}_labels")
        cursor.execute(f"DROP TABLE {STAGE}")
    return rows, StagedImageIds(rows), created, updated, split_differs


class StagedImageIds:
    """The ids of the images one import wrote, kept in a temporary table until its transaction ends and read
    back a sorted chunk at a time (`recompute_scores` asks for `sorted_chunks`), so rescoring the imported
    images holds one chunk of ids, not an array of every id (8 bytes a row, and copies of it while read)."""

    def __init__(self, rows: int):
        self.rows = rows

    def __len__(self) -> int:
        return self.rows

    def sorted_chunks(self, size: int) -> Iterator[list[int]]:
        last = None
        while True:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT id FROM {IDS} WHERE id > %s ORDER BY id LIMIT %s", [-1 if last is None else last, size])
                chunk = [row[0] for row in cursor.fetchall()]
            if not chunk:
                return
            yield chunk
            last = chunk[-1]

    def __iter__(self) -> Iterator[int]:
        for chunk in self.sorted_chunks(10_000):
            yield from chunk


def _merge_labels(cursor, staged: str, annotator_id: int, stamp, user_id: int | None) -> None:
    """The staged (image_id, attribute_id, value) labels of one annotator written, as write_label_sets writes them:
    changed labels updated (rationale emptied), new ones inserted, and a history row for each label written,
    from what the write returned ('~' changed, '+' created, at `stamp` by `user_id`); unchanged labels untouched."""
    quote = connection.ops.quote_name
    label, history = quote(Label._meta.db_table), quote(Label.history.model._meta.db_table)
    columns = ", ".join(quote(f.column) for f in Label._meta.concrete_fields)
    into_history = f"INSERT INTO {history} ({columns}, history_date, history_change_reason, history_type, history_user_id) "
    cursor.execute(
        f"WITH changed AS (UPDATE {label} l SET value = t.value, rationale = '', updated_at = %s FROM {staged} t "
        "WHERE l.image_id = t.image_id AND l.annotator_id = %s AND l.attribute_id = t.attribute_id "
        f"AND (l.value <> t.value OR l.rationale <> '') RETURNING l.*) "
        f"{into_history} SELECT {columns}, %s, NULL, '~', %s FROM changed ORDER BY image_id, attribute_id",
        [stamp, annotator_id, stamp, user_id],
    )
    cursor.execute(
        f"WITH created AS (INSERT INTO {label} (image_id, annotator_id, attribute_id, value, rationale, created_at, updated_at) "
        f"SELECT t.image_id, %s, t.attribute_id, t.value, '', %s, %s FROM {staged} t WHERE NOT EXISTS "
        f"(SELECT 1 FROM {label} l WHERE l.image_id = t.image_id AND l.annotator_id = %s AND l.attribute_id = t.attribute_id) "
        f"ORDER BY t.image_id, t.attribute_id RETURNING *) "
        f"{into_history} SELECT {columns}, %s, NULL, '+', %s FROM created ORDER BY id",
        [annotator_id, stamp, stamp, annotator_id, stamp, user_id],
    )
