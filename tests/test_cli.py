"""The rowformat command, run in-process (main) and once as the installed entry point."""
import datetime
import decimal
import json
import os
import pathlib
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rowformat
from rowformat import cli, schema_json

SMALL = "id BIGINT NOT NULL, name STRING, score DOUBLE, tags ARRAY<INT>"

ALL_TYPES = (
    "i INT NOT NULL, bo BOOLEAN, ti TINYINT, si SMALLINT, bi BIGINT, fl FLOAT, db DOUBLE, "
    "s STRING, c CHAR(3), b BYTES, bn BINARY(2), d DECIMAL(20, 3), dc DECIMAL(9, 2), dt DATE, "
    "t TIME(3), ts TIMESTAMP(6), ts9 TIMESTAMP(9), tz TIMESTAMP(3) WITH LOCAL TIME ZONE, "
    "a ARRAY<BINARY(2)>, m MAP<INT, ARRAY<STRING>>, ms MULTISET<STRING>, "
    "r ROW<x DOUBLE, y VARBINARY(3), z ROW<q DATE>>, v VECTOR<FLOAT, 2>, va VARIANT, bl BLOB"
)


def run(capfd, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capfd.readouterr()
    return code, out, err


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.row"
    with rowformat.RowFileWriter(path, SMALL, block_size=64) as w:
        w.write_rows([(i, f"n{i}" if i % 3 else None, i / 4, [i, -i] if i % 2 else [])
                      for i in range(10)])
    return path


@pytest.fixture
def all_types(tmp_path):
    utc = datetime.timezone.utc
    rows = [
        (1, True, -128, 32767, -(2 ** 63), 0.1, float("nan"), "héllo", "abc", b"\x00\xff", b"ab",
         decimal.Decimal("12345678901234567.125"), decimal.Decimal("-1.50"), datetime.date(1, 1, 1),
         datetime.time(23, 59, 59, 999000), datetime.datetime(2024, 2, 29, 12, 0, 0, 123456),
         datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
         datetime.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=utc),
         [b"ab", None], [(1, ["x", None]), (2, None)], [("a", 2)],
         {"x": float("inf"), "y": b"abc", "z": {"q": datetime.date(2000, 1, 1)}},
         [1.5, -2.0], {"value": b"\x01", "metadata": b"\x02"}, b"blob"),
        (2,) + (None,) * 24,
        (3, False, 0, 0, 0, -0.0, 1e300, "", "", b"", b"", decimal.Decimal("0.000"),
         decimal.Decimal("0.01"), datetime.date(9999, 12, 31), datetime.time(0, 0),
         datetime.datetime(1, 1, 1), datetime.datetime(2262, 4, 11),
         datetime.datetime(1970, 1, 1, tzinfo=utc), [], [], [], {"x": None, "y": None, "z": None},
         [0.0, 3.4028234663852886e38], {"value": b"", "metadata": b""}, b""),
    ]
    path = tmp_path / "all.row"
    with rowformat.RowFileWriter(path, ALL_TYPES, block_size=256) as w:
        w.write_rows(rows)
    return path


# -- inspect ---------------------------------------------------------------------------------

def test_inspect_json(capfd, small):
    code, out, err = run(capfd, "inspect", small, "--json", "--blocks")
    assert code == 0, err
    info = json.loads(out)
    with rowformat.RowFileReader(small, SMALL) as r:
        ix, f = r.block_index, r.footer
        rows = [int(b - a) for a, b in zip(ix.row_starts, list(ix.row_starts[1:]) + [10])]
        size = small.stat().st_size
        assert info == {
            "file": str(small),
            "size": size,
            "footer": {"total_rows": 10, "block_count": r.num_blocks,
                       "index_offset": f.index_offset, "index_length": f.index_length,
                       "version": 1},
            "compressed_bytes": int(ix.compressed_sizes.sum()),
            "uncompressed_bytes": int(ix.uncompressed_sizes.sum()),
            "compression_ratio": round(int(ix.uncompressed_sizes.sum())
                                       / int(ix.compressed_sizes.sum()), 3),
            "rows_per_block": {"min": min(rows), "mean": round(10 / len(rows), 1), "max": max(rows)},
            "uncompressed_block_bytes": {
                "min": int(ix.uncompressed_sizes.min()),
                "mean": round(float(ix.uncompressed_sizes.mean()), 1),
                "max": int(ix.uncompressed_sizes.max())},
            "blocks": [{"block": b, "offset": int(ix.offsets[b]),
                        "compressed_bytes": int(ix.compressed_sizes[b]),
                        "uncompressed_bytes": int(ix.uncompressed_sizes[b]),
                        "first_row": int(ix.row_starts[b]), "rows": rows[b]}
                       for b in range(r.num_blocks)],
        }
        assert r.num_blocks > 1
        assert f.index_offset + f.index_length + 32 == size


def test_inspect_table(capfd, small):
    code, out, _ = run(capfd, "inspect", small, "--schema", SMALL)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["field", "value"]
    assert "rows               10" in out
    assert "format version     1" in out
    assert f"schema             {SMALL}" in out
    assert "compression ratio" in out


def test_inspect_empty_file(capfd, tmp_path):
    path = tmp_path / "empty.row"
    rowformat.RowFileWriter(path, SMALL).close()
    code, out, _ = run(capfd, "inspect", path, "--json")
    assert code == 0
    info = json.loads(out)
    assert info["footer"]["total_rows"] == 0 and info["footer"]["block_count"] == 0
    assert info["compression_ratio"] is None and info["rows_per_block"] is None
    code, out, _ = run(capfd, "inspect", path)
    assert code == 0 and "compression ratio  -" in out


# -- head, cat, take ----------------------------------------------------------------------------

def test_cat_json_lines(capfd, small):
    code, out, err = run(capfd, "cat", small, "--schema", SMALL)
    assert code == 0, err
    assert out.splitlines()[:4] == [
        '{"id": 0, "name": null, "score": 0.0, "tags": []}',
        '{"id": 1, "name": "n1", "score": 0.25, "tags": [1, -1]}',
        '{"id": 2, "name": "n2", "score": 0.5, "tags": []}',
        '{"id": 3, "name": null, "score": 0.75, "tags": [3, -3]}',
    ]
    assert len(out.splitlines()) == 10


@pytest.mark.parametrize("rows, expected", [
    ("2:4", [2, 3]), ("8:", [8, 9]), (":2", [0, 1]), ("-2:", [8, 9]), ("5", [5]), ("-1", [9]),
    ("3:3", []), ("7:100", [7, 8, 9]),
])
def test_cat_row_ranges(capfd, small, rows, expected):
    code, out, err = run(capfd, "cat", small, "-s", SMALL, f"--rows={rows}", "-c", "id")
    assert code == 0, err
    assert [json.loads(x)["id"] for x in out.splitlines()] == expected


def test_cat_csv_columns(capfd, small):
    code, out, err = run(capfd, "cat", small, "-s", SMALL, "--rows", "2:5", "-f", "csv",
                         "--columns", "score,id", "-c", "name")
    assert code == 0, err
    assert out == '"score","id","name"\n0.5,2,"n2"\n0.75,3,\n1,4,"n4"\n'


def test_cat_csv_empty_selection_prints_the_header(capfd, small):
    code, out, _ = run(capfd, "cat", small, "-s", SMALL, "--rows", "3:3", "-f", "csv", "-c", "id")
    assert code == 0 and out == '"id"\n'


def test_cat_csv_rejects_nested_columns(capfd, small):
    code, out, err = run(capfd, "cat", small, "-s", SMALL, "-f", "csv")
    assert code == 2 and "tags" in err and out == ""


def test_head_table(capfd, small):
    code, out, err = run(capfd, "head", small, "-s", SMALL, "-n", "3")
    assert code == 0, err
    assert out == ("id  name  score  tags\n"
                   "--  ----  -----  -------\n"
                   " 0  null    0.0  []\n"
                   " 1  n1     0.25  [1, -1]\n"
                   " 2  n2      0.5  []\n")


def test_head_more_rows_than_the_file(capfd, small):
    code, out, _ = run(capfd, "head", small, "-s", SMALL, "-n", "50", "-f", "jsonl", "-c", "id")
    assert code == 0 and len(out.splitlines()) == 10


def test_take(capfd, small):
    code, out, err = run(capfd, "take", small, "9", "0", "9", "-2", "-s", SMALL, "-f", "jsonl",
                         "-c", "id,tags")
    assert code == 0, err
    assert out.splitlines() == ['{"id": 9, "tags": [9, -9]}', '{"id": 0, "tags": []}',
                                '{"id": 9, "tags": [9, -9]}', '{"id": 8, "tags": []}']


def test_take_table(capfd, small):
    code, out, _ = run(capfd, "take", small, "4", "-s", SMALL, "-c", "name,id")
    assert code == 0
    assert out == "name  id\n----  --\nn4     4\n"


EMPTY_ROWS = "a ARRAY<ROW<>>, r ROW<>, m MAP<INT, ROW<>>, b INT"


@pytest.fixture
def empty_rows(tmp_path):
    """ROW<> (no fields) in an array, alone and as map values; the first rows
    have no null element, so no Arrow mask carries the arrays' lengths."""
    path = tmp_path / "empty.row"
    with rowformat.RowFileWriter(path, EMPTY_ROWS) as w:
        w.write_rows([([{}], {}, [(1, {})], 1), ([{}, {}], {}, [], 2), ([{}, None], None, None, 3)])
    return path


EMPTY_ROWS_JSON = ['{"a": [{}], "r": {}, "m": [{"key": 1, "value": {}}], "b": 1}',
                   '{"a": [{}, {}], "r": {}, "m": [], "b": 2}',
                   '{"a": [{}, null], "r": null, "m": null, "b": 3}']


def test_rows_without_fields_print_in_every_format(capfd, empty_rows, tmp_path):
    one = tmp_path / "one.row"       # the case: the only column, no null element
    with rowformat.RowFileWriter(one, "a ARRAY<ROW<>>") as w:
        w.write_rows([([{}],)])
    code, out, err = run(capfd, "head", one, "-s", "a ARRAY<ROW()>")
    assert (code, err) == (0, "") and out == "a\n----\n[{}]\n"
    code, out, err = run(capfd, "head", empty_rows, "-s", EMPTY_ROWS)
    assert code == 0, err
    assert out.splitlines()[2:] == ["[{}]        {}    [{\"key\": 1, \"value\": {}}]  1",
                                    "[{}, {}]    {}    []                         2",
                                    "[{}, null]  null  null                       3"]
    code, out, err = run(capfd, "cat", empty_rows, "-s", EMPTY_ROWS)
    assert code == 0 and out.splitlines() == EMPTY_ROWS_JSON, err
    code, out, err = run(capfd, "take", empty_rows, "1", "-s", EMPTY_ROWS, "-f", "jsonl")
    assert code == 0 and out.splitlines() == EMPTY_ROWS_JSON[1:2], err
    code, out, err = run(capfd, "cat", empty_rows, "-s", EMPTY_ROWS, "-f", "csv", "-c", "b")
    assert code == 0 and out.split() == ['"b"', "1", "2", "3"], err
    code, out, err = run(capfd, "cat", empty_rows, "-s", EMPTY_ROWS, "-f", "csv")
    assert code == 2 and "CSV holds no nested values" in err


@pytest.mark.parametrize("ext", ["arrow", "arrows", "jsonl"])
def test_convert_rows_without_fields(capfd, empty_rows, tmp_path, ext):
    mid, back = tmp_path / f"mid.{ext}", tmp_path / "back.row"
    code, _, err = run(capfd, "convert", empty_rows, mid, "-s", EMPTY_ROWS, "-q")
    assert code == 0, err
    schema = ["-s", EMPTY_ROWS] if ext == "jsonl" else []
    code, _, err = run(capfd, "convert", mid, back, "-q", *schema)
    assert code == 0, err
    assert back.read_bytes() == empty_rows.read_bytes()


def test_convert_rows_without_fields_to_parquet_is_a_usage_error(capfd, empty_rows, tmp_path):
    code, _, err = run(capfd, "convert", empty_rows, tmp_path / "out.parquet", "-s", EMPTY_ROWS)
    assert code == 2 and "Parquet holds no ROW<>" in err and "a (list<element: struct<>>)" in err
    assert os.listdir(tmp_path) == ["empty.row"]


def test_all_types_json_lines_exact(capfd, all_types):
    code, out, err = run(capfd, "cat", all_types, "-s", ALL_TYPES, "--rows", "0")
    assert code == 0, err
    assert json.loads(out.replace("NaN", '"NaN"').replace("Infinity", '"Infinity"')) == {
        "i": 1, "bo": True, "ti": -128, "si": 32767, "bi": -(2 ** 63), "fl": 0.1, "db": "NaN",
        "s": "héllo", "c": "abc", "b": "AP8=", "bn": "YWI=", "d": "12345678901234567.125",
        "dc": "-1.50", "dt": "0001-01-01", "t": "23:59:59.999",
        "ts": "2024-02-29 12:00:00.123456", "ts9": "1969-12-31 23:59:59.999999000",
        "tz": "2024-01-02 03:04:05.006Z", "a": ["YWI=", None],
        "m": [{"key": 1, "value": ["x", None]}, {"key": 2, "value": None}],
        "ms": [{"key": "a", "value": 2}],
        "r": {"x": "Infinity", "y": "YWJj", "z": {"q": "2000-01-01"}},
        "v": [1.5, -2.0], "va": {"value": "AQ==", "metadata": "Ag=="}, "bl": "YmxvYg==",
    }


# -- verify -------------------------------------------------------------------------------------

def test_verify_ok(capfd, small):
    code, out, err = run(capfd, "verify", small, "-s", SMALL)
    assert code == 0, err
    assert out.startswith(f"ok {small}")


def test_verify_finds_a_corrupt_block(capfd, small, tmp_path):
    data = bytearray(small.read_bytes())
    with rowformat.RowFileReader(small, SMALL) as r:
        b1 = int(r.block_index.offsets[1])
    data[b1 + 4] ^= 0xFF       # inside block 1's ZSTD frame
    bad = tmp_path / "bad.row"
    bad.write_bytes(bytes(data))
    code, out, _ = run(capfd, "verify", bad, "-s", SMALL)
    assert code == 1
    assert "block 1" in out and out.rstrip().endswith("problem(s)")
    code, out, _ = run(capfd, "verify", bad, "-s", SMALL, "--json")
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False and report["problems"][0]["block"] == 1


def test_verify_wrong_schema_is_a_problem(capfd, small):
    code, out, _ = run(capfd, "verify", small, "-s", "id BIGINT NOT NULL, name STRING")
    assert code == 1


EVIL = "evil\x1b[2K\r\nok forged.row\u202e\x9b31m"
EVIL_SHOWN = "evil\\x1b[2K\\r\\nok forged.row\\u202e\\x9b31m"


def test_names_are_printed_escaped(capfd, small, tmp_path):
    """Issue 28, item 10: a file name with ANSI escapes, a carriage return,
    a newline, a bidi override or a C1 control prints escaped, so it can
    neither forge a line of the result nor drive the terminal."""
    evil = tmp_path / EVIL
    evil.write_bytes(small.read_bytes())
    code, out, _ = run(capfd, "inspect", evil)
    assert code == 0 and f"file               {tmp_path}/{EVIL_SHOWN}" in out.splitlines()
    code, out, _ = run(capfd, "verify", evil, "-s", SMALL)
    assert code == 0 and out == f"ok {tmp_path}/{EVIL_SHOWN}: 10 rows in 4 blocks\n"
    evil.write_bytes(small.read_bytes()[:-3])            # truncated: a problem, and an error
    code, out, _ = run(capfd, "verify", evil, "-s", SMALL)
    lines = out.splitlines()
    assert code == 1 and len(lines) == 2 and lines[0].startswith("file: not a .row file")
    assert lines[1] == f"FAILED {tmp_path}/{EVIL_SHOWN}: 1 problem(s)"
    code, _, err = run(capfd, "cat", evil, "-s", SMALL)
    assert code == 1 and err.count("\n") == 1 and f"{tmp_path}/{EVIL_SHOWN}" in err
    for text in (out, err):
        assert not any(c in text for c in "\x1b\r\u202e\x9b")


# -- schema sources ---------------------------------------------------------------------------

def test_schema_from_json_file(capfd, small, tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(schema_json.dumps(rowformat.schema(SMALL)))
    code, out, err = run(capfd, "cat", small, "--schema", path, "--rows", "1", "-c", "name")
    assert code == 0, err
    assert out == '{"name": "n1"}\n'


def test_schema_nested_past_the_limit_is_a_usage_error(capfd, tmp_path):
    at_limit = "a " + "ARRAY<" * 62 + "INT" + ">" * 62          # 64 levels, the schema's own too
    path = tmp_path / "deep.row"
    with rowformat.RowFileWriter(path, at_limit) as w:
        w.write_rows([([[[[[[[[]]]]]]]],), (None,)])
    code, out, err = run(capfd, "cat", path, "-s", at_limit)
    assert code == 0 and out.splitlines() == ['{"a": [[[[[[[[]]]]]]]]}', '{"a": null}'], err
    for deep in ("a " + "ARRAY<" * 63 + "INT" + ">" * 63,
                 "a " + "ROW<a " * 2000 + "INT" + ">" * 2000):
        code, out, err = run(capfd, "cat", path, "-s", deep)
        assert code == 2 and "invalid --schema" in err and "nested deeper than 64 levels" in err
    doc = tmp_path / "deep.json"
    doc.write_text('{"fields": [{"id": 0, "name": "a", "type": '
                   + '{"type": "ARRAY", "element": ' * 1000 + '"INT"' + "}" * 1000 + "}]}")
    code, out, err = run(capfd, "head", path, "-s", doc)
    assert code == 2 and f"invalid --schema (from {doc})" in err and "nested deeper than 64" in err
    code, _, err = run(capfd, "convert", path, tmp_path / "out.jsonl", "-s", doc)
    assert code == 2 and "nested deeper than 64 levels" in err

def test_schema_from_ddl_file(capfd, small, tmp_path):
    path = tmp_path / "schema.ddl"
    path.write_text(SMALL + "\n")
    code, out, _ = run(capfd, "cat", small, "--schema", path, "--rows", "1", "-c", "id")
    assert code == 0 and out == '{"id": 1}\n'


def test_schema_from_paimon_table_directory(capfd, small, tmp_path):
    table = tmp_path / "db.db" / "t"
    (table / "schema").mkdir(parents=True)
    fields = json.loads(schema_json.dumps(rowformat.schema(SMALL)))["fields"]
    old = {"version": 3, "id": 0, "fields": fields[:1], "highestFieldId": 0, "partitionKeys": [],
           "primaryKeys": [], "options": {}, "timeMillis": 1}
    new = dict(old, id=1, fields=fields, highestFieldId=3)
    (table / "schema" / "schema-0").write_text(json.dumps(old))
    (table / "schema" / "schema-1").write_text(json.dumps(new))
    for spec in (table, table / "schema", table / "schema" / "schema-1"):
        code, out, err = run(capfd, "take", small, "2", "-s", spec, "-f", "jsonl")
        assert code == 0, err
        assert out == '{"id": 2, "name": "n2", "score": 0.5, "tags": []}\n'


# -- exit codes ---------------------------------------------------------------------------------

def test_usage_errors_exit_2(capfd, small, tmp_path):
    assert run(capfd, "cat", small)[0] == 2                                   # no schema
    assert run(capfd, "cat", small, "-s", "id BIGNIT")[0] == 2                # bad schema
    assert run(capfd, "cat", small, "-s", SMALL, "-c", "nope")[0] == 2         # unknown column
    assert run(capfd, "cat", small, "-s", SMALL, "--rows", "x")[0] == 2        # bad range
    assert run(capfd, "cat", small, "-s", SMALL, "--rows", "10")[0] == 2       # row outside
    assert run(capfd, "take", small, "10", "-s", SMALL)[0] == 2                # row outside
    assert run(capfd, "frobnicate")[0] == 2                                    # unknown command
    assert run(capfd)[0] == 2
    empty = tmp_path / "empty-dir"
    empty.mkdir()
    assert run(capfd, "cat", small, "-s", empty)[0] == 2                       # no schema-N
    assert run(capfd, "convert", small, tmp_path / "x.unknown", "-s", SMALL)[0] == 2
    code, out, err = run(capfd, "--help")
    assert code == 0 and "convert" in out


def test_bad_files_exit_1(capfd, tmp_path):
    code, _, err = run(capfd, "inspect", tmp_path / "missing.row")
    assert code == 1 and "missing.row" in err
    junk = tmp_path / "junk.row"
    junk.write_bytes(b"not a row file at all, not at all" * 3)
    code, _, err = run(capfd, "inspect", junk)
    assert code == 1 and "not a .row file" in err
    code, _, err = run(capfd, "cat", junk, "-s", SMALL)
    assert code == 1
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"id": 1}\n{nope\n')
    code, _, err = run(capfd, "convert", bad_json, tmp_path / "o.row", "-s", "id BIGINT")
    assert code == 1 and "line 2" in err
    assert not (tmp_path / "o.row").exists()


def test_internal_failure_exits_3(capfd, small, monkeypatch):
    def boom(path, blocks=False, storage_options=None):
        raise RuntimeError("kaboom")
    monkeypatch.setattr(cli.inspection, "inspect_file", boom)
    code, _, err = run(capfd, "inspect", small)
    assert code == 3
    assert "internal error: RuntimeError: kaboom" in err and "Traceback" not in err
    code, _, err = run(capfd, "--debug", "inspect", small)
    assert code == 3 and "Traceback" in err and "kaboom" in err


# -- convert ----------------------------------------------------------------------------------

FORMATS = ["parquet", "arrow", "arrows", "jsonl"]


@pytest.mark.parametrize("ext", FORMATS + ["csv"])
def test_convert_round_trip_small(capfd, small, tmp_path, ext):
    mid = tmp_path / f"mid.{ext}"
    back = tmp_path / "back.row"
    code, _, err = run(capfd, "convert", small if ext != "csv" else _flat(small, tmp_path),
                       mid, "-s", SMALL if ext != "csv" else FLAT, "--block-size", "64")
    assert code == 0, err
    assert f"wrote 10 rows to {mid}" in err
    schema = SMALL if ext != "csv" else FLAT
    # Back to .row with the same block size: the file is byte-identical.
    code, _, err = run(capfd, "convert", mid, back, "-s", schema, "--block-size", "64", "-q")
    assert code == 0, err
    src = small if ext != "csv" else tmp_path / "flat.row"
    assert back.read_bytes() == src.read_bytes()


FLAT = "id BIGINT NOT NULL, name STRING, score DOUBLE"


def _flat(small, tmp_path):
    path = tmp_path / "flat.row"
    with rowformat.RowFileReader(small, SMALL) as r, \
            rowformat.RowFileWriter(path, FLAT, block_size=64) as w:
        w.write(r.read(columns=["id", "name", "score"]))
    return path


@pytest.mark.parametrize("ext", FORMATS)
def test_convert_all_types_round_trip(capfd, all_types, tmp_path, ext):
    mid = tmp_path / f"mid.{ext}"
    back = tmp_path / "back.row"
    code, _, err = run(capfd, "convert", all_types, mid, "-s", ALL_TYPES, "-q")
    assert code == 0, err
    # Parquet and Arrow keep the Paimon schema in their metadata; JSON needs --schema.
    extra = ["-s", ALL_TYPES] if ext == "jsonl" else []
    code, _, err = run(capfd, "convert", mid, back, "--block-size", "256", "-q", *extra)
    assert code == 0, err
    assert back.read_bytes() == all_types.read_bytes()


def test_convert_outputs_equal_the_source_table(capfd, all_types, tmp_path):
    import pyarrow.ipc as ipc
    with rowformat.RowFileReader(all_types, ALL_TYPES) as r:
        source = r.read()
    for ext in FORMATS:
        assert run(capfd, "convert", all_types, tmp_path / f"o.{ext}", "-s", ALL_TYPES, "-q")[0] == 0
    arrow = ipc.open_file(tmp_path / "o.arrow").read_all()
    assert arrow.schema.metadata[b"rowformat.schema"].decode() == ALL_TYPES
    assert _same(arrow.replace_schema_metadata(None), source)
    stream = ipc.open_stream(tmp_path / "o.arrows").read_all()
    assert _same(stream.replace_schema_metadata(None), source)
    parquet = pq.read_table(tmp_path / "o.parquet")
    # VECTOR is a list in Parquet (see rowformat/cli/sinks.py); every value is the same.
    assert parquet.column("v").to_pylist() == source.column("v").to_pylist()
    assert _same(parquet.drop_columns(["v"]).replace_schema_metadata(None),
                 source.drop_columns(["v"]))
    lines = (tmp_path / "o.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[1])["i"] == 2


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas and values (NaN equal to NaN)."""
    return a.schema.equals(b.schema) and repr(a.to_pylist()) == repr(b.to_pylist())


def test_convert_from_foreign_files_infers_the_schema(capfd, tmp_path):
    (tmp_path / "in.csv").write_text('id,name,when\n1,"a",2024-01-01\n2,,2024-01-02\n3,"",\n')
    code, _, err = run(capfd, "convert", tmp_path / "in.csv", tmp_path / "c.row", "-q")
    assert code == 0, err
    schema = "id BIGINT, name STRING, `when` DATE"
    code, out, _ = run(capfd, "cat", tmp_path / "c.row", "-s", schema)
    assert out.splitlines() == ['{"id": 1, "name": "a", "when": "2024-01-01"}',
                                '{"id": 2, "name": null, "when": "2024-01-02"}',
                                '{"id": 3, "name": "", "when": null}']
    (tmp_path / "in.jsonl").write_text('{"x": 1, "y": [1.5]}\n{"x": null, "y": null}\n')
    code, _, err = run(capfd, "convert", tmp_path / "in.jsonl", tmp_path / "j.row", "-q")
    assert code == 0, err
    code, out, _ = run(capfd, "cat", tmp_path / "j.row", "-s", "x BIGINT, y ARRAY<DOUBLE>")
    assert out.splitlines() == ['{"x": 1, "y": [1.5]}', '{"x": null, "y": null}']
    pq.write_table(pa.table({"u": pa.array([1], pa.uint32())}), tmp_path / "u.parquet")
    code, _, err = run(capfd, "convert", tmp_path / "u.parquet", tmp_path / "u.row")
    assert code == 1 and "uint32" in err


def test_convert_bad_values_leave_no_output(capfd, tmp_path):
    (tmp_path / "in.jsonl").write_text('{"id": 1}\n{"id": null}\n')
    code, _, err = run(capfd, "convert", tmp_path / "in.jsonl", tmp_path / "o.row",
                       "-s", "id BIGINT NOT NULL")
    assert code == 1 and "NOT NULL" in err
    code, _, err = run(capfd, "convert", tmp_path / "in.jsonl", tmp_path / "o.parquet",
                       "-s", "id BIGINT NOT NULL")
    assert code == 1
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl"]


def _leftovers(tmp_path, *keep):
    return sorted(set(os.listdir(tmp_path)) - set(keep))


@pytest.mark.parametrize("ext", ["row"] + FORMATS + ["csv"])
def test_convert_failing_midway_leaves_no_file(capfd, tmp_path, ext):
    # Batches of one row: two are written, then a value cannot be converted.
    (tmp_path / "in.jsonl").write_text('{"id": 1}\n{"id": 2}\n{"id": "x"}\n')
    code, _, err = run(capfd, "convert", tmp_path / "in.jsonl", tmp_path / f"o.{ext}",
                       "-s", "id BIGINT NOT NULL", "--batch-size", "1")
    assert code == 1 and "'x'" in err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert _leftovers(tmp_path, "in.jsonl") == []       # no output, no temporary file


@pytest.mark.parametrize("ext", FORMATS + ["csv"])
def test_convert_sink_failing_after_the_first_batch_leaves_no_file(capfd, small, tmp_path,
                                                                    monkeypatch, ext):
    import errno
    from rowformat.cli import sinks
    out = tmp_path / f"o.{ext}"
    real_write = sinks.FileSink.write
    staged = []

    def write(self, batch):
        if staged:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(self, batch)
        # the first batch went to a hidden temporary file beside the output
        staged.extend(_leftovers(tmp_path, "small.row", "flat.row"))
    monkeypatch.setattr(sinks.FileSink, "write", write)
    src = small if ext != "csv" else _flat(small, tmp_path)
    schema = SMALL if ext != "csv" else FLAT
    code, _, err = run(capfd, "convert", src, out, "-s", schema, "--batch-size", "4")
    assert code == 1 and "No space left on device" in err
    assert "Exception ignored" not in err
    assert len(staged) == 1 and staged[0].startswith(f".{out.name}.") \
        and staged[0].endswith(".tmp")
    assert _leftovers(tmp_path, "small.row", "flat.row") == []


def test_convert_streams_in_batches_with_progress(capfd, tmp_path):
    path = tmp_path / "big.row"
    with rowformat.RowFileWriter(path, "id BIGINT NOT NULL") as w:
        w.write(pa.table({"id": pa.array(range(5000), pa.int64())}))
    code, _, err = run(capfd, "convert", path, tmp_path / "big.jsonl", "-s", "id BIGINT NOT NULL",
                       "--batch-size", "1000", "--progress")
    assert code == 0, err
    assert "5000/5000" in err and "rows" in err
    assert len((tmp_path / "big.jsonl").read_text().splitlines()) == 5000


def test_plain_progress_without_rich(capfd, tmp_path, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_rich(name, *args, **kwargs):
        if name.startswith("rich"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_rich)
    path = tmp_path / "p.row"
    with rowformat.RowFileWriter(path, "id INT") as w:
        w.write_rows([(i,) for i in range(10)])
    code, _, err = run(capfd, "convert", path, tmp_path / "p.csv", "-s", "id INT", "--progress")
    assert code == 0
    assert "p.row -> p.csv: 10/10 rows (100%)\n" in err


def test_convert_to_and_from_a_memory_url(capfd, small, tmp_path):
    fsspec = pytest.importorskip("fsspec")
    url = "memory://rowformat-cli-test/small.parquet"
    try:
        assert run(capfd, "convert", small, url, "-s", SMALL, "-q")[0] == 0
        assert run(capfd, "convert", url, "memory://rowformat-cli-test/back.row",
                   "--block-size", "64", "-q")[0] == 0
        with fsspec.open("memory://rowformat-cli-test/back.row", "rb") as f:
            assert f.read() == small.read_bytes()
        code, out, _ = run(capfd, "inspect", "memory://rowformat-cli-test/back.row", "--json")
        assert code == 0 and json.loads(out)["footer"]["total_rows"] == 10
    finally:
        fsspec.filesystem("memory").rm("rowformat-cli-test", recursive=True)


# -- the installed command ------------------------------------------------------------------------

def _entry_point() -> pathlib.Path:
    exe = pathlib.Path(sys.executable).parent / ("rowformat.exe" if os.name == "nt" else "rowformat")
    if not exe.exists():
        pytest.fail(f"the rowformat entry point is not installed beside {sys.executable}")
    return exe


def test_installed_entry_point(small, tmp_path):
    proc = subprocess.run([str(_entry_point()), "cat", str(small), "-s", SMALL, "--rows", "1:3",
                           "-f", "csv", "-c", "id,name"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == '"id","name"\n1,"n1"\n2,"n2"\n'
    proc = subprocess.run([str(_entry_point()), "cat", str(small)], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 2 and "no schema" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "rowformat", "--version"], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == f"rowformat {rowformat.__version__}\n"


def test_debug_works_after_the_command_too(capfd, small, monkeypatch):
    def boom(args, out):
        raise RuntimeError("boom")
    monkeypatch.setattr(cli, "cmd_head", boom)
    for argv in (["--debug", "head", small, "-s", SMALL], ["head", small, "-s", SMALL, "--debug"]):
        code, out, err = run(capfd, *argv)
        assert code == 3 and "Traceback" in err and "RuntimeError: boom" in err, argv
    code, out, err = run(capfd, "head", small, "-s", SMALL)
    assert code == 3 and "Traceback" not in err and "run with --debug" in err


def test_a_schema_path_that_does_not_exist_is_named_as_a_missing_file(capfd, small, tmp_path):
    for spec in (tmp_path / "nope" / "schema.json", "schema.json"):
        code, out, err = run(capfd, "head", small, "-s", spec)
        assert (code, err) == (2, f"rowformat head: error: --schema {spec}: no such file or directory\n")


def test_directories_that_are_not_files_get_a_message_naming_them(capfd, tmp_path):
    (tmp_path / "d").mkdir()
    code, out, err = run(capfd, "verify", tmp_path / "d", "-s", SMALL)
    assert code == 2
    assert err == (f"rowformat verify: error: {tmp_path / 'd'} is a directory, not a .row file "
                   f"nor a Paimon table directory (no schema/schema-N)\n")


def test_verify_with_a_wrong_schema_says_so_once(capfd, tmp_path):
    path = tmp_path / "many.row"
    with rowformat.RowFileWriter(path, SMALL) as w:
        w.write_rows([(i, "x" * 5, 1.0, [1, 2]) for i in range(500)])
    code, out, err = run(capfd, "verify", path, "-s", "id BIGINT NOT NULL, name STRING")
    lines = out.splitlines()
    assert code == 1
    assert len(lines) == 3 + 1 + 1 + 1          # three shown, the count, the hint, the verdict
    assert lines[3].startswith("... and 97 more rows: the row's bytes do not match the schema")
    assert lines[4].startswith("hint: 100 rows or more do not decode while the file's blocks are "
                               "sound: the schema given is probably not the one")
    assert lines[5] == f"FAILED {path}: 100 problem(s)"
    # the right schema: no problem, no suspicion
    report = rowformat.verify(path, SMALL)
    assert report.ok and not report.schema_suspect


def test_column_names_print_escaped_in_csv_headers_and_json_keys(capfd, tmp_path):
    """Issue 37, item 12: a column named with ESC, CR LF, a C1 CSI or a bidi
    override printed raw in a CSV header and as a JSON-lines key (JSON
    escapes only C0 controls). The header escapes them as every printed name
    is; JSON lines escape every non-printable character as \\uXXXX, which
    parses back to the same string."""
    name = "a\x1b[2K\r\nb\x9bc\u202ed"
    from rowformat.arrow_types import as_row_type
    schema = as_row_type(pa.schema([(name, pa.int64()), ("s", pa.string())]))
    path, schema_file = tmp_path / "evil.row", tmp_path / "schema.json"
    schema_file.write_text(schema_json.dumps(schema))
    with rowformat.RowFileWriter(path, schema) as w:
        w.write_rows([(1, "x\u202ey\x9b")])
    code, out, err = run(capfd, "cat", path, "-s", schema_file, "--format", "csv")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == '"a\\x1b[2K\\r\\nb\\x9bc\\u202ed","s"'
    code, out, err = run(capfd, "cat", path, "-s", schema_file, "--format", "jsonl")
    assert (code, err) == (0, "")
    assert out == '{"a\\u001b[2K\\r\\nb\\u009bc\\u202ed": 1, "s": "x\\u202ey\\u009b"}\n'
    assert json.loads(out) == {name: 1, "s": "x\u202ey\x9b"}
