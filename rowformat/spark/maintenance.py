"""Table upkeep from a Spark session: :func:`expire_snapshots`."""
from __future__ import annotations

from ..paimon import tables as tb


def expire_snapshots(spark, table: str, *, retain_last: int | None = None, older_than=None,
                     storage_options: dict | None = None, dry_run: bool = False) -> tb.Expired:
    """:func:`rowformat.paimon.tables.expire_snapshots` of the Paimon table
    at ``table`` (a directory or a URL), run here on the driver (on Spark
    Connect, the client) with the store's settings a read of the table
    would use: ``storage_options`` (``s3.endpoint``, ...) over the session's
    ``spark.hadoop.fs.s3a.*`` settings over the ``AWS_*`` environment.
    Overwrites keep every earlier snapshot's files until this runs."""
    from .lookups import storage_settings
    from .options import for_path, normalize_path
    path = normalize_path(table)
    settings = for_path(path, storage_settings(spark, storage_options))
    return tb.expire_snapshots(path, retain_last=retain_last, older_than=older_than,
                               storage_options=settings, dry_run=dry_run)
