"""Shared helpers for the Fory tests: the vector file, and JSON -> pyarrow
schema / Python value conversion as described in the vector file's meta."""
import datetime as dt
import json
import pathlib
import types

import pyarrow as pa
import pytest

VECTORS_PATH = pathlib.Path("/work/shared/vectors/fory-vectors.json")
if not VECTORS_PATH.exists():  # the repository-relative location
    VECTORS_PATH = pathlib.Path(__file__).resolve().parents[3] / "shared" / "vectors" / "fory-vectors.json"

_SCALARS = {
    "bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(),
    "int64": pa.int64(), "float32": pa.float32(), "float64": pa.float64(),
    "utf8": pa.string(), "binary": pa.binary(), "date32": pa.date32(),
    "timestamp": pa.timestamp("us"),
}
EPOCH = dt.datetime(1970, 1, 1)


def arrow_type(t):
    k = t["type"]
    if k in _SCALARS:
        return _SCALARS[k]
    if k == "list":
        return pa.list_(pa.field("item", arrow_type(t["value"]), t.get("value_nullable", True)))
    if k == "map":
        return pa.map_(arrow_type(t["key"]), arrow_type(t["item"]))
    if k == "struct":
        return pa.struct([pa.field(f["name"], arrow_type(f["type"]), f["nullable"]) for f in t["fields"]])
    raise ValueError(k)


def arrow_schema(fields):
    return pa.schema([pa.field(f["name"], arrow_type(f["type"]), f["nullable"]) for f in fields])


def py_value(t, v):
    if v is None:
        return None
    k = t["type"]
    if k == "date32":
        return dt.date.fromisoformat(v)
    if k == "timestamp":
        return EPOCH + dt.timedelta(microseconds=v)
    if k == "binary":
        return bytes.fromhex(v)
    if k in ("float32", "float64"):
        return float(v)
    if k == "list":
        return [py_value(t["value"], x) for x in v]
    if k == "map":
        return [(py_value(t["key"], a), py_value(t["item"], b)) for a, b in v]
    if k == "struct":
        return py_row(t["fields"], v)
    return v


def py_row(fields, v):
    return {f["name"]: py_value(f["type"], v.get(f["name"])) for f in fields}


def load_vectors():
    return json.loads(VECTORS_PATH.read_text())["vectors"]


@pytest.fixture(scope="session")
def fv():
    return types.SimpleNamespace(arrow_schema=arrow_schema, py_row=py_row,
                                 load_vectors=load_vectors, arrow_type=arrow_type)


def pytest_generate_tests(metafunc):
    # Tests taking `vector` run once per vector in the file (ids = names).
    if "vector" in metafunc.fixturenames:
        vs = load_vectors()
        metafunc.parametrize("vector", vs, ids=[v["name"] for v in vs])
