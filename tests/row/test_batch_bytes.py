"""Batches end at a byte budget as well as a row count (issue 28, item 4):
rows of 16 MiB strings used to be decoded 65,536 to a batch, several
batches ahead, whatever their size; and an allocation failure was reported
as a corrupt file."""
import pyarrow as pa
import pytest

from rowformat import RowFileReader, RowFileWriter, schema
from rowformat.errors import CorruptFileError
from rowformat.paimon._reader import take_chunks

SCHEMA = schema("id BIGINT NOT NULL, s STRING")
MIB = 1 << 20


@pytest.fixture(scope="module")
def big_rows(tmp_path_factory):
    """10 rows of 1 MiB strings (one block each), then 1000 small rows."""
    p = tmp_path_factory.mktemp("batch_bytes") / "big.row"
    with RowFileWriter(p, SCHEMA) as w:
        w.write(pa.table({"id": pa.array(range(10), pa.int64()),
                          "s": [chr(97 + i) * MIB for i in range(10)]}))
        w.write(pa.table({"id": pa.array(range(10, 1010), pa.int64()),
                          "s": [f"r{i}" for i in range(10, 1010)]}))
    return p


def test_batches_end_at_the_byte_budget(big_rows):
    with RowFileReader(big_rows, SCHEMA) as r:
        assert r.row_bytes(0) > MIB
        sizes = [b.num_rows for b in r.iter_batches(batch_bytes=4 * MIB)]
        # 3 big rows fit in 4 MiB, 4 do not; the small rows join the last big one
        assert sizes == [3, 3, 3, 1001]
        assert [b.num_rows for b in r.iter_batches(batch_bytes=None)] == [1010]
        assert [b.num_rows for b in r.iter_batches(batch_size=2, batch_bytes=4 * MIB)][:3] \
            == [2, 2, 2]
        # the default budget (64 MiB) holds all 10 MiB of them
        assert [b.num_rows for b in r.iter_batches()] == [1010]
        one = r.iter_batches(batch_bytes=1)         # one row at least
        assert [next(one).num_rows for _ in range(3)] == [1, 1, 1]
        got = pa.Table.from_batches(list(r.iter_batches(batch_bytes=4 * MIB)))
        assert got.equals(r.read())
        with pytest.raises(ValueError, match="batch_bytes must be positive or None, got 0"):
            next(r.iter_batches(batch_bytes=0))


def test_takes_are_cut_at_the_byte_budget(big_rows):
    with RowFileReader(big_rows, SCHEMA) as r:
        rows = [9, 0, 1, 2, 500, 3, 700]       # big, big, big, big, small, big, small
        assert list(take_chunks(r, rows, 65536, 4 * MIB)) == [(0, 3), (3, 7)]
        assert list(take_chunks(r, rows, 2, 64 * MIB)) == [(0, 2), (2, 4), (4, 6), (6, 7)]
        assert list(take_chunks(r, rows, 65536, 1)) == [(i, i + 1) for i in range(7)]
        assert list(take_chunks(r, [], 10)) == []


def test_an_allocation_failure_is_a_memory_error_not_corruption(big_rows, monkeypatch):
    """E_OOM from the decoder: MemoryError naming the file, block and row."""
    from rowformat import _rowcodec
    from rowformat.errors import RowMemoryError

    def failing_decode(*args, **kwargs):
        raise RowMemoryError("out of memory", 0, 1)
    with RowFileReader(big_rows, SCHEMA, threads=1) as r:
        dec = r._store.decoder(r._all_columns)
        monkeypatch.setattr(r._store, "decoder", lambda positions: _Failing(dec, failing_decode))
        with pytest.raises(MemoryError) as e:
            r.read()
    assert not isinstance(e.value, CorruptFileError)
    assert str(e.value) == (f"{big_rows}: block 0, row 0, column 's': out of memory while "
                            f"decoding (the file is not known to be damaged; read smaller "
                            f"batches or give it more memory)")
    assert _rowcodec._decode_error(-1, 0, None).__class__ is RowMemoryError


class _Failing:
    def __init__(self, dec, decode):
        self._dec, self.decode = dec, decode

    def finish(self):
        return self._dec.finish()


def test_the_cli_reports_out_of_memory_as_such(big_rows, monkeypatch, capfd):
    """Not "internal error ... (a bug in rowformat)", exit 3."""
    from rowformat import RowFileReader as Reader, cli

    def no_memory(self, *args, **kwargs):
        raise MemoryError(f"{self.name}: block 0, row 0, column 's': out of memory while decoding")
        yield
    monkeypatch.setattr(Reader, "iter_batches", no_memory)
    code = cli.main(["head", str(big_rows), "--schema", "id BIGINT NOT NULL, s STRING"])
    out, err = capfd.readouterr()
    assert (code, out) == (1, "")
    assert err == f"rowformat head: out of memory: {big_rows}: block 0, row 0, column 's': " \
                  f"out of memory while decoding\n"
