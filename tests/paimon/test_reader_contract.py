"""The accelerated reader against pypaimon's own FormatRowReader, called
directly with the same arguments: projection by name, missing and system
fields, row_indices, the push-down predicate, batch sizes; reading through a
non-local FileIO's stream; and a broken data file in a table."""
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import rowformat.paimon as rp
from rowformat import CorruptFileError, RowIndexError

from ._tables import read, typed_table, write

from pypaimon.filesystem.local_file_io import LocalFileIO  # noqa: E402
from pypaimon.read.reader.format_row_reader import FormatRowReader as Stock  # noqa: E402
from pypaimon.schema.data_types import PyarrowFieldParser  # noqa: E402
from pypaimon.table.special_fields import SpecialFields  # noqa: E402


def _fast_class():
    rp.accelerate()
    import pypaimon.read.split_read as split_read
    return split_read.FormatRowReader


def _drain(reader):
    batches = []
    try:
        while True:
            b = reader.read_arrow_batch()
            if b is None:
                break
            batches.append(b)
    finally:
        reader.close()
    return batches


@pytest.fixture(scope="module")
def kv_file(tmp_path_factory):
    """A file laid out as a primary-key table's: _KEY_id, _SEQUENCE_NUMBER, _VALUE_KIND, values."""
    data = typed_table(3000, seed=11)
    kv = pa.table([data.column("id"), pa.array(range(3000), pa.int64()),
                   pa.array([0] * 3000, pa.int8())] + data.columns,
                  names=["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND"] + data.column_names)
    fields = PyarrowFieldParser.to_paimon_schema(kv.schema)
    fields[1] = SpecialFields.SEQUENCE_NUMBER
    fields[2] = SpecialFields.VALUE_KIND
    path = str(tmp_path_factory.mktemp("kv") / "kv.row")
    LocalFileIO().write_row(path, kv, fields=fields)
    return path, fields


CASES = [
    dict(read_fields=["id", "s"]),
    dict(read_fields=["s", "_VALUE_KIND", "_KEY_id", "_SEQUENCE_NUMBER", "d_big", "ts0", "vec", "st", "mp"]),
    dict(read_fields=["id", "not_in_file", "_ROW_ID", "tod"]),          # missing: nulls
    dict(read_fields=["not_in_file"]),
    dict(read_fields=[]),
    dict(read_fields=["id", "i32"], predicate=pc.field("i32") > 0),
    dict(read_fields=["id", "f64"], predicate=pc.field("id") < 0),       # nothing passes
    dict(read_fields=["id", "s", "missing"], predicate=pc.field("s").is_valid()),
    dict(read_fields=["id", "s", "ts6"], row_indices=[0, 1, 2, 5, 2999]),
    dict(read_fields=["id", "arr"], row_indices=list(range(100, 2900, 3))),
    dict(read_fields=["id", "d_small"], row_indices=[7, 3, 3, 2000], predicate=pc.field("id") > 3),
    dict(read_fields=["id"], row_indices=[]),
    dict(read_fields=["id", "s"], batch_size=7),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(c["read_fields"])[:40] or "none")
def test_same_rows_and_schema_as_pypaimons_reader(kv_file, case):
    path, fields = kv_file
    fast_cls = _fast_class()
    io_ = LocalFileIO()

    def run(cls):
        return _drain(cls(io_, path, case["read_fields"], fields, case.get("predicate"),
                          batch_size=case.get("batch_size", 1024),
                          row_indices=case.get("row_indices")))
    stock, fast = run(Stock), run(fast_cls)
    if not stock:
        assert not fast
        return
    st, ft = pa.Table.from_batches(stock), pa.Table.from_batches(fast)
    assert ft.schema.equals(st.schema, check_metadata=True)
    assert ft.equals(st)
    assert all(b.num_rows for b in fast)


class _StreamOnlyFileIO:
    """A FileIO that is not LocalFileIO: the reader has to use its input stream."""
    def __init__(self):
        self._local = LocalFileIO()
        self.opened = 0

    def new_input_stream(self, path):
        self.opened += 1
        return self._local.new_input_stream(path)

    def get_file_size(self, path):
        return self._local.get_file_size(path)


def test_non_local_file_io_is_read_through_its_stream(kv_file):
    path, fields = kv_file
    fast_cls = _fast_class()
    fio = _StreamOnlyFileIO()
    r = fast_cls(fio, path, ["id", "s"], fields, None, row_indices=[4, 8])
    assert fio.opened == 1
    got = pa.Table.from_batches(_drain(r))
    assert got.column("id").to_pylist() == [4, 8]
    assert r._stream is None       # closed with the reader
    stock = pa.Table.from_batches(_drain(Stock(LocalFileIO(), path, ["id", "s"], fields, None)))
    fast = pa.Table.from_batches(_drain(fast_cls(fio, path, ["id", "s"], fields, None)))
    assert fast.equals(stock)


def test_row_indices_outside_the_file_name_it(kv_file):
    """A row index past the file (metadata that disagrees with the file)
    names the file, through a local path or a stream (issue 28, item 11)."""
    path, fields = kv_file
    fast_cls = _fast_class()
    for fio in (LocalFileIO(), _StreamOnlyFileIO()):
        r = fast_cls(fio, path, ["id"], fields, None, row_indices=[4, 3000])
        with pytest.raises(RowIndexError, match=rf"{path}: .*row_numbers contains row 3000, "
                                                rf"outside \[0, 3000\)"):
            _drain(r)


def _corrupt(path):
    data = bytearray(open(path, "rb").read())
    data[10:40] = b"\xff" * 30           # inside the first ZSTD frame
    open(path, "wb").write(bytes(data))


def test_broken_data_file_in_a_table_names_the_file(wh):
    data = typed_table(2000, seed=4)
    t = wh.create("broken", data.schema)
    with rp.accelerated():
        write(t, data)
    [path] = wh.data_files("broken")
    _corrupt(path)
    rp.accelerate()
    with pytest.raises(CorruptFileError) as ei:
        read(wh.table("broken"))
    assert os.path.basename(path) in str(ei.value)


def test_truncated_data_file_names_the_file(wh):
    data = pa.table({"id": pa.array(range(100), pa.int64())})
    t = wh.create("trunc", data.schema)
    write(t, data)
    [path] = wh.data_files("trunc")
    with open(path, "r+b") as f:
        f.truncate(20)
    rp.accelerate()
    with pytest.raises(CorruptFileError, match=os.path.basename(path)):
        read(wh.table("trunc"))


def test_broken_file_read_through_a_stream_names_the_path(kv_file, tmp_path):
    path, fields = kv_file
    bad = tmp_path / "bad.row"
    bad.write_bytes(open(path, "rb").read())
    _corrupt(str(bad))
    fast_cls = _fast_class()

    class Unnamed(_StreamOnlyFileIO):
        def new_input_stream(self, p):
            import io
            return io.BytesIO(open(p, "rb").read())     # a stream without a name
    with pytest.raises(CorruptFileError, match="bad.row"):
        _drain(fast_cls(Unnamed(), str(bad), ["id"], fields, None))


def test_a_missing_data_file_is_pypaimons_error(wh):
    data = pa.table({"id": pa.array(range(10), pa.int64())})
    t = wh.create("gone", data.schema)
    write(t, data)
    [path] = wh.data_files("gone")
    os.remove(path)
    rp.accelerate()
    with pytest.raises((FileNotFoundError, OSError)):
        read(wh.table("gone"))
