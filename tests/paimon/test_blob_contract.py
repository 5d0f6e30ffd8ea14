"""The accelerated FormatBlobReader and BlobFormatWriter against pypaimon's
own, called directly as pypaimon's readers and writers call them: batches
with start/end positions, read_values_at (placeholders included),
non-local FileIOs, .video files, the consumer; and the checks and restore()
of their patches."""
import io

import pyarrow as pa
import pytest
from pypaimon.filesystem.local_file_io import LocalFileIO
from pypaimon.read.reader.format_blob_reader import FormatBlobReader as StockReader
from pypaimon.schema.data_types import ArrayType, AtomicType, DataField
from pypaimon.table.row.blob import Blob
from pypaimon.table.row.generic_row import GenericRow, RowKind
from pypaimon.write.blob_format_writer import BlobFormatWriter as StockWriter

import rowformat.paimon as rp
from rowformat import CorruptFileError
from rowformat.blob import PLACEHOLDER, BlobFileWriter
from rowformat.paimon import _patches

from ._tables import blob_accelerated

pytestmark = blob_accelerated

BLOB = [DataField(0, "b", AtomicType("BLOB"))]
ARRAY = [DataField(0, "a", ArrayType(True, AtomicType("BLOB")))]
ROWS = [b"zero", None, PLACEHOLDER, b"", b"four" * 500, b"five"]


def fast_classes():
    rp.accelerate()
    import pypaimon.filesystem.local_file_io as local
    import pypaimon.read.split_read as split_read
    return split_read.FormatBlobReader, local.BlobFormatWriter


@pytest.fixture
def blob_file(tmp_path):
    path = tmp_path / "f.blob"
    with BlobFileWriter(path, "BLOB") as w:
        w.write_many(ROWS)
    return str(path)


def drain(reader, *args):
    out = []
    while (b := reader.read_arrow_batch(*args)) is not None:
        out.append(b)
    reader.close()
    return out


def plain(values):
    return [v.to_data() if isinstance(v, Blob) and v is not Blob.PLACE_HOLDER else v for v in values]


@pytest.mark.parametrize("descriptor", [False, True])
def test_read_values_at_and_record_count_match_stock(blob_file, descriptor):
    Fast, _ = fast_classes()
    args = (LocalFileIO(), blob_file, ["b"], BLOB, None, descriptor)
    fast, stock = Fast(*args, row_indices=[5, 2, 0, 1, 4]), StockReader(*args, row_indices=[5, 2, 0, 1, 4])
    assert type(fast).__module__ == "rowformat.paimon._blob_reader" and isinstance(fast, StockReader)
    assert fast.record_count == stock.record_count == 5
    got, want = fast.read_values_at([0, 1, 2, 3, 4]), stock.read_values_at([0, 1, 2, 3, 4])
    assert got[1] is want[1] is Blob.PLACE_HOLDER and got[3] is want[3] is None
    assert plain(got) == plain(want) == [b"five", Blob.PLACE_HOLDER, b"zero", None, b"four" * 500]
    if descriptor:
        assert [v.to_descriptor().serialize() for v in got if isinstance(v, Blob) and v is not
                Blob.PLACE_HOLDER] == [v.to_descriptor().serialize() for v in want
                                       if isinstance(v, Blob) and v is not Blob.PLACE_HOLDER]
    fast.close()
    stock.close()


def test_batches_with_start_and_end_positions_match_stock(blob_file):
    Fast, _ = fast_classes()
    rows = [0, 1, 3, 4, 5]                         # no placeholder: batches refuse one, as pypaimon's
    for start, end in [(None, None), (1, 4), (0, 1), (3, 9)]:
        args = (LocalFileIO(), blob_file, ["b"], BLOB, None, False)
        fast = drain(Fast(*args, batch_size=2, row_indices=rows), start, end)
        stock = drain(StockReader(*args, batch_size=2, row_indices=rows), start, end)
        assert [b.num_rows for b in fast] == [b.num_rows for b in stock], (start, end)
        assert [b.to_pylist() for b in fast] == [b.to_pylist() for b in stock]
        assert all(b.schema.equals(s.schema) for b, s in zip(fast, stock))
    # an empty range is empty (pypaimon's reader returns one row of it)
    assert drain(Fast(LocalFileIO(), blob_file, ["b"], BLOB, None, False, row_indices=rows), 4, 4) == []


def test_placeholder_in_a_batch_is_pypaimons_error(blob_file):
    Fast, _ = fast_classes()
    for cls in (Fast, StockReader):
        with pytest.raises(RuntimeError, match="placeholder is not supported"):
            drain(cls(LocalFileIO(), blob_file, ["b"], BLOB, None, False))


def test_row_index_out_of_range_names_the_file(blob_file):
    Fast, _ = fast_classes()
    with pytest.raises(IndexError, match="f.blob.*row 6"):
        Fast(LocalFileIO(), blob_file, ["b"], BLOB, None, False, row_indices=[0, 6])


class StreamOnly:
    """A FileIO that is not LocalFileIO: reads go through its input stream."""
    def __init__(self):
        self.local, self.opened = LocalFileIO(), []

    def new_input_stream(self, path):
        f = io.BytesIO(open(path, "rb").read())       # no name: errors must add the path
        self.opened.append(f)
        return f

    def get_file_size(self, path):
        return self.local.get_file_size(path)


def test_non_local_file_io_is_read_through_its_stream_and_closed(blob_file, tmp_path):
    Fast, _ = fast_classes()
    fio = StreamOnly()
    got = drain(Fast(fio, blob_file, ["b"], BLOB, None, False, row_indices=[0, 4]))
    assert pa.Table.from_batches(got).column("b").to_pylist() == [b"zero", b"four" * 500]
    assert len(fio.opened) == 1 and fio.opened[0].closed
    bad = tmp_path / "bad.blob"
    data = bytearray(open(blob_file, "rb").read())
    data[5] ^= 1
    bad.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match=r"bad\.blob.*CRC32 mismatch"):
        drain(Fast(fio, str(bad), ["b"], BLOB, None, False, row_indices=[0]))


def test_video_files_get_pypaimons_reader(tmp_path, monkeypatch):
    Fast, _ = fast_classes()
    made = []
    monkeypatch.setattr(StockReader, "__init__", lambda self, *a, **kw: made.append(a[1]))
    r = Fast(LocalFileIO(), str(tmp_path / "x.video"), ["v"], BLOB, None, True)
    assert type(r) is StockReader and made == [str(tmp_path / "x.video")]


def _write_with(cls, path, fields, values):
    """Writes ``values`` with a consumer that asks for a flush after a
    3-byte blob: (file bytes, consumer calls, positions, flushed)."""
    seen, flushes, positions = [], [], []
    stream = open(path, "wb")
    real_flush = stream.flush
    stream.flush = lambda: flushes.append(1) or real_flush()

    def consumer(field, d):
        seen.append((field, None if d is None else (d.uri, d.offset, d.length)))
        return d is not None and d.length == 3
    w = cls(stream, blob_consumer=consumer, file_path="table/f.blob")
    for v in values:
        w.add_element(GenericRow([v], fields, RowKind.INSERT))
        positions.append(w.position)
    assert w.reach_target_size(positions[-1]) and not w.reach_target_size(positions[-1] + 1)
    w.close()
    assert stream.closed
    return open(path, "rb").read(), seen, positions, bool(flushes)


@pytest.mark.parametrize("fields", ["blob", "array"])
def test_writer_consumer_flush_and_position_match_stock(tmp_path, fields):
    _, Fast = fast_classes()
    src = tmp_path / "src.bin"
    src.write_bytes(b"referenced" * 1000)
    if fields == "blob":
        fields = BLOB
        values = [Blob.from_data(b"abc"), None, Blob.from_local(str(src)), Blob.PLACE_HOLDER,
                  Blob.from_data(b"")]
    else:
        fields = ARRAY
        values = [[Blob.from_data(b"x"), None, Blob.from_local(str(src))], Blob.ARRAY_PLACE_HOLDER,
                  [], None, [Blob.from_data(b"abc")]]
    fast = _write_with(Fast, tmp_path / "fast.blob", fields, values)
    assert fast == _write_with(StockWriter, tmp_path / "stock.blob", fields, values)
    assert fast[3]          # the consumer asked for a flush


def test_writer_refuses_what_pypaimons_refuses(tmp_path):
    _, Fast = fast_classes()
    strict = [DataField(0, "a", ArrayType(True, AtomicType("BLOB", nullable=False)))]
    cases = [(BLOB, b"raw bytes"), (ARRAY, [b"not a Blob"]), (ARRAY, [Blob.PLACE_HOLDER]),
             (strict, [None]), (ARRAY, b"bytes")]
    for fields, value in cases:
        for cls in (Fast, StockWriter):
            w = cls(io.BytesIO())
            with pytest.raises(ValueError) as e:
                w.add_element(GenericRow([value], fields, RowKind.INSERT))
            if cls is StockWriter:
                assert str(e.value) == str(fast_error), (fields, value)
            else:
                fast_error = e.value


def test_an_empty_file_is_its_footer(tmp_path):
    _, Fast = fast_classes()
    fast, stock = io.BytesIO(), io.BytesIO()
    fast.close = stock.close = lambda: None
    Fast(fast).close()
    StockWriter(stock).close()
    assert fast.getvalue() == stock.getvalue() == b"\x00\x00\x00\x00\x01"


# -- patching ----------------------------------------------------------------------
def _names():
    import importlib
    return {(m, n): importlib.import_module(m).__dict__.get(n)
            for m, n in [("pypaimon.read.split_read", "FormatBlobReader")]
            + [(p.module, p.attr) for p in _patches.POINTS if p.attr == "BlobFormatWriter"]}


def test_accelerate_patches_every_blob_name_and_restore_puts_them_back():
    stock = _names()
    assert all(v in (StockReader, StockWriter) for v in stock.values())
    rp.accelerate()
    now = _names()
    assert all(v.__module__.startswith("rowformat.paimon._blob_") for v in now.values())
    rp.restore()
    assert _names() == stock


def test_someone_elses_blob_patch_refused_and_nothing_patched(monkeypatch):
    import pypaimon.filesystem.pyarrow_file_io as pyarrow_file_io
    import pypaimon.read.split_read as split_read

    class Other:
        pass
    monkeypatch.setattr(pyarrow_file_io, "BlobFormatWriter", Other)
    stock_row_reader = split_read.FormatRowReader
    with pytest.raises(rp.PaimonIntegrationError, match="pyarrow_file_io.BlobFormatWriter .*another patch"):
        rp.accelerate()
    assert not rp.is_accelerated() and split_read.FormatRowReader is stock_row_reader
    assert split_read.FormatBlobReader is StockReader


@pytest.mark.parametrize("cls,name", [(StockReader, "__init__"), (StockWriter, "__init__"),
                                      (StockReader, "read_arrow_batch")])
def test_changed_blob_signature_refused(monkeypatch, cls, name):
    monkeypatch.setattr(cls, name, lambda self, something_else: None)
    with pytest.raises(rp.PaimonIntegrationError, match=cls.__name__):
        rp.accelerate()
    assert not rp.is_accelerated()
