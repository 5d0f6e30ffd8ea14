"""Schemas and seed inputs shared by the fuzz targets and their replay test.

An input of ``fuzz_row_reader`` is one selector byte then a payload:

* selector % 2 == 0: the payload is a whole ``.row`` file (footer, index,
  ZSTD blocks); read through ``RowFileReader`` and ``rowformat.verify``;
* selector % 2 == 1: the payload is one *decompressed* block, fed straight
  to ``Block`` and ``RowDecoder`` (mutations of compressed frames rarely get
  past ZSTD, so this reaches the row decoder far more often);

and ``SCHEMAS[(selector // 2) % len(SCHEMAS)]`` is the schema.
"""
from __future__ import annotations

import datetime as dt
import io
import math
import pathlib
from decimal import Decimal

import pyarrow as pa

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
FIXTURE_ROW = DATA / "java-written-fixture.row"
FORY_VECTORS = DATA / "fory-vectors.json"

FIXTURE_SCHEMA = ("id INT, name VARCHAR(20), amount DECIMAL(20, 2), ts TIMESTAMP(6), scores ARRAY<INT>, "
                  "attrs MAP<VARCHAR(20) NOT NULL, INT>, nested ROW<flag BOOLEAN, note VARCHAR(20)>")

SCHEMAS = [
    FIXTURE_SCHEMA,
    # every scalar type
    "bo BOOLEAN, ti TINYINT, sm SMALLINT, i INT, bi BIGINT, f FLOAT, d DOUBLE, c CHAR(5), s STRING, "
    "b BINARY(3), vb BYTES, bl BLOB, d10 DECIMAL(10, 2), d38 DECIMAL(38, 10), dt DATE, t0 TIME(0), "
    "t9 TIME(9), ts3 TIMESTAMP(3), ts9 TIMESTAMP(9), ltz TIMESTAMP(6) WITH LOCAL TIME ZONE, nn BIGINT NOT NULL",
    # nesting, VARIANT, VECTOR, MULTISET
    "v VARIANT, a ARRAY<INT>, aa ARRAY<ARRAY<STRING>>, m MAP<STRING, ARRAY<INT>>, ms MULTISET<INT>, "
    "r ROW<x INT NOT NULL, y ROW<z STRING>>, vec VECTOR<DOUBLE, 2>",
    # null placeholders that expand: arrays of vectors and structs
    "av ARRAY<VECTOR<DOUBLE, 64>>, ar ARRAY<ROW<a BIGINT, b DECIMAL(38, 2), c TIMESTAMP(9)>>, "
    "vn VECTOR<FLOAT, 16>",
    # nested nullable vectors, and a null width past the fuzz max_row_size / 1024
    "aav ARRAY<ARRAY<VECTOR<BIGINT, 32>>>, rv ROW<v VECTOR<DOUBLE, 128>, w ROW<x VECTOR<INT, 8>>>, "
    "mv MAP<INT, VECTOR<FLOAT, 16>>, wide VECTOR<BIGINT, 4096>",
    # empty rows: no bytes on disk, a struct slot in Arrow, a dict in Python
    "e ARRAY<ROW<>>, ee ARRAY<ARRAY<ROW<>>>, re ROW<a ROW<>, b ARRAY<ROW<>>>, me MAP<INT, ROW<>>, "
    "n INT",
]

_UTC = dt.timezone.utc


def _rows(k: int):
    if k == 0:
        return [(1, "a", Decimal("1.50"), dt.datetime(2024, 1, 2, 3, 4, 5, 6), [1, None, 3],
                 [("x", 1), ("y", None)], {"flag": True, "note": "n"}),
                (None, None, None, None, None, None, None),
                (-7, "é" * 5, Decimal("-123456789012345678.99"), dt.datetime(1960, 1, 1), [],
                 [], {"flag": None, "note": None})]
    if k == 1:
        return [(True, -1, 300, -5, 2**40, 1.5, -math.inf, "abc", "héllo", b"\x00\x01\x02", b"xyz",
                 b"blob", Decimal("12.34"), Decimal("-1.5"), dt.date(2020, 2, 29), dt.time(1, 2, 3),
                 dt.time(23, 59, 59, 999000), dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
                 dt.datetime(2000, 1, 1, 0, 0, 0, 1), dt.datetime(2038, 1, 1, tzinfo=_UTC), 7),
                tuple([None] * 20) + (0,)]
    if k == 2:
        return [({"value": b"\x01", "metadata": b"\x02"}, [1, None], [["a", None], None, []],
                 [("k", [1, None]), ("", None)], [(5, 2)], {"x": 1, "y": {"z": "deep"}}, [1.0, -2.0]),
                tuple([None] * 7)]
    if k == 3:
        return [([[0.5] * 64, None, None], [{"a": 1, "b": Decimal("2.00"), "c": None}, None],
                 [1.0] * 16),
                (None, None, None)]
    if k == 4:
        return [([[[1] * 32, None], None, []], {"v": None, "w": {"x": [1] * 8}},
                 [(1, None), (2, [0.5] * 16)], None),
                ([None, [None, None, None]], {"v": [2.0] * 128, "w": None}, None, None),
                (None, None, None, None)]
    return [([{}] * 20, [[{}, None], None, [{}] * 9], {"a": {}, "b": [{}, None]}, [(1, {}), (2, None)], 1),
            ([None] * 9, [], {"a": None, "b": None}, [], None),
            (None, None, None, None, None)]


def seed_files() -> list[tuple[int, bytes]]:
    """(schema number, .row file bytes) of valid files, including the Java fixture."""
    import tempfile

    from rowformat import RowFileWriter, schema

    out = [(0, FIXTURE_ROW.read_bytes())] if FIXTURE_ROW.exists() else []
    with tempfile.TemporaryDirectory() as d:
        for k, text in enumerate(SCHEMAS):
            for block_size in (64, 1 << 16):
                path = pathlib.Path(d) / f"s{k}_{block_size}.row"
                with RowFileWriter(path, schema(text), block_size=block_size, threads=1) as w:
                    w.write_rows(_rows(k))
                out.append((k, path.read_bytes()))
            path = pathlib.Path(d) / f"s{k}_empty.row"
            with RowFileWriter(path, schema(text), threads=1):
                pass
            out.append((k, path.read_bytes()))
    return out


def seed_blocks() -> list[tuple[int, bytes]]:
    """(schema number, decompressed block) of every block of the seed files."""
    import zstandard

    from rowformat import RowFileReader, schema

    out = []
    for k, data in seed_files():
        with RowFileReader(io.BytesIO(data), schema(SCHEMAS[k]), threads=1) as r:
            for b in range(r.num_blocks):
                frame = data[int(r.block_index.offsets[b]):][:int(r.block_index.compressed_sizes[b])]
                out.append((k, zstandard.ZstdDecompressor().decompress(
                    frame, max_output_size=int(r.block_index.uncompressed_sizes[b]) or 1)))
    return out


def row_reader_seeds() -> list[bytes]:
    seeds = [bytes([2 * k]) + data for k, data in seed_files()]
    seeds += [bytes([2 * k + 1]) + block for k, block in seed_blocks()]
    return seeds


# -- Fory -----------------------------------------------------------------

_FORY_SCALARS = {"bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(),
                 "int64": pa.int64(), "float32": pa.float32(), "float64": pa.float64(),
                 "utf8": pa.string(), "binary": pa.binary(), "date32": pa.date32(),
                 "timestamp": pa.timestamp("us")}


def fory_arrow_type(t):
    """The Arrow type of a type in fory-vectors.json (as its meta describes)."""
    k = t["type"]
    if k in _FORY_SCALARS:
        return _FORY_SCALARS[k]
    if k == "list":
        return pa.list_(pa.field("item", fory_arrow_type(t["value"]), t.get("value_nullable", True)))
    if k == "map":
        return pa.map_(fory_arrow_type(t["key"]), fory_arrow_type(t["item"]))
    if k == "struct":
        return pa.struct([pa.field(f["name"], fory_arrow_type(f["type"]), f["nullable"])
                          for f in t["fields"]])
    raise ValueError(k)


def fory_arrow_schema(fields):
    """The Arrow schema of a vector's field list."""
    return pa.schema([pa.field(f["name"], fory_arrow_type(f["type"]), f["nullable"]) for f in fields])


def fory_cases():
    """(arrow schema, layout) of every vector in fory-vectors.json, plus the
    vector bytes: [(schema, layout, bytes)]."""
    import json

    vectors = json.loads(FORY_VECTORS.read_text())["vectors"]
    out = []
    for v in vectors:
        out.append((fory_arrow_schema(v["schema"]), v["variant"], bytes.fromhex(v["hex"])))
    # an extra schema with deep nesting, to reach aliasing amplification
    deep = pa.schema([pa.field("l", pa.list_(pa.list_(pa.list_(pa.int64())))),
                      pa.field("m", pa.map_(pa.string(), pa.list_(pa.string()))),
                      pa.field("d", pa.decimal128(20, 2)), pa.field("t", pa.timestamp("us", tz="UTC")),
                      pa.field("du", pa.duration("us")), pa.field("h", pa.float16())])
    from rowformat.fory import RowEncoder
    for layout in ("standard", "compact"):
        try:
            enc = RowEncoder(deep, layout)
            row = enc.encode({"l": [[[1, 2], []], None, [[3]]], "m": [("a", ["x", None])],
                              "d": Decimal("1.25"), "t": dt.datetime(2020, 1, 1, tzinfo=_UTC),
                              "du": dt.timedelta(seconds=5), "h": 1.5})
        except Exception:      # a type this layout does not support: leave it out
            continue
        out.append((deep, layout, row))
    return out


def fory_seeds(cases) -> list[bytes]:
    return [bytes([k]) + data for k, (_, _, data) in enumerate(cases)]


def seeds_for(target: str) -> list[bytes]:
    """The valid inputs a fuzz target's corpus starts from."""
    if target == "zstd_prefix":
        from tests.fuzz._targets import zstd_prefix_seeds
        return zstd_prefix_seeds()
    return row_reader_seeds() if target == "row_reader" else fory_seeds(fory_cases())
