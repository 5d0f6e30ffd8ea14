"""Data-evolution tables with BLOB, ARRAY<BLOB> and MAP<STRING, BLOB> columns
under accelerate(): their .blob files are read and written by rowformat, and
stock pypaimon and the accelerated one read each other's tables to the same
values (bytes and descriptors), with projection, row ranges, slices and
filters; the files are the bytes rowformat's own writer writes; a corrupt
.blob file raises CorruptFileError naming it."""
import os
import random

import pyarrow as pa
import pytest

import rowformat.paimon as rp
from rowformat import CorruptFileError
from rowformat.blob import BlobDescriptor, BlobFileWriter
from rowformat.paimon import _blob_reader, _blob_writer

from ._tables import blob_accelerated, read, sort, write

pytestmark = blob_accelerated

BLOB_OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
COLUMNS = {"b": "BLOB", "a": "ARRAY<BLOB>", "m": "MAP<STRING, BLOB>"}
SCHEMA = pa.schema([("id", pa.int64()), ("b", pa.large_binary()), ("a", pa.list_(pa.large_binary())),
                    ("m", pa.map_(pa.string(), pa.large_binary()))])


def blob_rows(n=60, seed=0):
    """Nulls, empty blobs, empty and null-holding lists and maps."""
    rnd = random.Random(seed)
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "b": pa.array([None if i % 7 == 3 else b"" if i % 5 == 0 else rnd.randbytes(rnd.randint(1, 3000))
                       for i in range(n)], pa.large_binary()),
        "a": pa.array([None if i % 6 == 1 else [None if j == 1 else rnd.randbytes(j * 10) for j in range(i % 4)]
                       for i in range(n)], pa.list_(pa.large_binary())),
        "m": pa.array([None if i % 8 == 2 else [(f"k{j}", None if j == 2 else rnd.randbytes(j))
                                                for j in range(i % 4)] for i in range(n)],
                      pa.map_(pa.string(), pa.large_binary())),
    }, schema=SCHEMA)


@pytest.fixture
def spy(monkeypatch):
    """Counts the rowformat blob readers and writers acceleration makes."""
    made = {"readers": 0, "writers": 0}

    class Reader(_blob_reader.BlobFileReader):
        def __init__(self, *a, **kw):
            made["readers"] += 1
            super().__init__(*a, **kw)

    class Writer(_blob_writer.BlobFileWriter):
        def __init__(self, *a, **kw):
            made["writers"] += 1
            super().__init__(*a, **kw)
    monkeypatch.setattr(_blob_reader, "BlobFileReader", Reader)
    monkeypatch.setattr(_blob_writer, "BlobFileWriter", Writer)
    return made


def blob_files(wh, name):
    return wh.data_files(name, ".blob")


def table_with(wh, name, data, accelerated_write, options=None):
    t = wh.create(name, data.schema, options={**BLOB_OPTIONS, **(options or {})})
    if accelerated_write:
        with rp.accelerated():
            write(t, data)
    else:
        write(t, data)
    return wh.table(name)


def read_with(accelerated, *args, **kw):
    if accelerated:
        with rp.accelerated():
            return read(*args, **kw)
    return read(*args, **kw)


@pytest.mark.parametrize("writer,reader", [(True, False), (False, True), (True, True)],
                         ids=["fast-write/stock-read", "stock-write/fast-read", "fast/fast"])
def test_tables_read_back_the_values_written(wh, spy, writer, reader):
    data = blob_rows()
    t = table_with(wh, "t", data, writer)
    assert len(blob_files(wh, "t")) == 3                # one per blob column
    assert sort(read_with(reader, t)).equals(data)
    assert spy == {"readers": 3 if reader else 0, "writers": 3 if writer else 0}


def test_blob_files_are_the_bytes_of_rowformats_writer(wh, tmp_path):
    data = blob_rows(seed=1)
    table_with(wh, "stock", data, False)
    table_with(wh, "fast", data, True)
    stock = sorted(open(p, "rb").read() for p in blob_files(wh, "stock"))
    fast = sorted(open(p, "rb").read() for p in blob_files(wh, "fast"))
    ours = []
    for column, blob_type in COLUMNS.items():
        path = tmp_path / f"{column}.blob"
        with BlobFileWriter(path, blob_type) as w:
            w.write_many(data.column(column))
        ours.append(path.read_bytes())
    assert fast == stock == sorted(ours)


def test_empty_and_all_null_columns(wh):
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "b": pa.array([None, b""], pa.large_binary())})
    t = table_with(wh, "nulls", data, True)
    assert sort(read(t)).equals(data)
    assert sort(read_with(True, t)).equals(data)
    [path] = blob_files(wh, "nulls")
    with BlobFileWriter(path + ".ours", "BLOB") as w:
        w.write_many([None, b""])
    assert open(path, "rb").read() == open(path + ".ours", "rb").read()


def test_projection_row_ranges_slices_and_filters_agree_with_stock(wh):
    from pypaimon.utils.range import Range
    data = blob_rows(n=80, seed=2)
    t = table_with(wh, "p", data, True, options={"read.batch-size": "16"})
    cases = {
        "blob only": dict(projection=["b"]),
        "reordered": dict(projection=["m", "id", "a"]),
        "row ranges": dict(scan=lambda s: s.with_row_ranges([Range(3, 9), Range(40, 41), Range(77, 79)])),
        "slice": dict(scan=lambda s: s.with_slice(5, 50)),
        "filter": dict(predicate=lambda pb: pb.greater_than("id", 60)),
    }
    for what, kw in cases.items():
        stock, fast = read(t, **kw), read_with(True, t, **kw)
        assert fast.equals(stock), what
    assert read_with(True, t, projection=["b"]).column("b").to_pylist() == data.column("b").to_pylist()
    got = read_with(True, t, scan=lambda s: s.with_row_ranges([Range(3, 9), Range(77, 79)]))
    assert got.column("id").to_pylist() == [3, 4, 5, 6, 7, 8, 9, 77, 78, 79]
    assert got.equals(data.take(got.column("id")))


def test_blob_as_descriptor_both_ways(wh, tmp_path):
    """Descriptors written are copied into the .blob file; descriptors read
    point into it, byte-for-byte as stock pypaimon's."""
    ext = tmp_path / "external.bin"
    ext.write_bytes(bytes(range(256)) * 300)
    refs = [BlobDescriptor(str(ext), 7, 5000), None, BlobDescriptor(str(ext), 0, 0)]
    data = pa.table({"id": pa.array([0, 1, 2], pa.int64()),
                     "b": pa.array([None if d is None else d.serialize() for d in refs], pa.large_binary())})
    for fast_write in (True, False):
        name = f"d{int(fast_write)}"
        t = table_with(wh, name, data, fast_write, options={"blob-as-descriptor": "true"})
        stock, fast = sort(read(t)), sort(read_with(True, t))
        assert fast.equals(stock)
        [path] = blob_files(wh, name)
        got = [None if v is None else BlobDescriptor.deserialize(v) for v in fast.column("b").to_pylist()]
        assert [None if d is None else (d.uri, d.offset, d.length) for d in got] == [
            (path, 4, 5000), None, (path, 5000 + 16 + 4, 0)]
        with got[0].open() as f:
            assert f.read() == ext.read_bytes()[7:5007]
        values = sort(read_with(True, t.copy({"blob-as-descriptor": "false"})))
        assert values.column("b").to_pylist() == [ext.read_bytes()[7:5007], None, b""]


def _flip(path, offset):
    data = bytearray(open(path, "rb").read())
    data[offset] ^= 0x40
    open(path, "wb").write(bytes(data))


def test_corrupt_blob_file_in_a_table_names_the_file(wh):
    data = pa.table({"id": pa.array(range(3), pa.int64()),
                     "b": pa.array([b"abc" * 100, None, b"xyz" * 50], pa.large_binary())})
    t = table_with(wh, "bad", data, True)
    [path] = blob_files(wh, "bad")
    _flip(path, 4 + 200)                        # a payload byte of row 0
    assert read(t).column("b")[0].as_py() != data.column("b")[0].as_py()   # stock: silently wrong
    with pytest.raises(CorruptFileError, match=rf"{os.path.basename(path)}.*row 0 .*CRC32 mismatch"):
        read_with(True, t)
    with open(path, "r+b") as f:                # the footer's index length past the file
        f.seek(-5, os.SEEK_END)
        f.write(b"\xff\xff\x00\x00")
    with pytest.raises(CorruptFileError, match=rf"Corrupt blob file .*{os.path.basename(path)}"):
        read_with(True, t)


def test_failed_write_leaves_no_file_and_pypaimons_error(wh):
    t = wh.create("w", pa.schema([SCHEMA.field("id"), SCHEMA.field("b")]),
                  options={**BLOB_OPTIONS, "blob-as-descriptor": "true"})
    bad = pa.table({"id": pa.array([1], pa.int64()),
                    "b": pa.array([BlobDescriptor("/nonexistent/x.bin", 0, 10).serialize()],
                                  pa.large_binary())})
    rp.accelerate()
    with pytest.raises(Exception) as fast_error:
        write(t, bad)
    rp.restore()
    with pytest.raises(Exception) as stock_error:
        write(t, bad)
    # pypaimon's OSError; rowformat opens the file itself (issue 28, item 1): the
    # OSError subclass open() raises, naming the file
    assert isinstance(fast_error.value, type(stock_error.value))
    assert "/nonexistent/x.bin" in str(fast_error.value)
    assert read(wh.table("w")).num_rows == 0
