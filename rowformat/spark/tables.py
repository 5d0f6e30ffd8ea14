"""Paimon tables by path, through pypaimon: open (with time travel), create,
plan, read, write and commit. Pure Python over pypaimon; no pyspark.

A table is a directory with ``schema/schema-N`` files (Paimon's layout:
``snapshot/``, ``manifest/``, ``[partition dirs/]bucket-K/data-*``), written
by any engine. It is opened with ``FileStoreTable.from_path``, so it needs
no catalog; a table created here is what a filesystem catalog would create
at that path (``W/<db>.db/<table>`` is readable through a catalog on ``W``).

Reads and writes of ``.row`` data files go through rowformat when
:func:`acceleration` can turn it on (``rowformat.paimon.accelerated``), else
through stock pypaimon.
"""
from __future__ import annotations

import pickle
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from .. import schema_json
from ..errors import SchemaError
from ..paimon.tables import _import_pypaimon, acceleration
from ..paimon.tables import is_table, open_table, plan  # noqa: F401 - the data source uses them as tb.*
from ..types import RowType

ROW_ID = "_ROW_ID"


# ---------------------------------------------------------------- tables

def row_type(table) -> RowType:
    """The table's columns as a rowformat RowType."""
    return schema_json.loads([f.to_dict() for f in table.fields])


def arrow_schema(table) -> pa.Schema:
    """The Arrow schema pypaimon reads and writes the table's rows with."""
    from pypaimon.schema.data_types import PyarrowFieldParser
    return PyarrowFieldParser.from_paimon_schema(table.fields)


def latest_snapshot_id(table) -> int | None:
    snap = table.snapshot_manager().get_latest_snapshot()
    return None if snap is None else snap.id


def create_table(path: str, schema: RowType, *, partition_keys: Iterable[str] = (),
                 primary_keys: Iterable[str] = (), options: dict[str, str] | None = None):
    """Creates the table at ``path`` (``file.format=row`` unless ``options``
    say otherwise) and returns it; when another writer created it
    meanwhile, returns that one."""
    _import_pypaimon()
    from pypaimon import Schema
    from pypaimon.common.file_io import FileIO
    from pypaimon.common.options import Options
    from pypaimon.schema.data_types import DataField
    from pypaimon.schema.schema_manager import SchemaManager

    partition_keys, primary_keys = list(partition_keys), list(primary_keys)
    for kind, keys in (("partition", partition_keys), ("primary", primary_keys)):
        for k in keys:
            if k not in schema.names:
                raise SchemaError(f"{kind} key {k!r} is not a column; the columns are "
                                  f"{list(schema.names)}")
    opts = {"file.format": "row", **(options or {})}
    fields = [DataField.from_dict(j) for j in schema_json.to_json_fields(schema)]
    file_io = FileIO.get(path, Options({}))
    manager = SchemaManager(file_io, path)
    try:
        manager.create_table(Schema(fields=fields, partition_keys=partition_keys,
                                    primary_keys=primary_keys, options=opts))
    except RuntimeError:
        if not is_table(path):      # not the "schema exists" race: a real failure
            raise
    return open_table(path)


# ---------------------------------------------------------------- planning and reading

def split_bytes(split) -> int:
    return sum(int(f.file_size or 0) for f in split.files)


OPEN_COST = 4 << 20                 # pypaimon's and Spark's default cost of opening a file
MIN_GROUP_BYTES = 32 << 20          # below this a task's fixed cost outweighs spreading


def plan_splits(table, columns: list[str] | None = None,
                partition_leaves: Iterable[tuple[str, str, Any]] = ()) -> list[Any]:
    """The table's splits as small as pypaimon can make them: one data file
    each, except files that must be read together (a primary-key table's
    overlapping runs, a data-evolution table's files of one row range).
    pypaimon's default packs files into 128 MiB splits, which would make a
    table of two 56 MB files one Spark task on one core; :func:`group_splits`
    packs these pieces instead."""
    table = table.copy({"source.split.target-size": "1 b"})
    return plan(table, columns, partition_predicate(table, partition_leaves))


# PredicateBuilder's method for each comparison a partition filter may make
PREDICATE_METHODS = {"=": "equal", "<": "less_than", "<=": "less_or_equal", ">": "greater_than",
                     ">=": "greater_or_equal", "in": "is_in"}


def partition_predicate(table, leaves: Iterable[tuple[str, str, Any]]):
    """The AND of ``(op, partition key, literal)`` leaves (``op`` a key of
    PREDICATE_METHODS; "in" takes a list) as a pypaimon Predicate, or None."""
    leaves = list(leaves)
    if not leaves:
        return None
    pb = table.new_read_builder().new_predicate_builder()
    return pb.and_predicates([getattr(pb, PREDICATE_METHODS[op])(column, literal)
                              for op, column, literal in leaves])


def group_splits(splits: list[Any], max_bytes: int, min_groups: int = 1,
                 open_cost: int = OPEN_COST) -> list[list[Any]]:
    """Splits packed, in order, into groups of at most ``max_bytes`` (each
    split weighs its files' bytes plus ``open_cost`` per file), and smaller
    when that makes at least ``min_groups`` groups of ``MIN_GROUP_BYTES`` or
    more, so that every core gets work (Spark's rule for its file sources)."""
    weights = [split_bytes(s) + open_cost * max(1, len(s.files)) for s in splits]
    target = min(max_bytes, max(MIN_GROUP_BYTES, -(-sum(weights) // max(1, min_groups))))
    groups: list[list[Any]] = []
    size = 0
    for s, weight in zip(splits, weights):
        if groups and size + weight <= target:
            groups[-1].append(s)
            size += weight
        else:
            groups.append([s])
            size = weight
    return groups


def read_batches(table, splits: list[Any], columns: list[str]) -> Iterator[pa.RecordBatch]:
    """The rows of ``splits`` (merged, deletion vectors applied, as pypaimon
    reads them), ``columns`` only."""
    if not splits:
        return
    rb = table.new_read_builder().with_projection(list(columns))
    with acceleration():
        reader = rb.new_read().to_arrow_batch_reader(splits)
        try:
            for batch in reader:
                if batch.num_rows:
                    yield batch
        finally:
            close = getattr(reader, "close", None)
            if close is not None:
                close()


# ---------------------------------------------------------------- writing

def write_builder(table, overwrite: bool):
    wb = table.new_batch_write_builder()
    return wb.overwrite() if overwrite else wb


def write_batches(table, batches: Iterable[pa.RecordBatch], overwrite: bool) -> bytes:
    """Writes ``batches`` (columns named as the table's, any order, Arrow
    types castable to the table's) as new data files and returns the
    pickled pypaimon commit messages; nothing is visible until they are
    committed. On failure the files written so far are removed."""
    target = arrow_schema(table)
    w = write_builder(table, overwrite).new_write()
    try:
        with acceleration():
            for batch in coalesce(batches):
                w.write_arrow_batch(conform_batch(batch, target))
            messages = w.prepare_commit()
    except BaseException:
        try:
            w.abort()
        finally:
            w.close()
        raise
    w.close()
    return pickle.dumps(messages)


# pypaimon's write_arrow_batch costs ~6 ms a call whatever the rows (an
# Acero group-by of the rows by partition and bucket): on Spark's batches of
# spark.sql.execution.arrow.maxRecordsPerBatch (10,000) rows that was 0.15-0.3 s
# of CPU per 500,000 rows written, against 0.03 s in batches of 64Ki rows.
WRITE_BATCH_ROWS = 65536
WRITE_BATCH_BYTES = 64 << 20        # and no bigger: a string column's offsets stay far from 2 GiB


def coalesce(batches: Iterable[pa.RecordBatch], rows: int = WRITE_BATCH_ROWS,
             max_bytes: int = WRITE_BATCH_BYTES) -> Iterator[pa.RecordBatch]:
    """``batches`` (of one schema) without empty ones, consecutive small ones
    concatenated, in order, into batches of about ``rows`` rows or ``max_bytes``."""
    pending: list[pa.RecordBatch] = []
    n = size = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        pending.append(batch)
        n += batch.num_rows
        size += batch.nbytes
        if n >= rows or size >= max_bytes:
            yield from _concat(pending)
            pending, n, size = [], 0, 0
    if pending:
        yield from _concat(pending)


def _concat(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    if len(batches) == 1:
        return batches
    return pa.Table.from_batches(batches).combine_chunks().to_batches()


def conform_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    arrays = []
    for field in target:
        arr = batch.column(field.name)
        if not arr.type.equals(field.type):
            try:
                if pa.types.is_fixed_size_list(field.type) and (
                        pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
                    arr = _list_to_fixed(arr, field.type)
                else:
                    arr = arr.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise SchemaError(f"column {field.name!r}: cannot store {arr.type} values as "
                                  f"{field.type}: {e}") from None
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _list_to_fixed(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """list -> fixed_size_list (a VECTOR column). Arrow's own cast crashes
    on null lists (pyarrow 2x), so the child array is rebuilt here."""
    import numpy as np
    n = target.list_size
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)
    lengths = np.asarray(pc.list_value_length(arr).fill_null(n).to_numpy(zero_copy_only=False))
    if (lengths != n).any():
        bad = int(np.flatnonzero(lengths != n)[0])
        raise pa.ArrowInvalid(f"row {bad} has {lengths[bad]} elements, not {n}")
    values = arr.flatten()                  # the elements of the valid lists, in order
    rank = np.cumsum(valid) - 1
    idx = np.where(valid[:, None], rank[:, None] * n + np.arange(n)[None, :], len(values))
    child = pa.concat_arrays([values, pa.nulls(1, values.type)]).take(pa.array(idx.ravel()))
    child = child.cast(target.value_type)
    return pa.FixedSizeListArray.from_arrays(child, type=target,
                                             mask=pa.array(~valid) if not valid.all() else None)


def commit(table, pickled: Iterable[bytes], overwrite: bool, dynamic: bool = False) -> None:
    """Commits the messages of every task in one snapshot. An overwrite
    replaces the whole table, or with ``dynamic`` only the partitions the
    messages write to (pypaimon's default is dynamic; Spark's is not)."""
    messages = [m for p in pickled for m in pickle.loads(p)]
    if overwrite:
        table = table.copy({"dynamic-partition-overwrite": "true" if dynamic else "false"})
    c = write_builder(table, overwrite).new_commit()
    try:
        c.commit(messages)
    finally:
        c.close()


def abort(table, pickled: Iterable[bytes]) -> None:
    """Deletes the files of uncommitted messages."""
    messages = [m for p in pickled for m in pickle.loads(p)]
    if not messages:
        return
    c = table.new_batch_write_builder().new_commit()
    try:
        c.abort(messages)
    finally:
        c.close()
