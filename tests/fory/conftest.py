"""Shared helpers for the Fory tests: the vector file, and JSON -> pyarrow
schema / Python value conversion as described in the vector file's meta."""
import datetime as dt
import json
import types

import pytest

# the vector-JSON -> Arrow conversion is shared with the fuzz targets, which run without pytest
from tests.fuzz._schemas import FORY_VECTORS
from tests.fuzz._schemas import fory_arrow_schema as arrow_schema, fory_arrow_type as arrow_type

EPOCH = dt.datetime(1970, 1, 1)


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
    return json.loads(FORY_VECTORS.read_text())["vectors"]


@pytest.fixture(scope="session")
def fv():
    return types.SimpleNamespace(arrow_schema=arrow_schema, py_row=py_row,
                                 load_vectors=load_vectors, arrow_type=arrow_type)


def pytest_generate_tests(metafunc):
    # Tests taking `vector` run once per vector in the file (ids = names);
    # a test marked vectors(predicate) runs only on the vectors it applies to.
    if "vector" in metafunc.fixturenames:
        vs = load_vectors()
        marker = metafunc.definition.get_closest_marker("vectors")
        if marker is not None:
            vs = [v for v in vs if marker.args[0](v)]
        metafunc.parametrize("vector", vs, ids=[v["name"] for v in vs])
