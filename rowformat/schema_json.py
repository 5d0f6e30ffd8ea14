"""Paimon's schema JSON: the ``fields`` of a table schema file, as Paimon
Java and pypaimon write them.

An atomic type is its SQL text (``"INT NOT NULL"``, ``"DECIMAL(20, 2)"``);
ARRAY, MULTISET, VECTOR, MAP and ROW are objects::

    {"type": "ARRAY NOT NULL", "element": <type>}
    {"type": "VECTOR", "element": <type>, "length": 4}
    {"type": "MAP", "key": <type>, "value": <type>}
    {"type": "ROW", "fields": [{"id": 0, "name": "a", "type": <type>}, ...]}

Field ids are numbered depth-first from 0, a field before its nested fields,
as Paimon assigns them. ``loads`` accepts a bare field
list, ``{"fields": [...]}``, or a whole Paimon table schema file.
"""
from __future__ import annotations

import itertools
import json
import re

from .errors import SchemaError
from .datatypes import (
    MAX_NESTING, ArrayType, DataField, DataType, MapType, MultisetType, RowType, VectorType,
    nesting_error, parse_type,
)


def _type_json(t: DataType, ids) -> str | dict:
    suffix = "" if t.nullable else " NOT NULL"
    if isinstance(t, ArrayType):
        return {"type": "ARRAY" + suffix, "element": _type_json(t.element, ids)}
    if isinstance(t, MultisetType):
        return {"type": "MULTISET" + suffix, "element": _type_json(t.element, ids)}
    if isinstance(t, VectorType):
        return {"type": "VECTOR" + suffix, "element": _type_json(t.element, ids), "length": t.length}
    if isinstance(t, MapType):
        return {"type": "MAP" + suffix, "key": _type_json(t.key, ids),
                "value": _type_json(t.value, ids)}
    if isinstance(t, RowType):
        return {"type": "ROW" + suffix, "fields": _fields_json(t.fields, ids)}
    return str(t)


def _fields_json(fields, ids) -> list[dict]:
    out = []
    for f in fields:
        entry = {"id": next(ids), "name": f.name}   # a field's id before its nested fields'
        entry["type"] = _type_json(f.type, ids)
        if f.description is not None:
            entry["description"] = f.description
        out.append(entry)
    return out


def to_json_fields(schema: RowType) -> list[dict]:
    """The schema's fields as Paimon JSON objects (with field ids)."""
    return _fields_json(schema.fields, itertools.count())


def dumps(schema: RowType) -> str:
    fields = to_json_fields(schema)
    return json.dumps({"fields": fields, "highestFieldId": highest_field_id(fields)}, indent=2)


def highest_field_id(fields: list[dict]) -> int:
    """The largest field id, nested fields included (-1 for none)."""
    return max(_all_ids(fields), default=-1)


def _all_ids(fields):
    for f in fields:
        yield f["id"]
        t = f["type"]
        stack = [t]
        while stack:
            t = stack.pop()
            if isinstance(t, dict):
                stack.extend(t.get(k) for k in ("element", "key", "value") if t.get(k) is not None)
                yield from _all_ids(t.get("fields", []))


# JSON nesting a schema within MAX_NESTING can need: a ROW level is three
# JSON levels (the type object, its "fields" list, a field object), the file's
# top object and "fields" list two more.
_MAX_JSON_DEPTH = 3 * MAX_NESTING + 2
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _check_json_depth(text: str) -> None:
    """Counts the brackets of JSON text (skipping strings) before json.loads,
    which recurses once per level."""
    depth = 0
    for m in _JSON_TOKEN.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > _MAX_JSON_DEPTH:
                raise nesting_error(f"schema JSON nests more than {_MAX_JSON_DEPTH} levels: "
                                    f"its schema")
        elif c in "]}":
            depth -= 1


def _check_type_depth(fields) -> None:
    """The depth of the types that parsed JSON ``fields`` describe, checked
    without recursion before _parse_type recurses over them. Shapes that are
    not Paimon types are left for _parse_type to reject; a type given as
    text counts as one level here (its own depth is checked when built)."""
    stack = [(fields, 1)]       # the schema is a level: its fields' types are at 2
    while stack:
        j, depth = stack.pop()
        if isinstance(j, list):
            stack += [(f.get("type"), depth + 1) for f in j if isinstance(f, dict)]
        elif isinstance(j, dict):
            if depth > MAX_NESTING:
                raise nesting_error("schema")
            stack += [(j.get(k), depth + 1) for k in ("element", "key", "value")]
            if isinstance(j.get("fields"), list):
                stack.append((j["fields"], depth))


def _parse_type(j) -> DataType:
    if isinstance(j, str):
        return parse_type(j)
    if not isinstance(j, dict) or not isinstance(j.get("type"), str):
        raise SchemaError(f"not a Paimon type: {j!r}")
    head = j["type"].strip().upper()
    nullable = not head.endswith("NOT NULL")
    kind = head.split()[0].split("<")[0]
    if kind == "ARRAY":
        return ArrayType(element=_parse_type(j["element"]), nullable=nullable)
    if kind == "MULTISET":
        return MultisetType(element=_parse_type(j["element"]), nullable=nullable)
    if kind == "VECTOR":
        return VectorType(length=int(j["length"]), element=_parse_type(j["element"]),
                          nullable=nullable)
    if kind == "MAP":
        return MapType(key=_parse_type(j["key"]), value=_parse_type(j["value"]), nullable=nullable)
    if kind == "ROW":
        return RowType(fields=tuple(_parse_field(f) for f in j["fields"]), nullable=nullable)
    return parse_type(j["type"])


def _parse_field(j: dict) -> DataField:
    if not isinstance(j, dict):
        raise SchemaError(f"a schema JSON field is an object, not {j!r}")
    try:
        return DataField(j["name"], _parse_type(j["type"]), j.get("description"))
    except KeyError as e:
        raise SchemaError(f"schema JSON field {j!r} lacks {e}") from None


def loads(text: str | bytes | dict | list) -> RowType:
    """Parses Paimon schema JSON into a RowType; SchemaError for anything
    that is not."""
    try:
        return _loads(text)
    except SchemaError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as e:    # JSON or shape
        raise SchemaError(f"malformed schema JSON: {e}") from None


def _loads(text: str | bytes | dict | list) -> RowType:
    if isinstance(text, (str, bytes)):
        if isinstance(text, bytes):    # decoded as json.loads decodes bytes
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        _check_json_depth(text)
        data = json.loads(text)
    else:
        data = text
    fields = data.get("fields") if isinstance(data, dict) else data
    if not isinstance(fields, list):
        raise SchemaError("schema JSON has no 'fields' list")
    _check_type_depth(fields)
    return RowType(fields=tuple(_parse_field(f) for f in fields), top_level=True)
