"""The ``.row`` data-file writes of pypaimon's FileIOs while acceleration is on.

pypaimon 2.1.0 writes a ``.row`` data file (and a data-evolution table's
``.row`` sidecar) with ``file_io.write_row(path, table, fields=None,
zstd_level=...)``: ``LocalFileIO``, ``PyArrowFileIO`` and
``HdfsNativeFileIO`` each run pypaimon's pure-Python ``FormatRowWriter`` over
their output stream; the other FileIOs delegate to one of these. Three points
are patched:

* ``LocalFileIO.write_row`` writes the file with :class:`RowFileWriter` at
  its local path (atomically: under a temporary name, renamed on success);
* ``FormatRowWriter`` in ``pypaimon.write.writer.format_row_writer`` (the
  name the other ``write_row`` s import when they run) becomes
  :class:`StreamRowWriter`, which writes with :class:`RowFileWriter` to a
  local temporary file and copies the bytes to the FileIO's output stream;
* ``DataWriter._write_data_to_file`` (which writes a table's data file and
  its ``.row`` sidecar) runs pypaimon's with the table's ``file.block-size``
  in a context variable, which the two writers above use as their block
  size: pypaimon's ``write_row`` passes none, so stock pypaimon always cuts
  64 KiB blocks, where Paimon Java cuts blocks of the table's option. For a
  ``.row`` data file it also puts a :class:`StatsSink` in a context
  variable: the first file written in the call (the data file; a sidecar
  comes after it) collects the value statistics of the table's options
  while it is encoded (:mod:`._stats`), and they replace the ones pypaimon
  put in the file's ``DataFileMeta`` (none, unless ``metadata.stats-mode``
  is exactly ``full``, and then untruncated).

Either way the file's bytes are what RowFileWriter writes for the rows: Paimon
Java's layout, block cuts and ZSTD frames. The file schema is the ``fields`` given, or,
as pypaimon does, ``PyarrowFieldParser.to_paimon_schema(data.schema)``.
"""
from __future__ import annotations

import importlib
import os
import tempfile
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, List, Mapping, Optional

import pyarrow as pa

from ..errors import TableOptionError
from ..io.local import copy_into, remove_tree
from ..row.writer import DEFAULT_BLOCK_SIZE, RowFileWriter
from . import _field_types, _stats

COPY_CHUNK = 1 << 20
BLOCK_SIZE_OPTION = "file.block-size"
MAX_BLOCK_SIZE = 2**31 - 1      # RowFileWriter's bound (Java casts the option to an int)

# The block size of the table whose data file a DataWriter is writing
# (write_data_to_file sets it for the call); DEFAULT_BLOCK_SIZE outside one.
_block_size: ContextVar[int] = ContextVar("rowformat_paimon_block_size",
                                          default=DEFAULT_BLOCK_SIZE)


def table_block_size(options: Any) -> int:
    """The ``.row`` block size of a table's pypaimon ``CoreOptions``:
    ``file.block-size`` in bytes, parsed as pypaimon (and Paimon Java) parse
    a memory size, DEFAULT_BLOCK_SIZE when unset; :class:`TableOptionError`
    for a value RowFileWriter cannot take."""
    raw = (getattr(getattr(options, "options", None), "data", None) or {}).get(BLOCK_SIZE_OPTION)
    try:
        size = options.file_block_size()
    except ValueError as e:
        raise TableOptionError(_bad_block_size(raw, str(e))) from e
    if size is None:
        return DEFAULT_BLOCK_SIZE
    n = size.get_bytes()
    if not 1 <= n <= MAX_BLOCK_SIZE:
        raise TableOptionError(_bad_block_size(raw, f"{n} bytes"))
    return n


def _bad_block_size(raw: Any, what: str) -> str:
    return (f"table option {BLOCK_SIZE_OPTION} = {raw!r} ({what}): the block size of .row "
            f"files must be from 1 byte to {MAX_BLOCK_SIZE} bytes (2 GiB - 1), "
            f"e.g. '8kb', '64 kb', '1mb' or '65536'")


class StatsSink:
    """The statistics of the ``.row`` data file one ``_write_data_to_file``
    call writes, for its table's options: taken by the first file written in
    the call (the data file), kept for the call to store in the file's
    ``DataFileMeta``."""

    def __init__(self, options: Mapping[str, str], primary_key: bool):
        _stats.check_options(options)
        self.options = options
        self.primary_key = primary_key
        self.dense = _stats.dense_store(options)
        self.taken = False
        self.stats: Optional[_stats.FileStats] = None
        self.fields: list = []          # pypaimon DataFields of the kept value columns
        self.key_stats: Optional[_stats.FileStats] = None

    def take(self, fields: List[Any]) -> Optional["_FileStatsPlan"]:
        """The plan of the first file written in the call, None for the rest."""
        if self.taken:
            return None
        self.taken = True
        return _FileStatsPlan(self, fields)


class _FileStatsPlan:
    """One file's statistics: the columns and modes, then what they became.

    A primary-key file is ``[_KEY_<pk>..., _SEQUENCE_NUMBER, _VALUE_KIND,
    values...]``: its value statistics are the values', its key statistics
    the ``_KEY_`` columns' (system fields: truncate(128) unless they have
    their own mode), stored full width as Java's ``toBinaryAllMode``."""

    def __init__(self, sink: StatsSink, fields: List[Any]):
        self.sink, self.fields = sink, fields
        names = [f.name for f in fields]
        if sink.primary_key:
            self.keys = [i for i, n in enumerate(names) if n.startswith(_stats.KEY_PREFIX)]
            self.values = [i for i, n in enumerate(names)
                           if not n.startswith(_stats.KEY_PREFIX)
                           and n not in ("_SEQUENCE_NUMBER", "_VALUE_KIND")]
        else:
            self.keys, self.values = [], list(range(len(names)))
        self.key_modes = _stats.column_modes(sink.options, [names[i] for i in self.keys],
                                             level0=True)
        self.modes = _stats.column_modes(sink.options, [names[i] for i in self.values],
                                         level0=sink.primary_key)

    def encoder_modes(self) -> Optional[list[str]]:
        """RowFileWriter's ``stats``; None when no column has any (no cost)."""
        out = ["none"] * len(self.fields)
        for i, mode in [*zip(self.values, self.modes), *zip(self.keys, self.key_modes)]:
            out[i] = ("none", "counts", "min-max")[mode.encode]
        return out if any(m != "none" for m in out) else None

    def _of(self, schema, raw: list, columns: list[int], modes: list, dense: bool):
        return _stats.file_stats([schema.fields[i].type for i in columns],
                                 [schema.fields[i].name for i in columns], modes,
                                 [raw[i] for i in columns], dense)

    def record(self, schema, raw: Optional[list]) -> None:
        raw = raw if raw is not None else [None] * len(schema.fields)
        stats = self._of(schema, raw, self.values, self.modes, self.sink.dense)
        self.sink.stats = stats
        self.sink.fields = [self.fields[self.values[k]] for k in stats.kept]
        if self.keys:
            self.sink.key_stats = self._of(schema, raw, self.keys, self.key_modes, False)


_stats_sink: ContextVar[Optional[StatsSink]] = ContextVar("rowformat_paimon_stats",
                                                          default=None)


def _table_options(options: Any) -> Mapping[str, str]:
    return getattr(getattr(options, "options", None), "data", None) or {}


def _store_stats(meta: Any, sink: StatsSink, key_fields: List[Any]) -> None:
    """Puts ``sink``'s statistics in pypaimon's ``DataFileMeta`` ``meta``
    (``key_fields``: the writer's trimmed primary-key fields)."""
    from pypaimon.manifest.schema.simple_stats import SimpleStats
    from pypaimon.table.row.binary_row import BinaryRow
    stats = sink.stats
    assert stats is not None
    meta.value_stats = SimpleStats(BinaryRow(stats.min_values, sink.fields),
                                   BinaryRow(stats.max_values, sink.fields),
                                   stats.null_counts)
    meta.value_stats_cols = stats.columns
    keys = sink.key_stats
    if keys is not None and len(keys.kept) == len(key_fields):
        meta.key_stats = SimpleStats(BinaryRow(keys.min_values, key_fields),
                                     BinaryRow(keys.max_values, key_fields), keys.null_counts)


def _count_retractions(meta: Any, data: Any) -> None:
    """A key-value data file's retractions (UPDATE_BEFORE, DELETE) in its
    ``DataFileMeta``, as Java's ``deleteRowCount``: pypaimon 2.1.0 puts 0,
    so its readers and Java's take a one-file split holding a DELETE as
    raw-convertible and return the deleted row as live."""
    if "_VALUE_KIND" not in data.column_names:
        return              # (an append table's file)
    kinds = data.column("_VALUE_KIND").to_numpy(zero_copy_only=False)
    meta.delete_row_count = int(((kinds == 1) | (kinds == 3)).sum())


class _ValueStatsOff:
    """A DataWriter's ``CoreOptions`` whose ``metadata_stats_enabled()`` is
    False, for the call whose value statistics rowformat collects: under
    ``metadata.stats-mode=full`` pypaimon would compute them again in Python
    (``pyarrow.compute`` over every column, untruncated) only to have them
    replaced. Its key statistics (and their not-null check) stay."""

    def __init__(self, options: Any):
        self._options = options

    def __getattr__(self, name: str) -> Any:
        return getattr(self._options, name)

    def metadata_stats_enabled(self, default=None) -> bool:
        return False


@contextmanager
def _writing_row_files(writer: Any, primary_key: bool, with_stats: bool,
                       stats_off: bool) -> Iterator[Optional[StatsSink]]:
    """While a pypaimon writer writes its ``.row`` files: the table's block
    size in effect (checked first) and, ``with_stats``, the sink of their
    value statistics; ``stats_off``: pypaimon computes none of its own."""
    token = _block_size.set(table_block_size(writer.options))
    try:
        sink = StatsSink(_table_options(writer.options), primary_key) if with_stats else None
    except BaseException:
        _block_size.reset(token)
        raise
    stoken = _stats_sink.set(sink)
    options = writer.options
    if sink is not None and stats_off:
        writer.options = _ValueStatsOff(options)
    try:
        yield sink
    finally:
        writer.options = options
        _stats_sink.reset(stoken)
        _block_size.reset(token)


def make_write_data_to_file(stock: Any) -> Any:
    """``DataWriter._write_data_to_file``: pypaimon's, with the table's
    ``.row`` block size in effect for the files it writes (checked only when
    it writes a ``.row`` data file or sidecar, before any file is written)
    and, for a ``.row`` data file, the value statistics of the table's
    options in its ``DataFileMeta`` (:class:`StatsSink`)."""

    def _write_data_to_file(self, data):
        before = len(self.committed_files)
        if self.file_format != "row" and not self._should_write_row_sidecar():
            stock(self, data)
        else:
            # (a changelog file written beside it takes the value stats pypaimon computes)
            with _writing_row_files(self, self.table.is_primary_key_table,
                                    self.file_format == "row",
                                    getattr(self.changelog_producer, "name", "") != "INPUT"
                                    ) as sink:
                stock(self, data)
            if sink is not None and sink.stats is not None and len(self.committed_files) > before:
                _store_stats(self.committed_files[-1], sink,
                             list(self.trimmed_primary_keys_fields))
        if len(self.committed_files) == before + 1:
            _count_retractions(self.committed_files[-1], data)

    _write_data_to_file.__qualname__ = "DataWriter._write_data_to_file"
    return _write_data_to_file


def make_write_normal_data_to_file(stock: Any) -> Any:
    """``_write_normal_data_to_file`` of the writers of tables with BLOB or
    vector columns (the file of their ordinary columns; append tables only):
    as :func:`make_write_data_to_file` does for other tables, the table's
    block size and value statistics for a ``.row`` file."""

    def _write_normal_data_to_file(self, data):
        if self.file_format != "row":
            return stock(self, data)
        with _writing_row_files(self, False, True, True) as sink:
            meta = stock(self, data)
        if meta is not None and sink is not None and sink.stats is not None:
            # pypaimon's write_row call passes no fields: the table's, by name
            columns = {f.name: f for f in self.normal_columns}
            sink.fields = [columns.get(f.name, f) for f in sink.fields]
            _store_stats(meta, sink, [])
            # the columns named, as pypaimon names them for this file (None
            # would mean every column of the table, BLOBs included)
            meta.value_stats_cols = [f.name for f in sink.fields]
        return meta

    _write_normal_data_to_file.__qualname__ = "CompositeDataWriter._write_normal_data_to_file"
    return _write_normal_data_to_file


def _file_fields(data: pa.Table, fields: Optional[List[Any]]) -> List[Any]:
    if fields is None:
        parser = importlib.import_module("pypaimon.schema.data_types").PyarrowFieldParser
        fields = parser.to_paimon_schema(data.schema)
    return list(fields)


def _as_table(data) -> pa.Table:
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    return data


def _stats_plan(fields: List[Any]) -> Optional[_FileStatsPlan]:
    """The statistics plan of a file written now (None outside a data file's write)."""
    sink = _stats_sink.get()
    return sink.take(fields) if sink is not None else None


def write_file(path: str, data, fields: Optional[List[Any]], zstd_level: int,
               block_size: int = DEFAULT_BLOCK_SIZE) -> None:
    """Writes ``data``'s columns named by ``fields`` as a ``.row`` file at the local ``path``."""
    data = _as_table(data)
    fields = _file_fields(data, fields)
    schema = _field_types.row_type(fields)
    plan = _stats_plan(fields)
    with RowFileWriter(path, schema, block_size=block_size, zstd_level=zstd_level,
                       stats=plan.encoder_modes() if plan is not None else None) as w:
        w.write(data.select([f.name for f in fields]))
    if plan is not None:
        plan.record(schema, w.statistics())


def local_write_row(self, path: str, data, fields=None, zstd_level: int = 1, **kwargs):
    """``LocalFileIO.write_row`` through RowFileWriter (pypaimon's errors and cleanup)."""
    try:
        file_path = self._to_file(path)
        parent = file_path.parent
        if parent and not parent.exists():
            parent.mkdir(parents=True, exist_ok=True)
        write_file(os.fspath(file_path), data, fields, zstd_level, _block_size.get())
    except Exception as e:
        self.delete_quietly(path)
        raise RuntimeError(f"Failed to write row file {path}: {e}") from e


def make_local_write_row(stock: Any) -> Any:
    """``LocalFileIO.write_row`` while acceleration is on (``stock`` is pypaimon's)."""
    local_write_row._rowformat_stock = stock  # type: ignore[attr-defined]
    return local_write_row


def stream_row_writer(stock: Any) -> type:
    """The ``FormatRowWriter`` name while acceleration is on (``stock`` is pypaimon's)."""
    return StreamRowWriter


class StreamRowWriter:
    """pypaimon's ``FormatRowWriter`` interface (``write_table`` then
    ``close``, which flushes but does not close the stream) over
    RowFileWriter: the rows go to a local temporary file, whose bytes are
    copied to ``output_stream`` on ``close()``. Without a ``block_size``, the
    blocks are those of the table being written (see the module's docstring)."""

    def __init__(self, output_stream, fields: List[Any], block_size: Optional[int] = None,
                 zstd_level: int = 1):
        self._out = output_stream
        self._fields = list(fields)
        self._block_size = _block_size.get() if block_size is None else int(block_size)
        self._zstd_level = int(zstd_level)
        self._dir = tempfile.mkdtemp(prefix="rowformat-paimon-")
        self._path = os.path.join(self._dir, "data.row")
        self._schema = _field_types.row_type(self._fields)
        self._stats = _stats_plan(self._fields)
        self._writer: Optional[RowFileWriter] = RowFileWriter(
            self._path, self._schema, block_size=self._block_size, zstd_level=self._zstd_level,
            stats=self._stats.encoder_modes() if self._stats is not None else None)

    def write_table(self, data) -> None:
        assert self._writer is not None, "closed"
        data = _as_table(data)
        try:
            self._writer.write(data.select([f.name for f in self._fields]))
        except BaseException:
            self._discard()
            raise

    def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is None:
            return
        try:
            writer.close()
            copy_into(self._path, self._out, COPY_CHUNK)
            self._out.flush()
            if self._stats is not None:
                self._stats.record(self._schema, writer.statistics())
        finally:
            remove_tree(self._dir)

    def _discard(self) -> None:
        writer, self._writer = self._writer, None
        try:
            if writer is not None:
                writer.abort()
        finally:
            remove_tree(self._dir)

    def __del__(self):
        if getattr(self, "_writer", None) is not None:
            self._discard()
