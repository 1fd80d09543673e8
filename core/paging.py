"""Page-sized counting for tables of millions of rows (the admin's labels: 8.36M at 100,000 images).

Django's paginator counts the whole filtered table to number its pages, and the admin counts it a
second time for "N total": two full COUNTs, 0.5-0.8 s at lab scale. `CappedCountPaginator` counts
at most `cap` rows (`SELECT COUNT(*) FROM (... LIMIT cap)`): the first pages are exact, and the
last page number stops at the cap [decision: past 10,000 rows a person filters or searches rather than
paging to row 5,000,000, whose OFFSET costs as much as the count]. An unfiltered table on PostgreSQL
shows the planner's estimate of its size instead (pg_class.reltuples, kept by ANALYZE), so the count
says "about how many"; pages past the cap stay unreachable there too.
"""
from __future__ import annotations

from math import ceil
from typing import cast

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.db import connections
from django.utils.functional import cached_property

COUNT_CAP = 10_000


class CappedCountPaginator(Paginator):
    cap = COUNT_CAP

    @cached_property
    def count(self) -> int:
        capped = self.queryset().order_by()[: self.cap + 1].count()
        if capped <= self.cap:
            return capped  # exact
        return max(self.estimate() or 0, self.cap + 1)

    @cached_property
    def num_pages(self) -> int:
        """Pages up to the cap: a page number past it would OFFSET millions of rows."""
        reachable = min(self.count, self.cap)
        if reachable == 0 and not self.allow_empty_first_page:
            return 0
        return ceil(max(1, reachable - self.orphans) / self.per_page)

    def queryset(self) -> QuerySet:
        """The rows paged: this paginator pages querysets only (the admin's)."""
        return cast(QuerySet, self.object_list)

    def estimate(self) -> int | None:
        """The planner's row count of an unfiltered table on PostgreSQL; None elsewhere."""
        qs = self.queryset()
        if qs.query.where or connections[qs.db].vendor != "postgresql":
            return None
        with connections[qs.db].cursor() as cursor:
            cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [qs.model._meta.db_table])
            row = cursor.fetchone()
        return int(row[0]) if row and row[0] and row[0] > 0 else None


class LargeTableAdmin:
    """Mixin for the admin of a table of millions of rows: no full count, neither for the pages nor for
    "N total"."""

    paginator = CappedCountPaginator
    show_full_result_count = False
