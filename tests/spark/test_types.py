"""Paimon <-> Spark type mapping, and a Spark round trip of every type."""
import datetime as dt
import decimal

import pytest
from pyspark.sql import types as T

import rowformat
from rowformat.errors import SchemaError
from rowformat import schema_json
from rowformat.paimon import tables as tb
from rowformat.spark.spark_types import (from_spark_schema, from_spark_type, same_spark_type,
                                   to_spark_schema)

FORMAT = "paimon-row"

# Every Spark type with a Paimon counterpart, nested ones included.
SPARK_SCHEMA = T.StructType([
    T.StructField("id", T.LongType(), False),
    T.StructField("b", T.BooleanType()),
    T.StructField("i8", T.ByteType()),
    T.StructField("i16", T.ShortType()),
    T.StructField("i32", T.IntegerType()),
    T.StructField("f32", T.FloatType()),
    T.StructField("f64", T.DoubleType()),
    T.StructField("s", T.StringType()),
    T.StructField("bin", T.BinaryType()),
    T.StructField("d_small", T.DecimalType(10, 2)),
    T.StructField("d_big", T.DecimalType(38, 10)),
    T.StructField("day", T.DateType()),
    T.StructField("ts", T.TimestampType()),
    T.StructField("ts_ntz", T.TimestampNTZType()),
    T.StructField("arr", T.ArrayType(T.IntegerType(), True)),
    T.StructField("arr_nn", T.ArrayType(T.StringType(), False), False),
    T.StructField("m", T.MapType(T.StringType(), T.DoubleType(), True)),
    T.StructField("st", T.StructType([
        T.StructField("x", T.IntegerType(), False),
        T.StructField("tags", T.ArrayType(T.StringType())),
        T.StructField("inner", T.StructType([T.StructField("z", T.StringType())]))])),
    T.StructField("arr_st", T.ArrayType(T.StructType([T.StructField("k", T.LongType())]))),
])

EXPECTED_PAIMON = (
    "id BIGINT NOT NULL, b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INT, f32 FLOAT, f64 DOUBLE, "
    "s STRING, bin BYTES, d_small DECIMAL(10, 2), d_big DECIMAL(38, 10), day DATE, "
    "ts TIMESTAMP(6) WITH LOCAL TIME ZONE, ts_ntz TIMESTAMP(6), arr ARRAY<INT>, "
    "arr_nn ARRAY<STRING NOT NULL> NOT NULL, m MAP<STRING NOT NULL, DOUBLE>, "
    "st ROW<x INT NOT NULL, tags ARRAY<STRING>, inner ROW<z STRING>>, "
    "arr_st ARRAY<ROW<k BIGINT>>")

UTC = dt.timezone.utc
ROWS = [
    (0, True, -128, -32768, -2**31, 1.5, -2.25, "héllo", b"\x00\xff", decimal.Decimal("12345678.90"),
     decimal.Decimal("-1234567890123456789012345678.0123456789"), dt.date(1969, 12, 31),
     dt.datetime(2024, 2, 29, 23, 59, 59, 999999), dt.datetime(1900, 1, 1, 0, 0, 0, 1),
     [1, None, 3], ["a", ""], {"k": 1.0, "n": None},
     (7, ["t", None], ("zz",)), [(1,), None, (None,)]),
    (1, None, None, None, None, None, None, None, None, None, None, None, None, None,
     None, [], None, None, None),
    (2, False, 127, 32767, 2**31 - 1, float("inf"), 1e300, "", b"", decimal.Decimal("-0.01"),
     decimal.Decimal("0E-10"), dt.date(9999, 12, 31), dt.datetime(1970, 1, 1),
     dt.datetime(2262, 4, 11, 23, 47, 16, 854775), [], ["x"], {}, (0, [], None), []),
]


def stored(path):
    """The schema of the Paimon table at ``path``, as pypaimon reads it."""
    return tb.row_type(tb.open_table(path))


def test_spark_to_paimon_mapping():
    assert str(from_spark_schema(SPARK_SCHEMA)) == EXPECTED_PAIMON
    # And back: the stored types map to exactly the Spark schema written.
    assert to_spark_schema(rowformat.schema(EXPECTED_PAIMON)) == SPARK_SCHEMA


def test_paimon_only_types_map_to_spark():
    got = to_spark_schema(rowformat.schema(
        "c CHAR(3) NOT NULL, vc VARCHAR(5), bn BINARY(4), blob BLOB, t TIME(3), t9 TIME(9), "
        "ts3 TIMESTAMP(3), ts9 TIMESTAMP(9) WITH LOCAL TIME ZONE, v VARIANT, "
        "vec VECTOR(3, FLOAT), ms MULTISET<STRING>"))
    assert got == T.StructType([
        T.StructField("c", T.StringType(), False), T.StructField("vc", T.StringType()),
        T.StructField("bn", T.BinaryType()), T.StructField("blob", T.BinaryType()),
        T.StructField("t", T.TimeType(3)), T.StructField("t9", T.TimeType(6)),
        T.StructField("ts3", T.TimestampNTZType()), T.StructField("ts9", T.TimestampType()),
        T.StructField("v", T.VariantType()),
        T.StructField("vec", T.ArrayType(T.FloatType(), False)),
        T.StructField("ms", T.MapType(T.StringType(), T.IntegerType(), False))])


@pytest.mark.parametrize("spark_type", [
    T.DayTimeIntervalType(), T.YearMonthIntervalType(), T.NullType(), T.CalendarIntervalType()])
def test_unmappable_spark_types_name_the_column(spark_type):
    schema = T.StructType([T.StructField("ok", T.IntegerType()),
                           T.StructField("bad", T.StructType([T.StructField("x", spark_type)]))])
    with pytest.raises(SchemaError, match=r"column 'bad': column 'x': Spark type .* has no Paimon"):
        from_spark_schema(schema)



def _spark_chain(kind, n):
    t = T.IntegerType()
    for _ in range(n):
        t = {"array": lambda t: T.ArrayType(t, True),
             "struct": lambda t: T.StructType([T.StructField("a", t, True)]),
             "map": lambda t: T.MapType(T.IntegerType(), t, True)}[kind](t)
    return t


@pytest.mark.parametrize("kind", ["array", "struct", "map"])
def test_deep_spark_schemas_are_a_schema_error(kind):
    # 400 levels: pyspark itself recurses building a StructType much deeper
    deep = T.StructType([T.StructField("a", _spark_chain(kind, 400), True)])
    with pytest.raises(SchemaError, match="nested deeper than 64 levels"):
        from_spark_schema(deep)
    with pytest.raises(SchemaError, match="nested deeper than 64 levels"):
        from_spark_type(_spark_chain(kind, 3000))
    with pytest.raises(SchemaError, match="nested deeper than 64 levels"):
        same_spark_type(deep, deep)


@pytest.mark.parametrize("kind, n", [("array", 62), ("struct", 62), ("map", 31)])
def test_spark_schemas_at_and_past_the_limit(kind, n):
    at = T.StructType([T.StructField("a", _spark_chain(kind, n), True)])
    row_type = from_spark_schema(at)
    assert row_type.depth == 64
    assert same_spark_type(to_spark_schema(row_type), at)
    past = T.StructType([T.StructField("a", T.ArrayType(_spark_chain(kind, n)), True)])
    with pytest.raises(SchemaError, match="nested deeper than 64 levels"):
        from_spark_schema(past)

def test_schema_json_round_trip_nested():
    row_type = rowformat.schema(EXPECTED_PAIMON + ", vec VECTOR(2, INT) NOT NULL, "
                                "ms MULTISET<STRING NOT NULL>, v VARIANT")
    doc = {"fields": schema_json.to_json_fields(row_type)}
    assert doc["fields"][0] == {"id": 0, "name": "id", "type": "BIGINT NOT NULL"}
    assert doc["fields"][15]["type"] == {"type": "ARRAY NOT NULL", "element": "STRING NOT NULL"}
    assert doc["fields"][17]["type"]["type"] == "ROW"
    assert doc["fields"][17]["type"]["fields"][0] == {"id": 18, "name": "x", "type": "INT NOT NULL"}
    assert schema_json.highest_field_id(doc["fields"]) == 26
    assert schema_json.loads(doc) == row_type
    # The plain "type string" shape is accepted too.
    assert schema_json.loads({"fields": [{"id": 0, "name": "a", "type": "ARRAY<INT> NOT NULL"}]}) \
        == rowformat.schema("a ARRAY<INT> NOT NULL")


def test_round_trip_every_spark_type(spark, tmp_path):
    path = str(tmp_path / "all")
    df = spark.createDataFrame(ROWS, SPARK_SCHEMA)
    df.write.format(FORMAT).mode("append").save(path)
    assert str(stored(path)) == EXPECTED_PAIMON
    back = spark.read.format(FORMAT).load(path)
    assert back.schema == SPARK_SCHEMA
    got = [tuple(r) for r in back.orderBy("id").collect()]
    expected = [tuple(r) for r in df.orderBy("id").collect()]
    assert got == expected
    # Spells out a few values, not only "what Spark gave back".
    assert got[0][12] == dt.datetime(2024, 2, 29, 23, 59, 59, 999999)     # session tz is UTC
    assert got[0][16] == {"k": 1.0, "n": None}
    assert got[1][1:15] == (None,) * 14 and got[1][15] == []


def test_round_trip_variant_and_time(spark, tmp_path):
    path = str(tmp_path / "vt")
    df = spark.sql("select id, parse_json(case when id = 1 then null else "
                   "'{\"a\": ' || id || ', \"b\": [true, null]}' end) as v from range(3)")
    df.write.format(FORMAT).mode("overwrite").save(path)
    assert str(stored(path)) == "id BIGINT NOT NULL, v VARIANT"
    got = spark.read.format(FORMAT).load(path).orderBy("id").collect()
    assert [None if r.v is None else r.v.toJson() for r in got] == \
        ['{"a":0,"b":[true,null]}', None, '{"a":2,"b":[true,null]}']

    tpath = str(tmp_path / "time")
    rows = [(dt.time(0, 0, 0),), (None,), (dt.time(23, 59, 59, 999000),)]
    spark.createDataFrame(rows, "t time(3)").write.format(FORMAT).mode("append").save(tpath)
    assert str(stored(tpath)) == "t TIME(3)"
    assert [r.t for r in spark.read.format(FORMAT).load(tpath).collect()] == [r[0] for r in rows]


def test_paimon_schema_option_stores_paimon_only_types(spark, tmp_path):
    path = str(tmp_path / "paimon")
    # (BLOB columns need a data-evolution table: pypaimon stores them in .blob files;
    # pypaimon 2.1 has no MULTISET.)
    paimon = "c CHAR(3) NOT NULL, blob VARBINARY(10), ts3 TIMESTAMP(3), vec VECTOR(3, FLOAT)"
    df = spark.createDataFrame(
        [("abc", b"\x01\x02", dt.datetime(2020, 1, 2, 3, 4, 5, 123000), [1.0, 2.5, -1.0]),
         ("de", None, None, None)],
        "c string not null, blob binary, ts3 timestamp_ntz, vec array<float>")
    df.write.format(FORMAT).option("paimonSchema", paimon).mode("append").save(path)
    assert stored(path) == rowformat.schema(paimon)
    got = [tuple(r) for r in spark.read.format(FORMAT).load(path).orderBy("c").collect()]
    assert got == [("abc", b"\x01\x02", dt.datetime(2020, 1, 2, 3, 4, 5, 123000), [1.0, 2.5, -1.0]),
                   ("de", None, None, None)]
    # The stored Paimon schema is kept on append, without the option.
    df.write.format(FORMAT).mode("append").save(path)
    assert stored(path) == rowformat.schema(paimon)
    # Sub-millisecond values do not fit TIMESTAMP(3): a clear error.
    bad = spark.createDataFrame([("a", None, dt.datetime(2020, 1, 1, 0, 0, 0, 1), None)],
                                df.schema)
    with pytest.raises(Exception, match="ts3"):
        bad.write.format(FORMAT).mode("append").save(path)


def test_unmappable_column_fails_the_write(spark, tmp_path):
    df = spark.sql("select 1 as id, interval '1' day as span")
    with pytest.raises(Exception, match=r"column 'span'.*no Paimon equivalent"):
        df.write.format(FORMAT).mode("append").save(str(tmp_path / "bad"))
    assert not tb.is_table(str(tmp_path / "bad"))
