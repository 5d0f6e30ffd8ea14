"""Accelerated ``.row`` writes cut blocks at the table's ``file.block-size``
(65536 bytes when unset) by Paimon Java's rule, data files and row sidecars,
local and stream FileIOs alike; a value RowFileWriter cannot take is a
TableOptionError; stock pypaimon (which ignores the option) is unchanged."""
import os

import numpy as np
import pyarrow as pa
import pytest

import rowformat
import rowformat.paimon as rp
from rowformat import RowFileReader, RowFileWriter
from rowformat.errors import TableOptionError
from rowformat.paimon import _field_types, _writer

from ._tables import read, sort, typed_table, write
from .test_bytes import _blocks

N = 6000


def _plain(n):
    """Columns pyarrow's Parquet writer takes (typed_table's lists of nulls it refuses)."""
    return pa.table({"id": pa.array(range(n), pa.int64()),
                     "s": [f"value {i}" * (i % 7) for i in range(n)],
                     "f": pa.array([i / 3 for i in range(n)], pa.float64())})


def _rows_per_block(path, num_rows):
    starts = rowformat.read_metadata(path).block_index.row_starts.tolist()
    return np.diff(starts + [num_rows]).tolist()


def _assert_java_cuts(path, schema, threshold):
    """Each block ends at the first row that brings row bytes + 4 * rows + 4
    to ``threshold`` (the last block may end short of it)."""
    blocks = _blocks(path, schema)
    for i, b in enumerate(blocks):
        n = int(np.frombuffer(b[-4:], "<i4")[0])
        starts = np.frombuffer(b[len(b) - 4 - 4 * n:-4], "<i4")
        last_row = len(b) - 4 - 4 * n - int(starts[-1])
        assert len(b) - last_row - 4 < threshold, f"block {i} was not cut at its threshold"
        if i < len(blocks) - 1:
            assert len(b) >= threshold, f"block {i} was cut short"


def _assert_blocks(path, schema, block_size, num_rows, tmp_path):
    """``path`` is what RowFileWriter(block_size=block_size) writes for its
    rows, cut by Java's rule; returns its rows per block."""
    with RowFileReader(path, schema) as r:
        rows = r.read()
    ref = tmp_path / f"ref-{block_size}.row"
    with RowFileWriter(ref, schema, block_size=block_size) as w:
        w.write(rows)
    counts = _rows_per_block(path, num_rows)
    assert counts == _rows_per_block(ref, num_rows)
    assert open(path, "rb").read() == ref.read_bytes()
    _assert_java_cuts(path, schema, block_size)
    return counts


def _assert_values(table, data):
    """Both readers give back exactly what was written."""
    with rp.accelerated():
        fast = sort(read(table))
    for got in (fast, sort(read(table))):
        for name in data.column_names:
            assert got.column(name).to_pylist() == data.column(name).to_pylist(), name


@pytest.mark.parametrize("option, block_size", [
    (None, 65536), ("8kb", 8192), ("64 kb", 65536), ("1mb", 1 << 20), ("20000", 20000),
    ("2147483647", 2**31 - 1)])
def test_data_file_blocks_are_the_tables_block_size(wh, tmp_path, option, block_size):
    data = typed_table(N, seed=3)
    t = wh.create("t", data.schema, options={} if option is None else {"file.block-size": option})
    with rp.accelerated():
        write(t, data)
    assert _writer._block_size.get() == _writer.DEFAULT_BLOCK_SIZE   # only for the write
    [f] = wh.data_files("t")
    counts = _assert_blocks(f, _field_types.row_type(t.fields), block_size, N, tmp_path)
    # about 1 MB of rows: many blocks of 8 KiB (131 under pypaimon 2.1.0), 1 or 2 of 1 MiB
    assert len(counts) > 100 if block_size == 8192 else 0 < len(counts) < 60
    _assert_values(t, data)


def test_8kb_blocks_through_a_stream_file_io(wh, tmp_path):
    """A FileIO whose write_row is pypaimon's stream one (PyArrowFileIO's):
    its FormatRowWriter is StreamRowWriter, with the table's block size."""
    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.filesystem.pyarrow_file_io import PyArrowFileIO

    class StreamFileIO(LocalFileIO):
        write_row = PyArrowFileIO.write_row

    data = typed_table(N, seed=4)
    t = wh.create("t", data.schema, options={"file.block-size": "8kb"})
    t.file_io.__class__ = StreamFileIO
    with rp.accelerated():
        write(t, data)
    [f] = wh.data_files("t")
    assert len(_assert_blocks(f, _field_types.row_type(t.fields), 8192, N, tmp_path)) > 30
    _assert_values(t, data)


def test_8kb_blocks_in_row_sidecars_of_a_parquet_table(wh, tmp_path):
    from pypaimon.schema.data_types import PyarrowFieldParser

    data = _plain(N)
    t = wh.create("t", data.schema, options={
        "file.format": "parquet", "file.block-size": "8kb", "row-tracking.enabled": "true",
        "data-evolution.enabled": "true", "data-evolution.row-sidecar.enabled": "true"})
    with rp.accelerated():
        write(t, data)
    [parquet] = wh.data_files("t", ".parquet")
    [sidecar] = wh.data_files("t")
    assert sidecar == parquet + ".row"
    schema = _field_types.row_type(PyarrowFieldParser.to_paimon_schema(data.schema))
    assert len(_assert_blocks(sidecar, schema, 8192, N, tmp_path)) > 30


@pytest.mark.parametrize("option", ["0", "2gb", "3 gb", "2147483648", "abc", "-1", "8 parsecs"])
def test_a_block_size_rowfilewriter_cannot_take_is_refused(wh, option):
    data = typed_table(100, seed=6)
    t = wh.create("t", data.schema, options={"file.block-size": option})
    with rp.accelerated():
        with pytest.raises(TableOptionError, match=rf"file\.block-size = '{option}' .*"
                                                   r"from 1 byte to 2147483647 bytes"):
            write(t, data)
    assert wh.data_files("t") == []
    assert not os.path.exists(os.path.join(wh.root, "db.db", "t", "bucket-0")) \
        or os.listdir(os.path.join(wh.root, "db.db", "t", "bucket-0")) == []
    # stock pypaimon ignores the option
    write(t, data)
    _assert_values(t, data)


def test_tables_without_row_files_do_not_check_it(wh):
    data = _plain(100)
    t = wh.create("t", data.schema, options={"file.format": "parquet", "file.block-size": "3gb"})
    with rp.accelerated():
        write(t, data)
    assert len(wh.data_files("t", ".parquet")) == 1
    _assert_values(t, data)


def test_stock_writes_ignore_it_and_restore_puts_stock_back(wh, tmp_path):
    from pypaimon.write.writer.data_writer import DataWriter

    stock = DataWriter.__dict__["_write_data_to_file"]
    with rp.accelerated():
        assert DataWriter.__dict__["_write_data_to_file"] is not stock
    assert DataWriter.__dict__["_write_data_to_file"] is stock

    data = typed_table(N, seed=8)
    t = wh.create("t", data.schema, options={"file.block-size": "8kb"})
    write(t, data)
    [f] = wh.data_files("t")
    schema = _field_types.row_type(t.fields)
    with RowFileReader(f, schema) as r:
        rows = r.read()
    ref = tmp_path / "ref.row"
    with RowFileWriter(ref, schema, block_size=65536) as w:
        w.write(rows)
    assert _blocks(f, schema) == _blocks(ref, schema)     # pypaimon's 64 KiB blocks
    _assert_values(t, data)


def test_rowformats_table_creation_refuses_it_before_making_the_table(tmp_path):
    """rowformat's own create_table (the Spark source's and the CLI's)
    checks the option when the table's files are .row, so a bad value fails
    at the call, not in every write task later; no table is left behind."""
    from rowformat.paimon import tables as tb
    s = rowformat.schema("id BIGINT, s STRING")
    path = str(tmp_path / "t")
    with pytest.raises(TableOptionError, match=r"file\.block-size = '3 gb'"):
        tb.create_table(path, s, options={"file.block-size": "3 gb"})
    assert not tb.is_table(path)
    t = tb.create_table(path, s, options={"file.block-size": "8kb"})
    assert t.options.file_block_size().get_bytes() == 8192
    parquet = tb.create_table(str(tmp_path / "p"), s,
                              options={"file.format": "parquet", "file.block-size": "3 gb"})
    assert parquet.options.file_block_size().get_bytes() == 3 << 30
