"""The nesting limit (rowformat.datatypes.MAX_NESTING): every path that accepts a
schema rejects deeper ones with a SchemaError, without recursing (so never
a RecursionError), and everything up to the limit parses, prints, maps and
holds values."""
import json
import sys

import pyarrow as pa
import pytest

from rowformat import (ArrayType, AtomicType, DataField, RowFileReader, RowFileWriter, RowType,
                       SchemaError, from_arrow_schema, from_arrow_type, parse_type, schema,
                       schema_json, to_arrow_schema, to_arrow_type, verify)
from rowformat.arrow_types import arrow_depth, as_row_type
from rowformat.fory import RowEncoder, RowView, schema_bytes, schema_hash
from rowformat.datatypes import MAX_NESTING

TOO_DEEP = "nested deeper than 64 levels"
assert MAX_NESTING == 64


def paimon(kind: str, n: int, leaf: str = "INT") -> tuple[str, object]:
    """``n`` levels of ``kind`` around ``leaf``: type text and a value."""
    text, value = leaf, {"INT": 7, "VARIANT": {"value": b"\x01", "metadata": b"\x02"}}[leaf]
    for _ in range(n):
        if kind == "ARRAY":
            text, value = f"ARRAY<{text}>", [value]
        elif kind == "ROW":
            text, value = f"ROW<a {text}>", {"a": value}
        elif kind == "MAP":          # Arrow map keys are NOT NULL: so the Arrow round trip is exact
            text, value = f"MAP<INT NOT NULL, {text}>", [(1, value)]
        elif kind == "MULTISET":
            text, value = f"MULTISET<{text} NOT NULL>", [(value, 2)]
    return text, value


# Columns that make a schema exactly MAX_NESTING deep (the schema is one
# level; MAP and MULTISET are two, as in Arrow, VARIANT two). One more ARRAY
# around them is one past the limit.
AT_LIMIT = [("ARRAY", 62, "INT"), ("ROW", 62, "INT"), ("MAP", 31, "INT"),
            ("MULTISET", 31, "INT"), ("ARRAY", 61, "VARIANT")]


def arrow(kind: str, n: int):
    t, value = pa.int32(), 7
    for _ in range(n):
        if kind == "list":
            t, value = pa.list_(t), [value]
        elif kind == "struct":
            t, value = pa.struct([("a", t)]), {"a": value}
        else:
            t, value = pa.map_(pa.int32(), t), [(1, value)]
    return t, value


ARROW_AT_LIMIT = [("list", 62), ("struct", 62), ("map", 31)]    # a schema 64 deep


# -- schema text -----------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "a " + "ARRAY<" * 2000 + "INT" + ">" * 2000,
    "a " + "ROW<a " * 2000 + "INT" + ">" * 2000,
    "ROW(a " * 2000 + "INT" + ")" * 2000,
    "a " + "MAP<INT, " * 2000 + "INT" + ">" * 2000,
    "a " + "ARRAY<" * 100_000,                         # unbalanced: still no recursion
])
def test_deep_schema_text_is_a_schema_error(text):
    with pytest.raises(SchemaError, match=TOO_DEEP):
        schema(text)
    with pytest.raises(SchemaError, match=TOO_DEEP):
        parse_type(text[2:] if text.startswith("a ") else text)
    with pytest.raises(SchemaError, match=TOO_DEEP):
        as_row_type(text)


@pytest.mark.parametrize("kind, n, leaf", AT_LIMIT)
def test_schemas_at_the_limit_parse_print_and_map(kind, n, leaf):
    text = "a " + paimon(kind, n, leaf)[0]
    s = schema(text)
    assert s.depth == MAX_NESTING
    assert str(s) == text and schema(str(s)) == s and repr(s)
    assert parse_type(f"ROW<{text}>") == s
    assert schema_json.loads(schema_json.dumps(s)) == s
    a = to_arrow_schema(s)
    assert arrow_depth(pa.struct(list(a))) == MAX_NESTING
    back = from_arrow_schema(a)
    assert back.depth == MAX_NESTING
    if kind != "MULTISET" and leaf == "INT":   # (a MAP and a ROW of two BYTES come back)
        assert back == s


@pytest.mark.parametrize("kind, n, leaf", AT_LIMIT)
def test_schemas_one_past_the_limit_are_rejected(kind, n, leaf):
    column = f"ARRAY<{paimon(kind, n, leaf)[0]}>"
    with pytest.raises(SchemaError, match=TOO_DEEP):
        schema("a " + column)
    with pytest.raises(SchemaError, match=TOO_DEEP):
        parse_type(f"ROW<a {column}>")
    # the column type alone is one level less: exactly at the limit
    assert parse_type(column).depth == MAX_NESTING
    with pytest.raises(SchemaError, match=TOO_DEEP):
        parse_type(f"ARRAY<{column}>")


def test_types_built_in_code_are_bounded_too():
    t = AtomicType(name="INT")
    for _ in range(MAX_NESTING - 1):
        t = ArrayType(element=t)
    assert t.depth == MAX_NESTING and str(t).count("ARRAY<") == MAX_NESTING - 1
    with pytest.raises(SchemaError, match=TOO_DEEP):
        ArrayType(element=t)
    with pytest.raises(SchemaError, match=TOO_DEEP):
        RowType(fields=(DataField("a", t),))
    assert t.copy(nullable=False).depth == MAX_NESTING


# -- schema JSON -----------------------------------------------------------------------------

def _json_chain(kind: str, n: int) -> str:
    if kind == "ARRAY":
        column = '{"type": "ARRAY", "element": ' * n + '"INT"' + "}" * n
    else:
        column = '{"type": "ROW", "fields": [{"id": 1, "name": "a", "type": ' * n + '"INT"' \
            + "}]}" * n
    return '{"fields": [{"id": 0, "name": "a", "type": ' + column + "}]}"


@pytest.mark.parametrize("kind", ["ARRAY", "ROW"])
def test_deep_schema_json_is_a_schema_error(kind):
    text = _json_chain(kind, 1000)
    for doc in (text, text.encode("utf-8"), text.encode("utf-16")):
        with pytest.raises(SchemaError, match=TOO_DEEP):
            schema_json.loads(doc)
    # already parsed (json.loads itself recurses, so the chain is built by hand)
    t: object = "INT"
    for _ in range(5000):
        t = {"type": "ARRAY", "element": t}
    with pytest.raises(SchemaError, match=TOO_DEEP):
        schema_json.loads({"fields": [{"id": 0, "name": "a", "type": t}]})


@pytest.mark.parametrize("kind", ["ARRAY", "ROW"])
def test_schema_json_at_and_past_the_limit(kind):
    s = schema_json.loads(_json_chain(kind, 62))
    assert s.depth == MAX_NESTING and s == schema("a " + paimon(kind, 62)[0])
    assert schema_json.loads(schema_json.dumps(s)) == s
    with pytest.raises(SchemaError, match=TOO_DEEP):
        schema_json.loads(_json_chain(kind, 63))
    # a column type given as text counts with the JSON around it
    doc = json.loads(_json_chain(kind, 1))
    inner = paimon("ARRAY", 61)[0]
    if kind == "ARRAY":
        doc["fields"][0]["type"]["element"] = inner
    else:
        doc["fields"][0]["type"]["fields"][0]["type"] = inner
    assert schema_json.loads(doc).depth == MAX_NESTING
    with pytest.raises(SchemaError, match=TOO_DEEP):
        schema_json.loads(json.dumps(doc).replace("ARRAY<INT>", "ARRAY<ARRAY<INT>>", 1))


# -- Arrow -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["list", "struct", "map"])
def test_deep_arrow_schemas_are_a_schema_error(kind):
    t = arrow(kind, 3000)[0]
    with pytest.raises(SchemaError, match=TOO_DEEP):
        from_arrow_type(t)
    with pytest.raises(SchemaError, match=TOO_DEEP):
        from_arrow_schema(pa.schema([("a", t)]))
    with pytest.raises(SchemaError, match=TOO_DEEP):
        as_row_type(pa.schema([("a", t)]))
    with pytest.raises(SchemaError, match=TOO_DEEP):
        from_arrow_type(pa.dictionary(pa.int8(), t))


@pytest.mark.parametrize("kind, n", ARROW_AT_LIMIT)
def test_arrow_schemas_at_and_past_the_limit(kind, n):
    t = arrow(kind, n)[0]
    s = from_arrow_schema(pa.schema([("a", t)]))
    assert s.depth == MAX_NESTING
    assert to_arrow_type(s["a"].type).equals(t)
    assert from_arrow_type(t).depth == MAX_NESTING - 1
    deeper = pa.list_(t)
    assert from_arrow_type(deeper).depth == MAX_NESTING     # a type alone: one level less
    with pytest.raises(SchemaError, match=TOO_DEEP):
        from_arrow_schema(pa.schema([("a", deeper)]))


# -- values at the limit ---------------------------------------------------------------------

@pytest.mark.parametrize("kind, n, leaf", AT_LIMIT)
def test_values_at_the_limit_write_read_and_verify(tmp_path, kind, n, leaf):
    column, value = paimon(kind, n, leaf)
    s = schema("a " + column + ", b INT")
    path = tmp_path / "deep.row"
    with RowFileWriter(path, s) as w:
        w.write_rows([(value, 1), (None, 2)])
        w.write(pa.table({"a": pa.array([value], to_arrow_type(s["a"].type)), "b": [3]}))
    with RowFileReader(path, s) as r:
        assert r.get(0)[0] == r.get(2)[0]
        if kind in ("ARRAY", "ROW") and leaf == "INT":
            assert r.get(0)[0] == value
        table = r.read()
        table.validate(full=True)
        assert table.column("b").to_pylist() == [1, 2, 3]
        assert table.column("a")[1].as_py() is None
    assert verify(path, s).ok


# -- Fory ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["list", "struct", "map"])
def test_deep_fory_schemas_are_a_schema_error(kind):
    s = pa.schema([("a", arrow(kind, 3000)[0])])
    for make in (lambda: RowEncoder(s), lambda: RowEncoder(s, "compact"),
                 lambda: RowView(s, bytes(64)), lambda: schema_hash(s),
                 lambda: schema_bytes(s, "compact")):
        with pytest.raises(SchemaError, match=TOO_DEEP):
            make()


@pytest.mark.parametrize("kind, n", ARROW_AT_LIMIT)
@pytest.mark.parametrize("layout", ["standard", "compact"])
def test_fory_at_and_past_the_limit(kind, n, layout):
    t, value = arrow(kind, n)
    s = pa.schema([("a", t), ("b", pa.int64())])
    enc = RowEncoder(s, layout)
    row = {"a": value, "b": 5}
    data = enc.encode(row)
    assert enc.decode(data) == row
    assert enc.decode_with_hash(enc.encode_with_hash(row)) == row
    assert RowView(s, data, layout=layout)["b"] == 5
    batch = pa.RecordBatch.from_pylist([row, {"a": None, "b": 6}], schema=s)
    assert enc.decode_batch(enc.encode_batch(batch)).equals(batch)
    with pytest.raises(SchemaError, match=TOO_DEEP):
        RowEncoder(pa.schema([("a", pa.list_(t))]), layout)


def test_the_checks_do_not_recurse():
    """With little stack left, the checks still raise SchemaError (the
    parsers would have raised RecursionError)."""
    text = "a " + "ARRAY<" * 5000 + "INT" + ">" * 5000
    json_text = _json_chain("ROW", 5000)
    deep_arrow = pa.schema([("a", arrow("list", 5000)[0])])
    depth, f = 0, sys._getframe()
    while f is not None:
        depth, f = depth + 1, f.f_back
    headroom = 40        # frames left for the check itself and pytest.raises

    def at_depth(k, check):
        if k:
            return at_depth(k - 1, check)
        with pytest.raises(SchemaError, match=TOO_DEEP):
            check()

    for check in (lambda: schema(text), lambda: schema_json.loads(json_text),
                  lambda: from_arrow_schema(deep_arrow), lambda: RowEncoder(deep_arrow)):
        at_depth(sys.getrecursionlimit() - depth - headroom, check)
