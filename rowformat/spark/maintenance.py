"""Table upkeep from a Spark session: :func:`expire_snapshots`,
:func:`remove_orphan_files` and :func:`compact`, run on the driver (on Spark
Connect, the client); a compaction's rewrites run on the executors."""
from __future__ import annotations

import datetime as dt

from ..errors import DatasetError
from ..paimon import tables as tb
from .preflight import Shipped


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
    """:func:`rowformat.paimon.tables.compact` of the Paimon table at
    ``table``, with the store's settings as :func:`expire_snapshots` finds
    them: planned and committed (one ``COMPACT`` snapshot) here on the
    driver (on Spark Connect, the client), each bucket's rewrite a Spark
    task on the executors, which read and write the table's files where
    they are. A failed job commits nothing; the files its finished tasks
    wrote are orphans (``remove_orphan_files`` takes them)."""
    path, settings = _located(spark, table, storage_options)
    return tb.compact(path, partitions=partitions, full=full, storage_options=settings,
                      dry_run=dry_run, rewrite=_on_executors(spark, path, settings))


def _on_executors(spark, path: str, settings: dict | None):
    """A ``rewrite(table, tasks)`` for ``_compact.compact`` that runs each
    task (a bucket's unit of files) as one Spark task, returning their
    written files' metas in the tasks' order."""
    def rewrite(table, tasks: list) -> list:
        import pickle
        from .preflight import check_workers
        check_workers(spark)
        run = CompactTasks(pickle.dumps((path, settings, int(table.table_schema.id), tasks)))
        rows = spark.range(len(tasks), numPartitions=len(tasks)) \
            .mapInArrow(run, "task long, metas binary").collect()
        written = {r.task: pickle.loads(r.metas) for r in rows}
        if len(rows) != len(tasks) or sorted(written) != list(range(len(tasks))):
            raise DatasetError(f"{path}: the compaction job returned tasks {sorted(written)} "
                               f"for {len(tasks)} buckets; nothing is committed")
        return [written[i] for i in range(len(tasks))]
    return rewrite


class CompactTasks(Shipped):   # Shipped: a worker without rowformat names its Python
    """The mapInArrow function of a compaction job: for each task number it
    is given, that task's rewrite (``tables.rewrite_shipped``) and the
    pickled metas of the files it wrote."""

    def __init__(self, shipped: bytes):
        self.shipped = shipped

    def __call__(self, batches):
        import pickle
        import pyarrow as pa
        from ..paimon.tables import rewrite_shipped
        for batch in batches:
            for i in batch.column(0).to_pylist():
                metas = pickle.dumps(rewrite_shipped(self.shipped, i))
                yield pa.RecordBatch.from_pydict({"task": [i], "metas": [metas]})


def _located(spark, table: str, storage_options: dict | None) -> tuple[str, dict | None]:
    """(the table's path, its store's settings) as a read of it would use them."""
    from .lookups import storage_settings
    from .options import for_path, normalize_path
    path = normalize_path(table)
    return path, for_path(path, storage_settings(spark, storage_options))
