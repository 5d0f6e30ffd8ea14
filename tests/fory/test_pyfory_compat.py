"""pyfory 1.7.7 as a live reference, both directions, on seeded random data.

Standard layout only (pyfory has no Compact). pyfory leaves the 8-byte slot
of a null *row field* uninitialised, so exact byte comparison uses rows
without null fields; rows with null fields are compared by decoding each
side's bytes with the other side. Types are limited to what pyfory can
encode (no float16/duration/decimal) and to nestings it handles
(pyfory breaks on list<list>, list<struct>, list<map>).
"""
import datetime as dt
import os
import random
import time
import warnings

import pyarrow as pa
import pytest

from rowformat.fory import RowEncoder, schema_bytes, schema_hash

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import pyfory.format as pf

EPOCH = dt.datetime(1970, 1, 1)


@pytest.fixture(autouse=True, scope="module")
def utc():
    # pyfory converts naive datetimes with the local time zone.
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


SCALARS = [pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(),
           pa.float64(), pa.string(), pa.binary(), pa.date32(), pa.timestamp("us")]


def rand_type(rng, depth):
    r = rng.random()
    if depth >= 3 or r < 0.6:
        return rng.choice(SCALARS)
    if r < 0.75:
        return pa.list_(rng.choice(SCALARS))
    if r < 0.85:
        return pa.map_(rng.choice([pa.string(), pa.int32(), pa.int64()]), rng.choice(SCALARS))
    return pa.struct([pa.field(f"f{i}", rand_type(rng, depth + 1)) for i in range(rng.randint(1, 4))])


def rand_scalar(rng, t):
    if t == pa.bool_():
        return rng.random() < 0.5
    if pa.types.is_integer(t):
        bits = t.bit_width
        return rng.choice([-(1 << (bits - 1)), (1 << (bits - 1)) - 1, 0, -1,
                           rng.randint(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)])
    if t == pa.float32():
        return rng.choice([0.0, -0.0, 1.5, -2.25, float(rng.randint(-1000, 1000)) / 8])
    if t == pa.float64():
        return rng.choice([0.0, -0.0, 1e300, -1e-300, rng.uniform(-1e6, 1e6)])
    if t == pa.string():
        return "".join(rng.choice("abcé✓𝄞 ") for _ in range(rng.randint(0, 20)))
    if t == pa.binary():
        # pyfory 1.7.7 cannot write an empty bytes element inside a list
        # (IndexError in ArrayWriter); empty binary is covered elsewhere.
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 20)))
    if t == pa.date32():
        return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-200000, 200000))
    if t == pa.timestamp("us"):
        # multiples of 1/64 s are exact in pyfory's float arithmetic
        return EPOCH + dt.timedelta(microseconds=15625 * rng.randint(-2**35, 2**35))
    raise AssertionError(t)


def rand_value(rng, t, null_p):
    if rng.random() < null_p:
        return None
    return rand_nonnull(rng, t, null_p)


def rand_nonnull(rng, t, null_p):
    if pa.types.is_list(t):
        return [rand_value(rng, t.value_type, 0.2) for _ in range(rng.randint(0, 5))]
    if pa.types.is_map(t):
        keys = {rand_scalar(rng, t.key_type) for _ in range(rng.randint(0, 4))}
        return [(k, rand_value(rng, t.item_type, 0.2)) for k in keys]
    if pa.types.is_struct(t):
        return {f.name: rand_value(rng, f.type, null_p) for f in t}
    return rand_scalar(rng, t)


def from_pyfory(v):
    """pyfory's decoded record objects -> the plain values we return."""
    if v is None or isinstance(v, (bool, int, float, str, bytes, dt.date)):
        return v
    if isinstance(v, list):
        return [from_pyfory(x) for x in v]
    if isinstance(v, dict):
        return [(from_pyfory(k), from_pyfory(x)) for k, x in v.items()]
    return {k: from_pyfory(getattr(v, k)) for k in v.__dict__} if hasattr(v, "__dict__") else \
        {k: from_pyfory(getattr(v, k)) for k in v.__slots__}


def to_pyfory(t, v):
    """Maps are dicts for pyfory."""
    if v is None:
        return None
    if pa.types.is_list(t):
        return [to_pyfory(t.value_type, x) for x in v]
    if pa.types.is_map(t):
        return {k: to_pyfory(t.item_type, x) for k, x in v}
    if pa.types.is_struct(t):
        return {f.name: to_pyfory(f.type, v[f.name]) for f in t}
    return v


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b and str(a)[0] == str(b)[0] or (a != a and b != b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def cases():
    rng = random.Random(20240607)
    out = []
    for _ in range(25):
        schema = pa.schema([pa.field(f"c{i}", rand_type(rng, 0)) for i in range(rng.randint(1, 9))])
        out.append((schema, rng.randrange(1 << 30)))
    return out


@pytest.mark.parametrize("schema,seed", cases())
def test_against_pyfory(schema, seed):
    rng = random.Random(seed)
    fs = pf.from_arrow_schema(schema)
    penc = pf.create_row_encoder(fs)
    enc = RowEncoder(schema)
    root = pa.struct(list(schema))
    # schema hash and schema bytes
    assert schema_hash(schema) == pf.compute_schema_hash(fs)
    assert schema_bytes(schema) == fs.to_bytes()
    for k in range(12):
        null_p = 0.0 if k % 2 == 0 else 0.3
        value = rand_nonnull(rng, root, null_p)
        ours = enc.encode(value)
        theirs = penc.to_row(to_pyfory(root, value)).to_bytes()
        if null_p == 0.0:
            assert ours == theirs
        assert len(ours) == len(theirs)
        # pyfory bytes -> our decoder; our bytes -> pyfory's decoder
        assert same(enc.decode(theirs), value), _diff(enc.decode(theirs), value)
        assert same(from_pyfory(penc.from_row(pf.RowData(fs, ours))), value)
        assert enc.encode(enc.decode(theirs)) == ours


def test_bench_record_matches_pyfory_typed_getters():
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("tags", pa.list_(pa.string()))])
    enc = RowEncoder(schema)
    data = enc.encode({"id": -5, "name": "Zoë", "tags": ["a", None]})
    rd = pf.RowData(pf.from_arrow_schema(schema), data)
    assert rd.get_int64(0) == -5 and rd.get_str(1) == "Zoë"
    arr = rd.get_array_data(2)
    assert arr.num_elements == 2 and arr.get_str(0) == "a" and arr.get(1) is None


def _diff(a, b):
    return {k: (a[k], b[k]) for k in a if not same(a[k], b[k])}
