"""The CPRT-Bench import's write pass on PostgreSQL: the file streamed with COPY into a staging table,
then set-based merges, so the rate is close to a bare COPY and memory does not grow with the file.

The same results as the bulk path (`importing._store_rows`, kept for SQLite; tests compare both on one
file): images created with the import's split and source, existing images' published level and
score updated (their split kept and reported), the ground-truth annotator's labels inserted or
updated (rationale emptied), a history row per label created ('+') or changed ('~') stamped with the
import's time and actor, nothing for unchanged labels.
"""
from __future__ import annotations

from django.db import connection
from django.utils import timezone

from annotations import label_version
from annotations.models import Image, Label

STAGE = "cprt_import_stage"


def store_rows_with_copy(rows, attribute_pks: list[int], split: str, annotator_id: int, source: str, user_id: int | None):
    """Write the valid rows (an iterator of reading.BenchRow); returns (image ids, created, updated, split_differs)."""
    quote = connection.ops.quote_name
    image, label = quote(Image._meta.db_table), quote(Label._meta.db_table)
    history = quote(Label.history.model._meta.db_table)
    columns = ", ".join(quote(f.column) for f in Label._meta.concrete_fields)
    stamp = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TEMPORARY TABLE {STAGE} (ord integer, vispr_id text, level smallint, score double precision, "
                       "labels smallint[]) ON COMMIT DROP")
        with cursor.cursor.copy(f"COPY {STAGE} (ord, vispr_id, level, score, labels) FROM STDIN") as copy:
            for n, row in enumerate(rows):
                copy.write_row((n, row.id, row.level, row.score, list(row.labels)))
        cursor.execute(f"CREATE INDEX ON {STAGE} (vispr_id)")
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
        # The labels of the file: one row per (image, attribute), beside the image's id.
        cursor.execute(
            f"CREATE TEMPORARY TABLE {STAGE}_labels ON COMMIT DROP AS "
            f"SELECT i.id AS image_id, a.attribute_id, s.labels[a.n]::double precision AS value FROM {STAGE} s "
            f"JOIN {image} i ON i.vispr_id = s.vispr_id CROSS JOIN unnest(%s::integer[]) WITH ORDINALITY a(attribute_id, n)",
            [attribute_pks],
        )
        cursor.execute(
            f"UPDATE {label} l SET value = t.value, rationale = '', updated_at = %s FROM {STAGE}_labels t "
            "WHERE l.image_id = t.image_id AND l.annotator_id = %s AND l.attribute_id = t.attribute_id "
            "AND (l.value <> t.value OR l.rationale <> '')",
            [stamp, annotator_id],
        )
        cursor.execute(
            f"INSERT INTO {label} (image_id, annotator_id, attribute_id, value, rationale, created_at, updated_at) "
            f"SELECT t.image_id, %s, t.attribute_id, t.value, '', %s, %s FROM {STAGE}_labels t WHERE NOT EXISTS "
            f"(SELECT 1 FROM {label} l WHERE l.image_id = t.image_id AND l.annotator_id = %s AND l.attribute_id = t.attribute_id)",
            [annotator_id, stamp, stamp, annotator_id],
        )
        label_version.bump([annotator_id])  # as write_label_sets does: the label fingerprint changes with the import
        # History in bulk, as write_label_sets keeps it: the rows written at this import's stamp.
        labelled = ", ".join(f"l.{c.strip()}" for c in columns.split(","))
        cursor.execute(
            f"INSERT INTO {history} ({columns}, history_date, history_change_reason, history_type, history_user_id) "
            f"SELECT {labelled}, %s, NULL, CASE WHEN l.created_at = %s THEN '+' ELSE '~' END, %s FROM {STAGE}_labels t "
            f"JOIN {label} l ON l.image_id = t.image_id AND l.annotator_id = %s AND l.attribute_id = t.attribute_id "
            "WHERE l.updated_at = %s",
            [stamp, stamp, user_id, annotator_id, stamp],
        )
        cursor.execute(f"SELECT i.id FROM {STAGE} s JOIN {image} i ON i.vispr_id = s.vispr_id ORDER BY s.ord")
        image_ids = [r[0] for r in cursor.fetchall()]
        cursor.execute(f"DROP TABLE {STAGE}_labels")
        cursor.execute(f"DROP TABLE {STAGE}")
    return image_ids, created, updated, split_differs
