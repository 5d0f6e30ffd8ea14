"""``df.writeStream.format("paimon-row")``: Structured Streaming into a
Paimon table, exactly once.

Each micro-batch's tasks write data files as a batch write's do
(:meth:`.TableWriter.write`) and send back their commit messages; the
driver's ``commit(messages, batchId)`` makes ONE Paimon snapshot with
``commitIdentifier`` = the batch id and a ``commitUser`` that is the same
for every run of the query: the query id Spark keeps in the checkpoint
(``<checkpointLocation>/metadata``, ``{"id": ...}``), under the table's
``commit.user-prefix``, or the ``commitUser`` option. A batch Spark replays
after a crash (committed to Paimon, not yet recorded in the checkpoint's
``commits/``) then finds its identifier in the table's snapshots, as
Paimon Java's ``filterCommitted`` does, and is not committed twice: its new
files are deleted (:func:`rowformat.paimon.streaming.commit_once`).

Where things run (PySpark 4.3): Spark makes a new writer for each
micro-batch's tasks and another for each ``commit``/``abort``, so nothing
made in ``__init__`` (a UUID) identifies the query; the checkpoint does.
"""
from __future__ import annotations

import json
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter
from pyspark.sql.types import StructType

from ..errors import DatasetError
from ..io import fileio, urls
from ..paimon import streaming
from ..paimon import tables as tb
from . import FORMAT_NAME
from .options import check_option_names, file_options, for_path, normalize_path, \
    storage_settings
from .preflight import Shipped
from .table_source import TableWriter
from .worker import settle_worker

# the stream write's own options, not a batch write's
_STREAM_ONLY = ("checkpointlocation", "commituser", "queryname")


class TableStreamWriter(Shipped, DataSourceStreamArrowWriter):
    """Appends each micro-batch to a Paimon table in one snapshot tagged
    (commit user, batch id); primary-key tables take the rows as upserts."""

    def __init__(self, options, schema: StructType, overwrite: bool,
                 captured: dict | None = None):
        if overwrite:
            raise DatasetError(
                f"{FORMAT_NAME}: outputMode('complete') is not supported: it would replace the "
                f"whole table every micro-batch. Use outputMode('append') (a primary-key "
                f"table takes appended rows as upserts of their keys)")
        check_option_names(options, "stream write")
        self.checkpoint = options.get("checkpointlocation")
        self.commit_user_option = options.get("commituser")
        if self.checkpoint is None and self.commit_user_option is None:
            raise DatasetError(
                f"{FORMAT_NAME}: a stream write needs .option('checkpointLocation', ...) "
                f"(the query id kept there is the commit user that lets a replayed micro-batch "
                f"be recognised as committed); a location set only through "
                f"spark.sql.streaming.checkpointLocation is not shown to the sink: give the "
                f"option, or .option('commitUser', <a name unique to this query>)")
        batch_options = {k.lower(): v for k, v in options.items()
                         if k.lower() not in _STREAM_ONLY}
        self.captured = captured
        # creates the table on the first batch, checks an existing one's columns
        self.table_writer = TableWriter(batch_options, schema, False, captured)
        self.path = self.table_writer.path
        self.storage_options = self.table_writer.storage_options

    def write(self, iterator: Iterator[pa.RecordBatch]):      # one call per task
        return self.table_writer.write(iterator)

    def commit_user(self, table) -> str:
        """The query's commit user: the ``commitUser`` option, else the
        checkpoint's query id under the table's ``commit.user-prefix``."""
        if self.commit_user_option is not None:
            return self.commit_user_option
        checkpoint = normalize_path(self.checkpoint)
        where = urls.join(checkpoint, "metadata")
        settings = file_options(checkpoint, for_path(checkpoint,
                                                     storage_settings({}, self.captured)))
        try:
            query_id = json.loads(fileio.read_bytes(where, settings))["id"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise DatasetError(f"{FORMAT_NAME}: cannot read the streaming query's id from "
                               f"{urls.redact(where)} ({e}): it names the commit user that "
                               f"makes replayed micro-batches idempotent") from None
        prefix = table.options.commit_user_prefix()
        return f"{prefix}_{query_id}" if prefix else str(query_id)

    def commit(self, messages, batchId: int) -> None:
        settle_worker()
        table = tb.open_table(self.path, storage_options=self.storage_options)
        streaming.commit_once(table, [m.messages for m in messages if m is not None],
                              self.commit_user(table), int(batchId))

    def abort(self, messages, batchId: int) -> None:   # messages of failed tasks are None
        # also called when commit() raised, perhaps after its snapshot was
        # created: the files go only if no snapshot of this batch may name them
        settle_worker()
        table = tb.open_table(self.path, storage_options=self.storage_options)
        streaming.abort_once(table, [m.messages for m in messages if m is not None],
                             self.commit_user(table), int(batchId))
