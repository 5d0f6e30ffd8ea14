"""from_fory / to_fory: Fory rows in Spark columns, exact bytes both ways
(pyfory for Standard, the Fory Java vectors in tests/data for both)."""
import datetime as dt
import json
import os
import time
import warnings

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from rowformat.errors import MalformedRowError, SchemaError
from rowformat.fory import RowEncoder
from rowformat.spark import from_fory, to_fory
from rowformat.spark.fory_columns import fory_schemas
from tests.fuzz._schemas import FORY_VECTORS, fory_arrow_schema

VECTORS = json.loads(FORY_VECTORS.read_text())["vectors"]


def _rows_df(spark, rows):
    return spark.createDataFrame([(i, r) for i, r in enumerate(rows)], "i INT, b BINARY")


def test_every_vector_round_trips_through_spark_to_the_same_bytes(spark):
    """Each vector (Standard and Compact, every type Spark has) decodes to
    a struct and encodes back to its exact bytes; a null stays null."""
    done = []
    for v in VECTORS:
        schema = fory_arrow_schema(v["schema"])
        data = bytes.fromhex(v["hex"])
        try:
            fory_schemas(schema)
        except SchemaError:
            continue                    # (no such Spark type)
        df = _rows_df(spark, [data, None, data])
        out = (df.select("i", from_fory("b", schema, v["variant"]).alias("s"))
               .select("i", "s", to_fory("s", v["variant"], schema=schema).alias("back"))
               .orderBy("i").collect())
        assert [r.back for r in out] == [data, None, data], v["name"]
        assert out[1].s is None
        expected = RowEncoder(schema, v["variant"]).decode(data)
        got = out[0].s.asDict(recursive=True)
        assert got.keys() == expected.keys(), v["name"]
        done.append(v["name"])
    assert len(done) == len(VECTORS)    # Spark has a type for each vector's fields
    assert {v["variant"] for v in VECTORS if v["name"] in done} == {"standard", "compact"}


def test_values_and_pyfory_bytes_of_a_spark_struct(spark):
    """to_fory of a struct built in Spark equals pyfory's bytes for the same
    schema; from_fory gives the values back, field by field."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pyfory.format as pf
    df = spark.sql(
        "SELECT named_struct('id', CAST(7 AS BIGINT), 'small', CAST(-3 AS TINYINT), "
        "'n', 12, 'x', 2.5D, 'f', CAST(1.5 AS FLOAT), 'ok', true, 'name', 'héllo', "
        "'raw', X'00FF', 'day', DATE'2024-02-29', "
        "'ts', TIMESTAMP_NTZ'2024-01-02 03:04:05.123456', 'tags', array('a', 'bc'), "
        "'m', map('k', 1), 'p', named_struct('x', 1, 'y', 'z')) AS s")
    schema = pa.schema([
        ("id", pa.int64()), ("small", pa.int8()), ("n", pa.int32()), ("x", pa.float64()),
        ("f", pa.float32()), ("ok", pa.bool_()), ("name", pa.string()), ("raw", pa.binary()),
        ("day", pa.date32()), ("ts", pa.timestamp("us")), ("tags", pa.list_(pa.string())),
        ("m", pa.map_(pa.string(), pa.int32())),
        ("p", pa.struct([("x", pa.int32()), ("y", pa.string())]))])
    value = {"id": 7, "small": -3, "n": 12, "x": 2.5, "f": 1.5, "ok": True, "name": "héllo",
             "raw": b"\x00\xff", "day": dt.date(2024, 2, 29),
             "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123456), "tags": ["a", "bc"],
             "m": {"k": 1}, "p": {"x": 1, "y": "z"}}
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"            # pyfory converts naive datetimes in local time
    time.tzset()
    try:
        theirs = pf.create_row_encoder(pf.from_arrow_schema(schema)).to_row(value).to_bytes()
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()
    row = df.select(to_fory("s").alias("b")).collect()[0]
    assert row.b == theirs
    back = _rows_df(spark, [theirs]).select(from_fory("b", schema).alias("s")).collect()[0].s
    assert back.asDict(recursive=True) == {**value, "m": {"k": 1}, "p": {"x": 1, "y": "z"}}
    # DDL and a StructType name the same schema
    ddl = ("id BIGINT, small TINYINT, n INT, x DOUBLE, f FLOAT, ok BOOLEAN, name STRING, "
           "raw BINARY, day DATE, ts TIMESTAMP_NTZ, tags ARRAY<STRING>, m MAP<STRING, INT>, "
           "p STRUCT<x: INT, y: STRING>")
    by_ddl = _rows_df(spark, [theirs]).select(from_fory("b", ddl).alias("s")).collect()[0].s
    assert by_ddl == back


def test_malformed_rows_permissive_and_failfast(spark):
    schema = "id BIGINT, name STRING"
    enc = RowEncoder(pa.schema([("id", pa.int64()), ("name", pa.string())]))
    good = [enc.encode({"id": i, "name": f"n{i}"}) for i in range(4)]
    bad = good[1][:12]                                  # cut short: not a row
    liar = bytearray(good[2])
    liar[16:24] = ((24 << 32) | 100000).to_bytes(8, "little")   # name: 100000 bytes
    df = _rows_df(spark, [good[0], bad, None, bytes(liar), good[3]])
    rows = df.select("i", from_fory("b", schema).alias("s")).orderBy("i").collect()
    assert [r.s and (r.s.id, r.s.name) for r in rows] == [(0, "n0"), None, None, None, (3, "n3")]
    rows = (df.select("i", from_fory("b", schema, error_column="_error").alias("s"))
            .orderBy("i").collect())
    assert [(r.s.id, r.s.name) if r.s else None for r in rows] == \
        [(0, "n0"), (None, None), None, (None, None), (3, "n3")]
    assert rows[0].s._error is None and rows[4].s._error is None
    assert rows[1].s._error and rows[3].s._error
    with pytest.raises(Exception) as e:
        df.select(from_fory("b", schema, mode="FAILFAST")).collect()
    assert "FAILFAST" in str(e.value) and "row 1" in str(e.value)
    with pytest.raises(ValueError):
        from_fory("b", schema, mode="DROPMALFORMED")


def test_to_fory_fast_path_names_the_bad_schema(spark):
    with pytest.raises(SchemaError):
        to_fory(F.col("s"), schema=pa.schema([("h", pa.float16())]))


def test_the_udf_bodies_take_slices_and_nulls():
    """The Arrow functions alone (no Spark): a sliced struct array (its
    children unsliced) encodes its own rows; nulls stay in place."""
    from rowformat.spark.fory_columns import FromFory, ToFory
    structs = pa.StructArray.from_arrays(
        [pa.array(range(6), pa.int64()), pa.array(["a", None, "c", "d", "e", "f"])],
        names=["id", "s"], mask=pa.array([False, False, True, False, False, False]))
    part = structs.slice(1, 4)                        # rows 1..4, row 2 null
    rows = ToFory(None, "standard")(part)
    enc = RowEncoder(pa.schema([("id", pa.int64()), ("s", pa.string())]))
    assert rows.to_pylist() == [enc.encode({"id": 1, "s": None}), None,
                                enc.encode({"id": 3, "s": "d"}), enc.encode({"id": 4, "s": "e"})]
    back = FromFory(enc.schema, "standard", "PERMISSIVE", structs.type, None)(rows)
    assert back.to_pylist() == [{"id": 1, "s": None}, None, {"id": 3, "s": "d"},
                                {"id": 4, "s": "e"}]
    # FAILFAST names the row by its place in the batch, nulls counted
    strict = FromFory(enc.schema, "standard", "FAILFAST", structs.type, None)
    with pytest.raises(MalformedRowError, match=r"row 2 is not a Fory standard row"):
        strict(pa.array([rows[0].as_py(), None, b"\x00" * 3], pa.binary()))
