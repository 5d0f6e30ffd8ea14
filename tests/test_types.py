import pyarrow as pa
import pytest

import rowformat
from tests._deps import importorskip_pypaimon
from rowformat import SchemaError, schema
from rowformat.arrow_types import from_arrow_schema, from_arrow_type, to_arrow_schema, to_arrow_type
from rowformat.schema_json import dumps, loads
from rowformat.datatypes import parse_type

CANONICAL = [
    "id BIGINT NOT NULL, name STRING, tags ARRAY<STRING>, ts TIMESTAMP(6)",
    "ROW<a INT, b MAP<STRING, DOUBLE>>",
    "b BOOLEAN, t TINYINT, s SMALLINT, i INT, l BIGINT, f FLOAT, d DOUBLE",
    "c CHAR(10) NOT NULL, v VARCHAR(20), bi BINARY(4), vb VARBINARY(8), by BYTES",
    "d1 DECIMAL(10, 2), d2 DECIMAL(38, 18) NOT NULL, d3 DECIMAL(18, 0), d4 DECIMAL(19, 0)",
    "dt DATE, tm TIME(0), tm3 TIME(3), tm9 TIME(9)",
    "ts0 TIMESTAMP(0), ts3 TIMESTAMP(3), ts9 TIMESTAMP(9), ltz TIMESTAMP(6) WITH LOCAL TIME ZONE",
    "v VARIANT, bl BLOB NOT NULL, vec VECTOR<FLOAT, 4>, vec2 VECTOR<BIGINT NOT NULL, 2> NOT NULL",
    "m MAP<VARCHAR(20) NOT NULL, ARRAY<ROW<x INT, y ARRAY<INT NOT NULL>>>>, ms MULTISET<STRING>",
    "r ROW<inner ROW<deep ROW<z BOOLEAN NOT NULL> NOT NULL>>",
    "`weird name` INT, `int` STRING, `a``b` INT",
    "x INT COMMENT 'it''s a comment'",
]


@pytest.mark.parametrize("text", CANONICAL)
def test_canonical_text_round_trips(text):
    assert str(schema(text)) == text
    assert schema(str(schema(text))) == schema(text)


@pytest.mark.parametrize("alias, canonical", [
    ("a INTEGER", "a INT"),
    ("a VARCHAR(2147483647)", "a STRING"),
    ("a VARBINARY(2147483647)", "a BYTES"),
    ("a DECIMAL", "a DECIMAL(10, 0)"),
    ("a DECIMAL(5)", "a DECIMAL(5, 0)"),
    ("a TIMESTAMP", "a TIMESTAMP(6)"),
    ("a TIMESTAMP_LTZ(3)", "a TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ("a TIME", "a TIME(0)"),
    ("a CHAR", "a CHAR(1)"),
    ("a VECTOR(4, FLOAT)", "a VECTOR<FLOAT, 4>"),
    ("a int not null, b string null", "a INT NOT NULL, b STRING"),
    ("a: INT", "a INT"),
    ("a ROW(x INT)", "a ROW<x INT>"),
])
def test_aliases_print_canonically(alias, canonical):
    assert str(schema(alias)) == canonical


@pytest.mark.parametrize("text, fragment", [
    ("a INT,", "a field name"),
    ("a FOO", "a type name"),
    ("a DECIMAL(39, 0)", "precision"),
    ("a DECIMAL(5, 6)", "scale"),
    ("a TIMESTAMP(10)", "precision"),
    ("a ARRAY<INT", "'>'"),
    ("a INT, a STRING", "duplicate"),
    ("a VECTOR<STRING, 3>", "VECTOR elements"),
    ("a GEOMETRY", "not supported"),
    ("a INT NOT", "NULL after NOT"),
    ("a CHAR(0)", "length"),
])
def test_bad_text_names_the_problem(text, fragment):
    with pytest.raises(SchemaError, match=fragment):
        schema(text)


def test_schema_errors_are_rowformat_errors():
    with pytest.raises(rowformat.RowFormatError):
        schema("a NOPE")


def test_row_type_access():
    s = schema("a INT NOT NULL, b ROW<c STRING>")
    assert s.names == ["a", "b"]
    assert s["b"].type == parse_type("ROW<c STRING>")
    assert s.index("b") == 1 and len(s) == 2
    assert not s["a"].type.nullable


ARROW = [
    ("BOOLEAN", pa.bool_()), ("TINYINT", pa.int8()), ("SMALLINT", pa.int16()),
    ("INT", pa.int32()), ("BIGINT", pa.int64()), ("FLOAT", pa.float32()),
    ("DOUBLE", pa.float64()), ("STRING", pa.string()), ("CHAR(3)", pa.string()),
    ("BYTES", pa.binary()), ("BINARY(3)", pa.binary()), ("BLOB", pa.large_binary()),
    ("DECIMAL(38, 10)", pa.decimal128(38, 10)), ("DATE", pa.date32()),
    ("TIME(0)", pa.time32("ms")), ("TIME(6)", pa.time64("us")), ("TIME(9)", pa.time64("ns")),
    ("TIMESTAMP(0)", pa.timestamp("ms")), ("TIMESTAMP(3)", pa.timestamp("ms")),
    ("TIMESTAMP(4)", pa.timestamp("us")), ("TIMESTAMP(6)", pa.timestamp("us")),
    ("TIMESTAMP(7)", pa.timestamp("ns")), ("TIMESTAMP(9)", pa.timestamp("ns")),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", pa.timestamp("us", tz="UTC")),
    ("VARIANT", pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])),
    ("ARRAY<INT NOT NULL>", pa.list_(pa.field("element", pa.int32(), False))),
    ("MAP<STRING, INT>", pa.map_(pa.field("key", pa.string(), False), pa.field("value", pa.int32()))),
    ("MULTISET<STRING>", pa.map_(pa.field("key", pa.string(), False), pa.field("value", pa.int32(), False))),
    ("ROW<a INT NOT NULL, b STRING>", pa.struct([pa.field("a", pa.int32(), False), pa.field("b", pa.string())])),
    ("VECTOR<FLOAT, 3>", pa.list_(pa.field("element", pa.float32(), False), 3)),
]


@pytest.mark.parametrize("text, arrow", ARROW)
def test_to_arrow(text, arrow):
    assert to_arrow_type(parse_type(text)) == arrow


def test_not_null_maps_to_non_nullable_field():
    s = to_arrow_schema(schema("a INT NOT NULL, b INT"))
    assert not s.field("a").nullable and s.field("b").nullable


@pytest.mark.parametrize("arrow, text", [
    (pa.int64(), "BIGINT"), (pa.large_string(), "STRING"), (pa.large_binary(), "BYTES"),
    (pa.binary(5), "BINARY(5)"), (pa.timestamp("s"), "TIMESTAMP(0)"),
    (pa.timestamp("ns", tz="Europe/Paris"), "TIMESTAMP(9) WITH LOCAL TIME ZONE"),
    (pa.time32("s"), "TIME(0)"), (pa.large_list(pa.int8()), "ARRAY<TINYINT>"),
    (pa.map_(pa.string(), pa.float64()), "MAP<STRING NOT NULL, DOUBLE>"),
    (pa.list_(pa.field("x", pa.int16(), False), 2), "VECTOR<SMALLINT NOT NULL, 2>"),
    (pa.dictionary(pa.int8(), pa.string()), "STRING"),
])
def test_from_arrow(arrow, text):
    assert from_arrow_type(arrow) == parse_type(text)


@pytest.mark.parametrize("arrow", [pa.uint8(), pa.float16(), pa.duration("s"),
                                   pa.decimal256(40, 2), pa.null()])
def test_from_arrow_without_mapping_errors(arrow):
    with pytest.raises(SchemaError, match="no Paimon equivalent"):
        from_arrow_schema(pa.schema([pa.field("col", arrow)]))


def test_arrow_schema_round_trip_of_canonical_types():
    s = schema("a BIGINT NOT NULL, b STRING, c DECIMAL(20, 3), d TIMESTAMP(9), "
               "e ARRAY<ROW<x INT, y MAP<STRING NOT NULL, DOUBLE>>>, f DATE, g TIME(3)")
    assert from_arrow_schema(to_arrow_schema(s)) == s


def test_schema_json_round_trip_and_shape():
    s = schema("id INT NOT NULL, tags ARRAY<STRING NOT NULL>, m MAP<STRING NOT NULL, ROW<x INT>>, "
               "v VECTOR<FLOAT, 4>, ms MULTISET<INT> NOT NULL, d DECIMAL(20, 2)")
    text = dumps(s)
    assert loads(text) == s
    import json
    fields = json.loads(text)["fields"]
    assert fields[0] == {"id": 0, "name": "id", "type": "INT NOT NULL"}
    assert fields[1]["type"] == {"type": "ARRAY", "element": "STRING NOT NULL"}
    assert fields[3]["type"] == {"type": "VECTOR", "element": "FLOAT", "length": 4}
    assert fields[4]["type"]["type"] == "MULTISET NOT NULL"
    assert fields[2]["type"]["value"]["fields"][0]["name"] == "x"


def test_schema_json_is_what_pypaimon_parses():
    importorskip_pypaimon()
    from pypaimon.schema.data_types import DataTypeParser
    import json
    s = schema("id INT NOT NULL, name VARCHAR(20), tags ARRAY<STRING>, m MAP<STRING NOT NULL, INT>, "
               "r ROW<a BOOLEAN, b DECIMAL(20, 2)>, ts TIMESTAMP(6)")
    for f, j in zip(s.fields, json.loads(dumps(s))["fields"]):
        parsed = DataTypeParser.parse_data_field(j)
        assert parsed.name == f.name
        assert str(parsed.type).replace(": ", " ") == str(f.type)


@pytest.mark.parametrize("doc", [
    '{"fields": [{"id": 0, "name": "a", "type": 5}]}',
    '{"fields": [5]}',
    '{"fields": [{"id": 0, "name": "a", "type": {"type": 7}}]}',
    '{"fields": [{"id": 0, "name": "v", "type": {"type": "VECTOR", "element": "INT", "length": "x"}}]}',
    '{"fields": [{"id": 0, "name": "r", "type": {"type": "ROW", "fields": 3}}]}',
    '{"fields": [',
    b'\xff\xfe\x00',
])
def test_malformed_schema_json_is_a_schema_error(doc):
    from rowformat import schema_json
    with pytest.raises(rowformat.SchemaError):
        schema_json.loads(doc)
