"""Data files written with acceleration are byte-identical to RowFileWriter's
for the same rows, and their decompressed blocks equal stock pypaimon's.
Everything else in the table (manifests, snapshots, file metadata) is
pypaimon's own."""
import io
import os

import pyarrow as pa
import pytest
import zstandard

import rowformat.paimon as rp
from rowformat import RowFileReader, RowFileWriter
from rowformat.paimon import _field_types, _writer

from ._tables import read, typed_table, write


def _blocks(path, schema):
    """The decompressed blocks of a .row file."""
    with RowFileReader(path, schema) as r:
        idx = r.block_index
        offsets = idx.offsets.tolist()
        csizes = idx.compressed_sizes.tolist()
        usizes = idx.uncompressed_sizes.tolist()
    data = open(path, "rb").read()
    d = zstandard.ZstdDecompressor()
    return [d.decompress(data[o:o + c], max_output_size=u) for o, c, u in zip(offsets, csizes, usizes)]


def _file_schema(table):
    return _field_types.row_type(table.fields)


@pytest.mark.parametrize("pk", [False, True])
def test_data_files_are_rowfilewriter_bytes_and_stock_blocks(wh, tmp_path, pk):
    data = typed_table(4000, seed=7)
    create = {"primary_keys": ["id"], "options": {"bucket": 1}} if pk else {}
    stock_t = wh.create("stock", data.schema, **create)
    fast_t = wh.create("fast", data.schema, **create)
    write(stock_t, data)
    with rp.accelerated():
        write(fast_t, data)
    [stock_file] = wh.data_files("stock")
    [fast_file] = wh.data_files("fast")

    # the file's Paimon fields: for a primary-key table the key, sequence and kind fields first
    import pypaimon.read.split_read as split_read
    seen = []

    class Spy(split_read.FormatRowReader):
        def __init__(self, file_io, file_path, read_fields, full_fields, *a, **kw):
            seen.append(full_fields)
            super().__init__(file_io, file_path, read_fields, full_fields, *a, **kw)
    orig = split_read.FormatRowReader
    split_read.FormatRowReader = Spy
    try:
        read(fast_t)
    finally:
        split_read.FormatRowReader = orig
    fields = seen[0]
    schema = _field_types.row_type(fields)

    # the rows of the accelerated file, rewritten by RowFileWriter: the same bytes
    with RowFileReader(fast_file, schema) as r:
        rows = r.read()
    again = tmp_path / "again.row"
    with RowFileWriter(again, schema) as w:
        w.write(rows)
    assert open(fast_file, "rb").read() == again.read_bytes()

    # pypaimon's own file: other frames (with a content size), the same blocks
    assert open(stock_file, "rb").read() != open(fast_file, "rb").read()
    stock_blocks, fast_blocks = _blocks(stock_file, schema), _blocks(fast_file, schema)
    assert len(fast_blocks) > 3
    assert stock_blocks == fast_blocks

    # the metadata pypaimon recorded for each file is the same but for the file's name and size
    def meta(t):
        plan = t.new_read_builder().new_scan().plan()
        [split] = plan.splits()
        [f] = split.files
        return f
    ms, mf = meta(stock_t), meta(fast_t)
    assert (ms.row_count, ms.min_key, ms.max_key, ms.min_sequence_number, ms.max_sequence_number,
            ms.level) == (mf.row_count, mf.min_key, mf.max_key, mf.min_sequence_number,
                          mf.max_sequence_number, mf.level)
    assert ms.value_stats.min_values == mf.value_stats.min_values
    assert ms.value_stats.max_values == mf.value_stats.max_values
    assert ms.value_stats.null_counts == mf.value_stats.null_counts
    assert mf.file_size == os.path.getsize(fast_file)


def test_stream_writer_writes_rowfilewriter_bytes(tmp_path):
    """The FormatRowWriter replacement non-local FileIOs use."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    data = typed_table(3000, seed=2)
    fields = PyarrowFieldParser.to_paimon_schema(data.schema)
    out = io.BytesIO()
    w = _writer.StreamRowWriter(out, fields, zstd_level=3)
    w.write_table(data)
    w.close()
    ref = tmp_path / "ref.row"
    with RowFileWriter(ref, _field_types.row_type(fields), zstd_level=3) as rw:
        rw.write(data)
    assert out.getvalue() == ref.read_bytes()
    assert not out.closed   # like pypaimon's writer: the FileIO closes its stream


def test_local_write_row_matches_stream_writer_and_stock_blocks(tmp_path):
    from pypaimon.filesystem.local_file_io import LocalFileIO

    data = typed_table(2500, seed=5)
    io_ = LocalFileIO()
    stock_path = str(tmp_path / "stock.row")
    io_.write_row(stock_path, data, zstd_level=1)
    rp.accelerate()
    fast_path = str(tmp_path / "sub" / "fast.row")       # parent created as pypaimon does
    io_.write_row(fast_path, data, zstd_level=1)
    rp.restore()
    from pypaimon.schema.data_types import PyarrowFieldParser
    schema = _field_types.row_type(PyarrowFieldParser.to_paimon_schema(data.schema))
    assert _blocks(stock_path, schema) == _blocks(fast_path, schema)
    with RowFileReader(fast_path, schema) as r:
        assert r.read().to_pydict() == data.cast(r.arrow_schema).to_pydict()


def test_write_error_is_pypaimons_and_leaves_no_file(tmp_path):
    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.schema.data_types import AtomicType, DataField

    io_ = LocalFileIO()
    path = str(tmp_path / "bad.row")
    fields = [DataField(0, "x", AtomicType("INT NOT NULL"))]
    rp.accelerate()
    with pytest.raises(RuntimeError, match="Failed to write row file"):
        io_.write_row(path, pa.table({"x": pa.array([1, None], pa.int32())}), fields=fields)
    assert not os.path.exists(path)
    assert os.listdir(tmp_path) == []
