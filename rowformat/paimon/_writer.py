"""The ``.row`` data-file writes of pypaimon's FileIOs while acceleration is on.

pypaimon 2.1.0 writes a ``.row`` data file (and a data-evolution table's
``.row`` sidecar) with ``file_io.write_row(path, table, fields=None,
zstd_level=...)``: ``LocalFileIO``, ``PyArrowFileIO`` and
``HdfsNativeFileIO`` each run pypaimon's pure-Python ``FormatRowWriter`` over
their output stream; the other FileIOs delegate to one of these. Two points
are patched:

* ``LocalFileIO.write_row`` writes the file with :class:`RowFileWriter` at
  its local path (atomically: under a temporary name, renamed on success);
* ``FormatRowWriter`` in ``pypaimon.write.writer.format_row_writer`` (the
  name the other ``write_row`` s import when they run) becomes
  :class:`StreamRowWriter`, which writes with :class:`RowFileWriter` to a
  local temporary file and copies the bytes to the FileIO's output stream.

Either way the file's bytes are what RowFileWriter writes for the rows: Paimon
Java's layout and ZSTD frames. The file schema is the ``fields`` given, or,
as pypaimon does, ``PyarrowFieldParser.to_paimon_schema(data.schema)``.
"""
from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from typing import Any, List, Optional

import pyarrow as pa

from ..row.writer import RowFileWriter
from . import _field_types

DEFAULT_BLOCK_SIZE = 65536
COPY_CHUNK = 1 << 20


def _file_fields(data: pa.Table, fields: Optional[List[Any]]) -> List[Any]:
    if fields is None:
        parser = importlib.import_module("pypaimon.schema.data_types").PyarrowFieldParser
        fields = parser.to_paimon_schema(data.schema)
    return list(fields)


def _as_table(data) -> pa.Table:
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    return data


def write_file(path: str, data, fields: Optional[List[Any]], zstd_level: int,
               block_size: int = DEFAULT_BLOCK_SIZE) -> None:
    """Writes ``data``'s columns named by ``fields`` as a ``.row`` file at the local ``path``."""
    data = _as_table(data)
    fields = _file_fields(data, fields)
    schema = _field_types.row_type(fields)
    with RowFileWriter(path, schema, block_size=block_size, zstd_level=zstd_level) as w:
        w.write(data.select([f.name for f in fields]))


def local_write_row(self, path: str, data, fields=None, zstd_level: int = 1, **kwargs):
    """``LocalFileIO.write_row`` through RowFileWriter (pypaimon's errors and cleanup)."""
    try:
        file_path = self._to_file(path)
        parent = file_path.parent
        if parent and not parent.exists():
            parent.mkdir(parents=True, exist_ok=True)
        write_file(os.fspath(file_path), data, fields, zstd_level)
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
    copied to ``output_stream`` on ``close()``."""

    def __init__(self, output_stream, fields: List[Any], block_size: int = DEFAULT_BLOCK_SIZE,
                 zstd_level: int = 1):
        self._out = output_stream
        self._fields = list(fields)
        self._block_size = int(block_size)
        self._zstd_level = int(zstd_level)
        self._dir = tempfile.mkdtemp(prefix="rowformat-paimon-")
        self._path = os.path.join(self._dir, "data.row")
        self._writer: Optional[RowFileWriter] = RowFileWriter(
            self._path, _field_types.row_type(self._fields), block_size=self._block_size,
            zstd_level=self._zstd_level)

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
            with open(self._path, "rb") as f:
                shutil.copyfileobj(f, self._out, COPY_CHUNK)
            self._out.flush()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)

    def _discard(self) -> None:
        writer, self._writer = self._writer, None
        try:
            if writer is not None:
                writer.abort()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)

    def __del__(self):
        if getattr(self, "_writer", None) is not None:
            self._discard()
