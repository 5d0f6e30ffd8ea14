"""Arrow's PyCapsule interface with the real consumers and producers:
readers export C streams to polars, DuckDB and pyarrow; the writer takes
polars DataFrames, DuckDB results and nanoarrow arrays."""
import pyarrow as pa
import pytest

from rowformat import RowFileReader, RowFileWriter, schema

pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")
nanoarrow = pytest.importorskip("nanoarrow")

SCHEMA = schema("id BIGINT NOT NULL, name STRING, tags ARRAY<STRING>, score DOUBLE")


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "t.row"
    with RowFileWriter(p, SCHEMA, block_size=512) as w:
        w.write_rows([(i, None if i % 7 == 0 else f"n{i}", [str(i), None] if i % 3 else [],
                       i / 4) for i in range(2000)])
    return p


def _write(tmp_path, name, data):
    p = tmp_path / name
    with RowFileWriter(p, SCHEMA, block_size=512) as w:
        w.write(data)
    return p.read_bytes()


def test_polars_reads_the_reader_and_its_projected_streams(path):
    with RowFileReader(path, SCHEMA) as r:
        want = r.read()
        assert pl.DataFrame(r).equals(pl.from_arrow(want))
        sub = pl.DataFrame(r.to_reader(columns=["name", "id"], selection=range(100, 1500)))
        assert sub.equals(pl.from_arrow(want.select(["name", "id"]).slice(100, 1400)))


def test_duckdb_queries_the_reader(path):
    with RowFileReader(path, SCHEMA) as r:
        [got] = duckdb.sql("select count(*), sum(id), count(name) from r").fetchall()
        assert got == (2000, sum(range(2000)), 2000 - len(range(0, 2000, 7)))
        stream = r.to_reader(columns=["id"], selection=[5, 9, 1999], batch_size=2)  # noqa: F841 - DuckDB's query names it
        assert duckdb.sql("select id from stream order by id").fetchall() == [(5,), (9,), (1999,)]


def test_pyarrow_imports_the_stream_with_a_requested_schema(path):
    with RowFileReader(path, SCHEMA) as r:
        got = pa.RecordBatchReader.from_stream(r).read_all()
        assert got.equals(r.read())
        wide = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.large_string()),
                          ("tags", pa.list_(pa.string())), ("score", pa.float64())])
        cast = pa.RecordBatchReader.from_stream(r, schema=wide).read_all()
        assert cast.schema == wide and cast.column("name").to_pylist() == got.column("name").to_pylist()


def test_writer_takes_polars_duckdb_and_nanoarrow_to_the_same_bytes(path, tmp_path):
    with RowFileReader(path, SCHEMA) as r:
        table = r.read()
    want = _write(tmp_path, "pa.row", table)
    assert want == path.read_bytes()
    assert _write(tmp_path, "pl.row", pl.from_arrow(table)) == want
    expected = table  # noqa: F841 - the name DuckDB's query refers to
    assert _write(tmp_path, "duck.row", duckdb.sql("select * from expected order by id")) == want
    batch = table.combine_chunks().to_batches()[0]
    assert _write(tmp_path, "na.row", nanoarrow.c_array(batch)) == want


def test_writer_refuses_what_holds_no_arrow_data(tmp_path):
    with RowFileWriter(tmp_path / "x.row", SCHEMA) as w:
        with pytest.raises(TypeError, match="__arrow_c_stream__"):
            w.write([(1, "a", [], 0.0)])


def test_fory_encode_batch_takes_polars_duckdb_nanoarrow_and_readers():
    from rowformat.fory import RowEncoder
    table = pa.table({"id": pa.array(range(300), pa.int64()),
                      "name": pa.array([None if i % 5 == 0 else f"n{i}" for i in range(300)])})
    for layout in ("standard", "compact"):
        enc = RowEncoder(table.schema, layout=layout)
        want = enc.encode_batch(table)
        assert len(want) == 300
        assert enc.encode_batch(pl.from_arrow(table)).equals(want)
        source = table  # noqa: F841 - the name DuckDB's query refers to
        assert enc.encode_batch(duckdb.sql("select * from source order by id")).equals(want)
        assert enc.encode_batch(nanoarrow.c_array(table.to_batches()[0])).equals(want)
        chunked = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=64))
        assert enc.encode_batch(chunked).equals(want)
        assert len(enc.encode_batch(table.slice(0, 0))) == 0
        with pytest.raises(TypeError, match="encode_batch"):
            enc.encode_batch([{"id": 1, "name": "x"}])
