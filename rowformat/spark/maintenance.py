"""Table upkeep from a Spark session: :func:`expire_snapshots`,
:func:`remove_orphan_files` and :func:`compact`, run on the driver (on Spark
Connect, the client)."""
from __future__ import annotations

import datetime as dt

from ..paimon import tables as tb


def expire_snapshots(spark, table: str, *, retain_last: int | None = None, older_than=None,
                     storage_options: dict | None = None, dry_run: bool = False) -> tb.Expired:
    """:func:`rowformat.paimon.tables.expire_snapshots` of the Paimon table
    at ``table`` (a directory or a URL), run here on the driver (on Spark
    Connect, the client) with the store's settings a read of the table
    would use: ``storage_options`` (``s3.endpoint``, ...) over the session's
    ``spark.hadoop.fs.s3a.*`` settings over the ``AWS_*`` environment.
    Overwrites keep every earlier snapshot's files until this runs."""
    path, settings = _located(spark, table, storage_options)
    return tb.expire_snapshots(path, retain_last=retain_last, older_than=older_than,
                               storage_options=settings, dry_run=dry_run)


def remove_orphan_files(spark, table: str, *, older_than=dt.timedelta(days=1),
                        storage_options: dict | None = None,
                        dry_run: bool = False) -> tb.Orphans:
    """:func:`rowformat.paimon.tables.remove_orphan_files` of the Paimon
    table at ``table``, with the store's settings as :func:`expire_snapshots`
    finds them: the files failed or killed jobs wrote and never committed,
    last modified before ``older_than`` (default a day)."""
    path, settings = _located(spark, table, storage_options)
    return tb.remove_orphan_files(path, older_than=older_than, storage_options=settings,
                                  dry_run=dry_run)


def compact(spark, table: str, *, partitions=None, full: bool = False,
            storage_options: dict | None = None, dry_run: bool = False) -> tb.Compacted:
    """:func:`rowformat.paimon.tables.compact` of the Paimon append table at
    ``table``, with the store's settings as :func:`expire_snapshots` finds
    them: its small files rewritten in one ``COMPACT`` snapshot, on the
    driver (not yet spread over the executors)."""
    path, settings = _located(spark, table, storage_options)
    return tb.compact(path, partitions=partitions, full=full, storage_options=settings,
                      dry_run=dry_run)


def _located(spark, table: str, storage_options: dict | None) -> tuple[str, dict | None]:
    """(the table's path, its store's settings) as a read of it would use them."""
    from .lookups import storage_settings
    from .options import for_path, normalize_path
    path = normalize_path(table)
    return path, for_path(path, storage_settings(spark, storage_options))
