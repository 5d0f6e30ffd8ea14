"""Rows by ``_ROW_ID`` or by row number inside Spark UDFs.

    looked = lookup_row_ids(ids, "/data/db.db/t", ["name"])       # by _ROW_ID
    looked = lookup(df, "_file", "_row", ["name", "score"])       # mapInArrow
    fetch = lookup_udf(["name"], schema="/data/t")               # arrow_udf
    df.select(fetch("_file", "_row").alias("hit"))

The callables shipped to the workers are instances of classes of this
importable module, so cloudpickle sends them *by reference*: their code and
the reader cache below live in the worker's imported module. Spark reuses
Python workers (``spark.python.worker.reuse``, on by default), so an open
reader (footer, block index, block cache) serves every later batch, task and
query of that worker. A function defined in ``__main__`` or a notebook would
be pickled by value, with a fresh empty cache each time.

Paimon's data files are immutable (unique names), which is what makes
caching readers by path safe.

Paths (tables, ``schema=`` directories, the values of a path column) are
local paths or URLs (``s3://...``). The store's settings are
``storage_options=`` (Paimon catalog names: ``s3.endpoint``,
``s3.access-key``, ...) over the session's ``spark.hadoop.fs.s3a.*``
settings over the driver's ``AWS_*`` environment, resolved on the driver
when the lookup is built and carried to the workers by the pickled
:class:`Fetcher`.
"""
from __future__ import annotations

import os
import threading
import warnings
from collections import OrderedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import RowFileReader
from ..arrow_types import as_row_type
from ..errors import SchemaError
from .. import datatypes
from ..datatypes import RowType
from ..paimon import tables as tb
from .preflight import Shipped

MAX_OPEN_READERS = int(os.environ.get("ROWFORMAT_SPARK_MAX_OPEN_READERS", "32"))
READER_CACHE_BYTES = 16 << 20    # per open reader: neighbouring rows share blocks
# A task's input rows looked up together: grouped by file and block across
# the task's batches (Spark's Arrow batches hold 10,000 rows by default), so
# each block they touch is decompressed once, however the rows are spread.
WINDOW_ROWS = int(os.environ.get("ROWFORMAT_SPARK_LOOKUP_WINDOW_ROWS", str(1 << 20)))
# Few input rows are looked up on the driver instead (see _collect_small),
# which saves the Python stage (its fixed cost, and a task per input
# partition) but reads on one process: at most this many rows (the default
# of ``local_max_rows=``; 0: never). Rows spread one per 64 KiB block cost
# the driver ~25-50 us each (measured on 2 loaded cores), so 10,000 such rows
# take about what a Python stage costs; neighbouring rows cost far less.
LOCAL_MAX_ROWS = int(os.environ.get("ROWFORMAT_SPARK_LOOKUP_LOCAL_ROWS", "10000"))
# ... and an input Spark's plan statistics put at most this big, as Spark's
# spark.sql.autoBroadcastJoinThreshold (10 MiB) judges a side small enough to
# collect: above it, no job is run to count the rows.
LOCAL_MAX_BYTES = 10 << 20

_readers: "OrderedDict[tuple[str, str, str], RowFileReader]" = OrderedDict()
_lock = threading.Lock()
stats = {"opened": 0, "evicted": 0}   # per worker process; tests read them


def open_reader(path: str, schema_text: str, storage_options: dict | None = None
                ) -> RowFileReader:
    """A cached reader of ``path`` (LRU, at most MAX_OPEN_READERS open, so
    file descriptors stay bounded); ``storage_options`` for a URL."""
    key = (path, schema_text, repr(sorted(storage_options.items())) if storage_options else "")
    with _lock:
        r = _readers.get(key)
        if r is not None:
            _readers.move_to_end(key)
            return r
    # prefix_lookups: a row early in a block decompresses only the block's prefix
    r = RowFileReader(path, schema_text, cache_bytes=READER_CACHE_BYTES, prefix_lookups=True,
                      storage_options=storage_options)
    with _lock:
        if key in _readers:          # another thread opened it meanwhile
            r.close()
            return _readers[key]
        _readers[key] = r
        stats["opened"] += 1
        while len(_readers) > MAX_OPEN_READERS:
            _, old = _readers.popitem(last=False)
            old.close()
            stats["evicted"] += 1
    return r


def clear_readers() -> None:
    with _lock:
        while _readers:
            _readers.popitem()[1].close()


def storage_settings(spark, given: dict | None) -> dict[str, str]:
    """The store's settings of a lookup, resolved on the driver:
    ``given`` over ``spark``'s S3A settings over the ``AWS_*`` environment."""
    from .options import environment_storage, merge_storage, session_storage
    return merge_storage(environment_storage(),
                         session_storage(spark) if spark is not None else {}, given or {})


def resolve_schema(schema, settings: dict | None = None) -> RowType:
    """A RowType, Paimon schema text, or the directory (a path or a URL) of
    a Paimon append table (its data files hold exactly the table's columns)."""
    from ..io import urls
    if isinstance(schema, str) and (urls.is_url(schema) or os.path.isdir(schema)):
        from .options import normalize_path
        return _table_file_schema(normalize_path(schema), settings)
    return as_row_type(schema)


def _table_file_schema(path: str, settings: dict | None = None) -> RowType:
    table = tb.open_table(path, storage_options=settings)
    if table.primary_keys:
        raise SchemaError(f"{path} is a primary-key table: its data files hold key and system "
                          f"columns besides the table's, and a key may be in several files; "
                          f"look rows up by _ROW_ID or by (file, row) of bare files")
    return tb.row_type(table)


def _parent(path: str) -> str:
    """The directory holding ``path`` (a local path or a URL; a bucket's
    root is its own parent)."""
    from ..io import urls
    if not urls.is_url(path):
        return os.path.dirname(path)
    scheme, _, rest = path.rstrip("/").partition("://")
    head, sep, _ = rest.rpartition("/")
    return f"{scheme}://{head}" if sep else path


def _table_root(path: str, settings: dict | None = None) -> str | None:
    """The Paimon table directory a data file belongs to (the nearest
    ancestor holding ``schema/``), or None."""
    d = _parent(path)
    while True:
        if tb.is_table(d, settings):
            return d
        parent = _parent(d)
        if parent == d:
            return None
        d = parent


class Fetcher:
    """Looks rows up by (path, row number) and returns Arrow columns of the
    Spark types. Picklable: plain fields only (``storage_options``: the
    store's settings, as catalog options, resolved on the driver)."""

    def __init__(self, schema: RowType, columns: list[str], spark_fields_json: str,
                 storage_options: dict | None = None):
        self.schema = str(schema)
        self.columns = list(columns)
        self.spark_fields_json = spark_fields_json
        self.storage_options = dict(storage_options or {})
        self._converter = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_converter"] = None
        return state

    def _target(self):
        import json
        from pyspark.sql.types import StructType
        from .spark_types import ArrowConverter, spark_arrow_schema
        if self._converter is None:
            target = spark_arrow_schema(StructType.fromJson(json.loads(self.spark_fields_json)))
            schema = datatypes.schema(self.schema)
            self._converter = (target, ArrowConverter(
                [(schema[c].type, target.field(c)) for c in self.columns]))
        return self._converter

    def fetch(self, paths: pa.Array, rows: pa.Array) -> list[pa.Array]:
        """One output array per column; null where the path or row is null.
        Rows are visited in (file, row) order, so each block is read once."""
        target, converter = self._target()
        n = len(paths)
        valid = np.ones(n, bool)
        if paths.null_count:
            valid &= ~np.asarray(paths.is_null().to_numpy(zero_copy_only=False))
        if rows.null_count:
            valid &= ~np.asarray(rows.is_null().to_numpy(zero_copy_only=False))
        row_numbers = np.asarray(rows.fill_null(0).to_numpy(zero_copy_only=False), np.int64)
        encoded = paths.dictionary_encode()
        codes = np.asarray(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False))
        result_schema = pa.schema([f.with_nullable(True) for f in
                                   (target.field(c) for c in self.columns)])
        pieces, order = [], []
        # the valid positions grouped by file and sorted by row number within
        # one, in one pass however many files the batch names: take() then
        # meets each block's rows as one run, and decompresses the block once
        by_file = np.flatnonzero(valid)
        by_file = by_file[np.lexsort((row_numbers[by_file], codes[by_file]))]
        cuts = np.flatnonzero(np.diff(codes[by_file])) + 1
        dictionary = encoded.dictionary.to_pylist()
        from .options import file_options
        for pos in np.split(by_file, cuts) if len(by_file) else []:
            path = dictionary[codes[pos[0]]]
            reader = open_reader(path, self.schema, file_options(path, self.storage_options))
            table = reader.take(row_numbers[pos], self.columns)    # keeps order and duplicates
            arrays = converter.convert([c.combine_chunks() for c in table.columns])
            pieces.append(pa.Table.from_arrays(arrays, schema=result_schema))
            order.append(pos)
        missing = np.flatnonzero(~valid)
        if len(missing):
            pieces.append(pa.Table.from_arrays(
                [pa.nulls(len(missing), f.type) for f in result_schema], schema=result_schema))
            order.append(missing)
        if not pieces:
            return [pa.array([], f.type) for f in result_schema]
        combined = pa.concat_tables(pieces)
        inverse = np.empty(n, np.int64)
        inverse[np.concatenate(order)] = np.arange(n)
        out = combined.take(pa.array(inverse))
        return [c.combine_chunks() for c in out.columns]


def _windows(items, size):
    """Lists of consecutive ``items`` holding up to WINDOW_ROWS rows
    (``size(item)`` each; an item bigger than that is a window alone)."""
    window, rows = [], 0
    for item in items:
        n = size(item)
        if window and rows + n > WINDOW_ROWS:
            yield window
            window, rows = [], 0
        window.append(item)
        rows += n
    if window:
        yield window


def _fetch_window(fetcher: "Fetcher", located: list[tuple[pa.Array, pa.Array]]):
    """The fetched columns of each (paths, rows) of ``located``, fetched in
    one go (one take per file: each touched block decompressed once)."""
    if len(located) == 1:
        return [fetcher.fetch(*located[0])]
    fetched = fetcher.fetch(pa.concat_arrays([p for p, _ in located]),
                            pa.concat_arrays([r for _, r in located]))
    out, start = [], 0
    for paths, _ in located:
        out.append([a.slice(start, len(paths)) for a in fetched])
        start += len(paths)
    return out


class LookupBatches(Shipped):   # Shipped: a worker without rowformat names its Python
    """The mapInArrow function: input batches plus the looked-up columns.
    ``locate(batch)`` gives each input row's (path, row number)."""

    def __init__(self, fetcher: Fetcher, locate, out_names: list[str]):
        self.fetcher = fetcher
        self.locate = locate
        self.out_names = out_names

    def __call__(self, batches):
        for window in _windows(batches, len):
            fetched = _fetch_window(self.fetcher, [self.locate(b) for b in window])
            for b, columns in zip(window, fetched):
                yield pa.RecordBatch.from_arrays(list(b.columns) + columns,
                                                 names=b.schema.names + self.out_names)


class PathAndRow:
    """locate() of :func:`lookup`: the two columns that hold them."""

    def __init__(self, path_col: str, row_col: str):
        self.path_col = path_col
        self.row_col = row_col

    def __call__(self, batch: pa.RecordBatch) -> tuple[pa.Array, pa.Array]:
        return batch.column(self.path_col), batch.column(self.row_col)


def _int(big) -> int:
    """A Scala BigInt through py4j (an int, or an object)."""
    return big if isinstance(big, int) else int(big.toString())


def _collect_small(df, max_rows: int | None):
    """``df``'s rows as an Arrow table when they are few, else None.

    Few: Spark's plan statistics (no job) put ``df`` at most LOCAL_MAX_BYTES
    and, when they count rows, at most ``max_rows`` rows; the collected table
    (one JVM-only job, ``toArrow``) then holds at most ``max_rows``. When the
    statistics do not know the size (a DataFrame of a Python list or an RDD,
    a Python data source), only an explicit ``max_rows`` collects, and at
    most ``max_rows + 1`` rows of it (``limit``)."""
    explicit = max_rows is not None
    max_rows = LOCAL_MAX_ROWS if max_rows is None else int(max_rows)
    if max_rows <= 0:
        return None
    try:
        stats = df._jdf.queryExecution().optimizedPlan().stats()
        size = _int(stats.sizeInBytes())
        counted = stats.rowCount()
        rows = _int(counted.get()) if counted.isDefined() else None
        unknown = size >= df.sparkSession._jsparkSession.sessionState().conf() \
            .defaultSizeInBytes()
    except Exception:            # Spark Connect (no _jdf), or statistics Spark cannot give
        return None
    if rows is not None and rows > max_rows:
        return None
    if unknown:
        if not explicit:
            return None
        df = df.limit(max_rows + 1)
    elif size > LOCAL_MAX_BYTES:
        return None
    try:
        table = df.toArrow()
    except Exception:            # a column type Arrow cannot carry: the distributed path
        return None
    return table if table.num_rows <= max_rows else None


def _map_lookup(df, what: str, row_type: RowType, columns, prefix: str, locate,
                local_max_rows: int | None, settings: dict, local=None):
    """``df`` through LookupBatches: the looked-up ``columns`` appended as
    ``prefix`` + name, nullable. When ``df`` is small (``local``, or
    _collect_small finds it so) the rows are looked up on the driver, at
    this call, and the result is a DataFrame of local data: the same
    LookupBatches over the collected batches, and no Python worker runs."""
    from pyspark.sql.types import StructField, StructType
    columns = list(row_type.names if columns is None else columns)
    fields = _spark_fields(row_type, columns)
    out_names = [prefix + c for c in columns]
    clash = set(out_names) & set(df.columns)
    if clash:
        raise SchemaError(f"{what}: columns {sorted(clash)} exist in the input; pass prefix=")
    out_schema = StructType(df.schema.fields + [StructField(o, f.dataType, True)
                                                for o, f in zip(out_names, fields.fields)])
    fetcher = Fetcher(row_type, columns, fields.json(), settings)
    run = LookupBatches(fetcher, locate, out_names)
    if local is None:
        local = _collect_small(df, local_max_rows)
    if local is not None:
        out = list(run(iter(local.to_batches())))
        if not out:
            return df.sparkSession.createDataFrame([], out_schema)
        return df.sparkSession.createDataFrame(pa.Table.from_batches(out), out_schema)
    from .preflight import check_workers
    check_workers(df.sparkSession)
    return df.mapInArrow(run, out_schema)


class LookupColumn(Shipped):
    """The arrow_udf function (iterator form, so that a task's batches are
    looked up together): (paths, rows) -> a struct of the columns."""

    def __init__(self, fetcher: Fetcher):
        self.fetcher = fetcher

    def __call__(self, pairs):
        for window in _windows(((_array(p), _array(r)) for p, r in pairs), lambda pr: len(pr[0])):
            for (paths, rows), arrays in zip(window, _fetch_window(self.fetcher, window)):
                mask = pc.or_(paths.is_null(), rows.is_null())
                yield pa.StructArray.from_arrays(arrays, names=self.fetcher.columns, mask=mask)


def _array(a) -> pa.Array:
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _spark_fields(schema: RowType, columns):
    from pyspark.sql.types import StructField, StructType
    from .spark_types import to_spark_schema
    spark = to_spark_schema(schema)
    for c in columns:
        if c not in spark.names:
            raise SchemaError(f"no column {c!r} to look up; the schema is [{schema}]")
    # Looked-up values are nullable whatever the file says: a null path or row gives nulls.
    return StructType([StructField(c, spark[c].dataType, True) for c in columns])


def _schema_from_data(df, path_col, settings):
    first = df.where(df[path_col].isNotNull()).select(path_col).limit(1).collect()
    return _schema_of_path(first[0][0] if first else None, path_col, settings)


def _schema_of_path(path, path_col, settings):
    if path is None:
        raise SchemaError(f"lookup: column {path_col!r} holds no path to take a schema from; "
                          f"pass schema=")
    root = _table_root(path, settings)
    if root is None:
        raise SchemaError(f"lookup: {path} is not in a Paimon table, so it has no "
                          f"stored schema; pass schema= (Paimon schema text)")
    return _table_file_schema(root, settings)


def _first_path(table: pa.Table, path_col: str):
    paths = table.column(path_col).drop_null()
    return paths[0].as_py() if len(paths) else None


def lookup(df, path_col: str, row_col: str, columns=None, *, schema=None, prefix: str = "",
           local_max_rows: int | None = None, storage_options: dict | None = None):
    """``df`` with the rows at (``df[path_col]``, ``df[row_col]``) appended
    as columns (``prefix`` + name), through ``mapInArrow``; or, when ``df``
    holds at most ``local_max_rows`` rows (default LOCAL_MAX_ROWS, 10,000;
    0: never), on the driver at this call (see docs/spark.md).

    ``schema``: the files' Paimon schema (RowType, text) or a Paimon append
    table directory; by default the table holding the first path in ``df``
    (one small Spark job). ``columns``: the columns to fetch (default all).
    ``storage_options``: the store's settings for paths that are URLs
    (Paimon catalog names, ``s3.endpoint``, ...; see the module's doc)."""
    local = None
    settings = storage_settings(df.sparkSession, storage_options)
    if schema is not None:
        row_type = resolve_schema(schema, settings)
    else:
        local = _collect_small(df, local_max_rows)     # a path to take the schema from
        row_type = (_schema_from_data(df, path_col, settings) if local is None else
                    _schema_of_path(_first_path(local, path_col), path_col, settings))
    return _map_lookup(df, "lookup", row_type, columns, prefix, PathAndRow(path_col, row_col),
                       local_max_rows, settings, local)


def lookup_udf(columns=None, *, schema, storage_options: dict | None = None):
    """A column-wise lookup (``arrow_udf``, Spark 4.1+): call it on a path
    column and a row-number column to get a struct of ``columns``.
    ``storage_options`` as for :func:`lookup` (with the active session's
    S3A settings)."""
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import ArrowUDFType, arrow_udf
    from .preflight import check_active
    check_active()
    settings = storage_settings(SparkSession.getActiveSession(), storage_options)
    row_type = resolve_schema(schema, settings)
    columns = list(row_type.names if columns is None else columns)
    fields = _spark_fields(row_type, columns)
    with warnings.catch_warnings():
        # pyspark prefers type hints, which an instance (pickled by reference,
        # so the worker's reader cache is the module's) cannot carry
        warnings.simplefilter("ignore", UserWarning)
        return arrow_udf(LookupColumn(Fetcher(row_type, columns, fields.json(), settings)),
                         fields, ArrowUDFType.SCALAR_ITER)


# ---------------------------------------------------------------- by _ROW_ID

class RowIdColumn:
    """locate() of :func:`lookup_row_ids`: the ids of one column, routed."""

    def __init__(self, router: tb.RowIdRouter, id_col: str):
        self.router = router
        self.id_col = id_col

    def __call__(self, batch: pa.RecordBatch) -> tuple[pa.Array, pa.Array]:
        return self.router.route(batch.column(self.id_col))


def lookup_row_ids(df, table: str, columns=None, *, row_id_col: str = "_ROW_ID",
                   prefix: str = "", snapshot_id: int | None = None,
                   local_max_rows: int | None = None, storage_options: dict | None = None):
    """``df`` with the rows of the Paimon table at ``table`` whose
    ``_ROW_ID`` is ``df[row_id_col]`` appended as columns (``prefix`` +
    name); nulls for a null id or one the snapshot does not hold.

    The table needs ``row-tracking.enabled``. The driver routes ids to data
    files through the snapshot's file metadata (each file's first row id
    and row count), and each id is one block read of its file
    (``RowFileReader.take``, through the worker's cached readers). Reads the
    latest snapshot, or ``snapshot_id``. When ``df`` holds at most
    ``local_max_rows`` rows (default LOCAL_MAX_ROWS, 10,000; 0: never) the
    rows are read on the driver at this call, and the result is a DataFrame
    of local data (see docs/spark.md). ``table`` is a directory or a URL
    (``storage_options`` as for :func:`lookup`)."""
    from .options import for_path, normalize_path
    path = normalize_path(table)
    settings = for_path(path, storage_settings(df.sparkSession, storage_options))
    # the plan and the files read agree
    t, _ = tb.pin(path, snapshot_id=snapshot_id, storage_options=settings)
    router = tb.RowIdRouter.from_table(t, path)
    if row_id_col not in df.columns:
        raise SchemaError(f"lookup_row_ids: no column {row_id_col!r} in the input")
    return _map_lookup(df, "lookup_row_ids", tb.row_type(t), columns, prefix,
                       RowIdColumn(router, row_id_col), local_max_rows,
                       router.storage_options or {})
