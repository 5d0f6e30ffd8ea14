"""Zero-copy views and edge values (NaN, -0.0, int extremes, float16,
durations, decimals, time zones, deep nesting)."""
import datetime as dt
import decimal
import math
import struct

import numpy as np
import pyarrow as pa
import pytest

from rowformat.fory import RowEncoder, RowView, ArrayView, MapView, StructView

SCHEMA = pa.schema([
    ("id", pa.int64()), ("age", pa.int32()), ("name", pa.string()),
    ("tags", pa.list_(pa.string())), ("m", pa.map_(pa.string(), pa.int64())),
    ("pos", pa.struct([("x", pa.int16()), ("y", pa.float32())])), ("none", pa.int8()),
])
VALUE = {"id": -(2**63), "age": 2**31 - 1, "name": "Zoë", "tags": ["a", None, ""],
         "m": [("k", 1), ("z", None)], "pos": {"x": -32768, "y": -0.0}, "none": None}


@pytest.mark.parametrize("layout", ["standard", "compact"])
def test_view_access(layout):
    data = RowEncoder(SCHEMA, layout).encode(VALUE)
    for buf in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        v = RowView(SCHEMA, buf, layout=layout)
        assert v.get_int64(0) == -(2**63) and v["id"] == -(2**63) and v.id == -(2**63)
        assert v.get_int32(1) == 2**31 - 1
        assert v.get_str(2) == "Zoë" == v["name"]
        tags = v.get_array(3)
        assert isinstance(tags, ArrayView) and len(tags) == 3
        assert tags.get_str(0) == "a" and tags[1] is None and tags.is_null(1) and tags[-1] == ""
        assert list(tags) == ["a", None, ""]
        m = v["m"]
        assert isinstance(m, MapView) and len(m) == 2
        assert m.keys().to_list() == ["k", "z"] and m.values().to_list() == [1, None]
        assert m.items() == [("k", 1), ("z", None)]
        pos = v.get_struct(5)
        assert isinstance(pos, StructView) and pos.get_int16(0) == -32768
        assert math.copysign(1, pos.get_float32(1)) == -1.0
        assert v.get_int8(6) is None and v.is_null("none") and v["none"] is None
        assert v.to_dict() == VALUE
        assert v.keys() == SCHEMA.names
    v = RowView(SCHEMA, data, layout=layout)
    with pytest.raises(TypeError):
        v.get_int32(0)
    with pytest.raises(IndexError):
        v.get_int64(7)
    with pytest.raises(KeyError):
        v["missing"]
    with pytest.raises(IndexError):
        v.get_array(3)[3]


def test_view_outlives_its_source_and_offset():
    enc = RowEncoder(SCHEMA)
    data = enc.encode(VALUE)
    buf = bytearray(b"\x00" * 16 + data)
    tags = enc.view(buf, 16).get_array(3)
    del enc
    assert tags.to_list() == ["a", None, ""]
    assert RowView(SCHEMA, buf, offset=16).to_bytes() == data


def test_view_reads_one_slot_only():
    # Corrupt the list body: reading scalar fields still works (no full decode),
    # reading the list raises.
    enc = RowEncoder(SCHEMA)
    data = bytearray(enc.encode(VALUE))
    struct.pack_into("<I", data, 8 + 3 * 8 + 4, 0xFFFFFF)
    v = RowView(SCHEMA, data)
    assert v.get_int64(0) == -(2**63) and v.get_str(2) == "Zoë"
    with pytest.raises(Exception, match="outside"):
        v.get_array(3)


EDGE = pa.schema([
    ("f16", pa.float16()), ("f32", pa.float32()), ("f64", pa.float64()),
    ("dur", pa.duration("us")), ("dec", pa.decimal128(38, 10)), ("big", pa.decimal256(76, 0)),
    ("tz", pa.timestamp("us", tz="UTC")), ("ts", pa.timestamp("us")), ("d", pa.date32()),
    ("b", pa.binary()), ("i8", pa.int8()), ("i16", pa.int16()),
])


@pytest.mark.parametrize("layout", ["standard", "compact"])
def test_edge_values(layout):
    enc = RowEncoder(EDGE, layout)
    v = {"f16": 65504.0, "f32": float("-inf"), "f64": float("nan"),
         "dur": dt.timedelta(days=-3, microseconds=7),
         "dec": decimal.Decimal("-1234567890123456789012345678.0123456789"),
         "big": decimal.Decimal(-(10**76 - 1)),
         "tz": dt.datetime(2000, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2))),
         "ts": dt.datetime(1, 1, 1), "d": dt.date(9999, 12, 31), "b": b"", "i8": -128, "i16": 32767}
    out = enc.decode(enc.encode(v))
    assert out["f16"] == 65504.0 and out["f32"] == float("-inf") and math.isnan(out["f64"])
    assert out["dur"] == v["dur"] and out["dec"] == v["dec"] and out["big"] == v["big"]
    assert out["tz"] == v["tz"] and out["tz"].tzinfo is not None
    assert out["ts"] == v["ts"] and out["d"] == v["d"] and out["b"] == b""
    assert (out["i8"], out["i16"]) == (-128, 32767)
    # Arrow paths agree with the Python path
    arrow_v = dict(v, f16=np.float16(65504.0))
    batch = pa.RecordBatch.from_pylist([arrow_v], schema=EDGE)
    rows = enc.encode_batch(batch)
    assert rows[0].as_py() == enc.encode(v)
    back = enc.decode_batch(rows)
    assert back.column("dec")[0].as_py() == v["dec"] and back.column("big")[0].as_py() == v["big"]
    assert back.column("tz")[0].as_py() == v["tz"] and back.column("f16")[0].as_py() == np.float16(65504.0)
    # Fory layout of a decimal: 32-byte little-endian two's complement
    if layout == "standard":
        row = enc.encode({"dec": decimal.Decimal("-0.0000000001")})
        off = struct.unpack_from("<I", row, 8 + 4 * 8 + 4)[0]
        assert struct.unpack_from("<I", row, 8 + 4 * 8)[0] == 32
        assert row[off:off + 32] == (-1).to_bytes(32, "little", signed=True)


@pytest.mark.parametrize("layout", ["standard", "compact"])
def test_deep_nesting(layout):
    t = pa.int32()
    v = 5
    for depth in range(30):
        if depth % 3 == 0:
            t, v = pa.list_(t), [v, None]
        elif depth % 3 == 1:
            t, v = pa.struct([("a", t), ("s", pa.string())]), {"a": v, "s": "x" * depth}
        else:
            t, v = pa.map_(pa.string(), t), [("k", v)]
    schema = pa.schema([("deep", t)])
    enc = RowEncoder(schema, layout)
    data = enc.encode({"deep": v})
    assert enc.decode(data) == {"deep": v}
    assert enc.decode_batch(enc.encode_batch(pa.RecordBatch.from_pylist([{"deep": v}], schema=schema))
                            ).to_pylist() == [{"deep": v}]


def test_compact_inline_struct_is_in_place():
    schema = pa.schema([("p", pa.struct([pa.field("x", pa.int32(), False), pa.field("y", pa.int16(), False)]))])
    enc = RowEncoder(schema, "compact")
    assert enc.encode({"p": {"x": 1, "y": 2}}) == bytes.fromhex("01000000" "0200" "00")
    assert enc.encode({"p": None}) == bytes.fromhex("000000000000" "01")
