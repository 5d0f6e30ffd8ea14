"""rowformat.arrow_pylist: column-wise Python values equal pyarrow's
``to_pylist()`` exactly -- the same values of the same Python types (a
Decimal's digits and exponent, a datetime's tzinfo), nulls where Arrow has
them -- for every type, sliced, taken and chunked; and ``Table.to_pylist()``'s
dicts."""
import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from rowformat.arrow_pylist import rows_as_dicts, to_pylist
from tests._values import same


def _columns(n=120, seed=3) -> dict:
    rnd = random.Random(seed)

    def maybe(v):
        return None if rnd.random() < 0.2 else v

    def many(f):
        return [maybe(f()) for _ in range(n)]
    ts = pa.timestamp
    cols = {
        "i8": (pa.int8(), many(lambda: rnd.randint(-128, 127))),
        "i16": (pa.int16(), many(lambda: rnd.randint(-2**15, 2**15 - 1))),
        "i32": (pa.int32(), many(lambda: rnd.randint(-2**31, 2**31 - 1))),
        "i64": (pa.int64(), many(lambda: rnd.randint(-2**63, 2**63 - 1))),
        "u8": (pa.uint8(), many(lambda: rnd.randint(0, 255))),
        "u64": (pa.uint64(), many(lambda: rnd.randint(0, 2**64 - 1))),
        "f32": (pa.float32(), many(lambda: rnd.uniform(-1e6, 1e6))),
        "f64": (pa.float64(), many(lambda: rnd.choice([rnd.uniform(-1e300, 1e300), -0.0,
                                                        float("nan"), float("inf")]))),
        "f16": (pa.float16(), None),
        "flag": (pa.bool_(), many(lambda: rnd.random() < 0.5)),
        "s": (pa.string(), many(lambda: "é" * rnd.randint(0, 3) + str(rnd.random()))),
        "ls": (pa.large_string(), many(lambda: "x" * rnd.randint(0, 9))),
        "bin": (pa.binary(), many(lambda: rnd.randbytes(rnd.randint(0, 9)))),
        "lbin": (pa.large_binary(), many(lambda: rnd.randbytes(rnd.randint(0, 9)))),
        "fbin": (pa.binary(4), many(lambda: rnd.randbytes(4))),
        "d_small": (pa.decimal128(10, 2), many(lambda: Decimal(rnd.randint(-10**9, 10**9)) / 100)),
        "d_big": (pa.decimal128(38, 5), many(lambda: Decimal(rnd.randint(-10**37, 10**37)).scaleb(-5))),
        "d_256": (pa.decimal256(50, 0), many(lambda: Decimal(rnd.randint(-10**49, 10**49)))),
        "ts0": (ts("s"), many(lambda: rnd.randint(-62135596800, 253402300799))),
        "ts3": (ts("ms"), many(lambda: rnd.randint(-62135596800000, 253402300799999))),
        "ts6": (ts("us"), many(lambda: rnd.randint(-10**16, 10**16))),
        "ts9": (ts("ns"), many(lambda: rnd.randint(-10**18, 10**18))),
        "ltz": (ts("us", tz="UTC"), many(lambda: rnd.randint(-10**15, 10**15))),
        "ltz_ny": (ts("ms", tz="America/New_York"), many(lambda: rnd.randint(-10**12, 10**12))),
        "day": (pa.date32(), many(lambda: rnd.randint(-719162, 2932896))),
        "day64": (pa.date64(), many(lambda: rnd.randint(-10**5, 10**5) * 86_400_000)),
        "tod_s": (pa.time32("s"), many(lambda: rnd.randint(0, 86399))),
        "tod": (pa.time32("ms"), many(lambda: rnd.randint(0, 86_399_999))),
        "tod_us": (pa.time64("us"), many(lambda: rnd.randint(0, 86_399_999_999))),
        "tod_ns": (pa.time64("ns"), many(lambda: rnd.randint(0, 86_399_999_999_999))),
        "dur": (pa.duration("ms"), many(lambda: rnd.randint(-10**9, 10**9))),
        "nul": (pa.null(), [None] * n),
        "arr": (pa.list_(pa.int32()), many(lambda: [maybe(rnd.randint(0, 9))
                                                     for _ in range(rnd.randint(0, 4))])),
        "larr": (pa.large_list(pa.string()), many(lambda: [maybe("a")] * rnd.randint(0, 3))),
        "arr_ts": (pa.list_(ts("ms")), many(lambda: [maybe(rnd.randint(0, 10**12))])),
        "nested": (pa.list_(pa.list_(pa.decimal128(5, 1))),
                   many(lambda: [maybe([maybe(Decimal("1.5"))] * rnd.randint(0, 2))])),
        "mp": (pa.map_(pa.string(), pa.float64()),
               many(lambda: [(f"k{j}", maybe(rnd.random())) for j in range(rnd.randint(0, 3))])),
        "mp_st": (pa.map_(pa.int32(), pa.struct([("q", pa.date32())])),
                  many(lambda: [(j, maybe({"q": maybe(j)})) for j in range(rnd.randint(0, 2))])),
        "st": (pa.struct([("x", pa.int32()), ("y", pa.string()), ("z", pa.list_(pa.string()))]),
               many(lambda: {"x": maybe(1), "y": maybe("b"), "z": maybe(["a", None])})),
        "vec": (pa.list_(pa.float32(), 3), many(lambda: [rnd.random(), maybe(0.5), 1.0])),
    }
    out = {}
    for name, (t, values) in cols.items():
        if values is None:          # half floats: from NumPy
            import numpy as np
            arr = pa.array(np.arange(n, dtype=np.float16) / 7,
                           mask=np.array([rnd.random() < 0.2 for _ in range(n)]))
        else:
            arr = pa.array(values, t)
        out[name] = arr
    out["dict"] = pa.array(["a", "b", None, "a"] * (n // 4)).dictionary_encode()
    return out


COLUMNS = _columns()


def _variants(arr: pa.Array):
    n = len(arr)
    yield arr
    yield arr.slice(7)
    yield arr.slice(3, n - 10)
    yield arr.slice(5, 0)
    yield arr.take(pa.array([n - 1, 0, 0, 4, n // 2]))
    yield pa.chunked_array([arr.slice(0, 5), arr.slice(9, 30)], arr.type)


def _convert(convert, arr):
    """convert(arr), or the ValueError it raised: pyarrow's nanosecond values
    need pandas (absent where the wheels are tested on CPython 3.14), and
    without it to_pylist() raises, as ours must then too."""
    try:
        return convert(arr)
    except ValueError as e:
        return e


def _check(arr, name):
    want = _convert(pa.Array.to_pylist if isinstance(arr, pa.Array) else pa.ChunkedArray.to_pylist,
                    arr)
    got = _convert(to_pylist, arr)
    if isinstance(want, ValueError):
        assert type(got) is type(want), (name, got)
    else:
        assert same(got, want), (name, got[:5], want[:5])


@pytest.mark.parametrize("name", list(COLUMNS))
def test_values_equal_to_pylist(name):
    for arr in _variants(COLUMNS[name]):
        _check(arr, name)


def test_all_nulls_and_no_nulls():
    for name, arr in COLUMNS.items():
        nulls = pa.nulls(6, arr.type)
        assert same(to_pylist(nulls), nulls.to_pylist()), name
        if arr.type != pa.null():
            full = arr.filter(arr.is_valid())
            assert full.null_count == 0
            _check(full, name)


@pytest.mark.parametrize("arr", [
    pa.array([253402300800, None], pa.timestamp("s")),            # year 10000
    pa.array([253402300800000], pa.timestamp("ms")),
    pa.array([-62135596800000001, 0], pa.timestamp("us")),          # before year 1
    pa.array([2932897, None], pa.date32()),
    pa.array([-719163], pa.date32()),
], ids=str)
def test_outside_pythons_years_raise_as_pyarrow(arr):
    with pytest.raises(Exception) as want:
        arr.to_pylist()
    with pytest.raises(type(want.value)):
        to_pylist(arr)


def test_the_ends_of_pythons_years():
    arr = pa.array([253402300799999999, -62135596800000000, None], pa.timestamp("us"))
    assert to_pylist(arr) == [dt.datetime.max, dt.datetime.min, None]
    days = pa.array([2932896, -719162], pa.date32())
    assert to_pylist(days) == [dt.date.max, dt.date.min]


def test_rows_as_dicts_is_table_to_pylist():
    # the columns whose values Python can hold here (see _convert)
    table = pa.table({k: v for k, v in COLUMNS.items()
                      if not isinstance(_convert(pa.Array.to_pylist, v), ValueError)})
    for t in (table, table.slice(11, 40), table.take(pa.array([3, 3, 0]))):
        got = rows_as_dicts(t.column_names, [to_pylist(c) for c in t.columns])
        want = t.to_pylist()
        assert same(got, want)
        assert all(list(g) == t.column_names for g in got)
    assert rows_as_dicts(["a"], [[]]) == []
    with pytest.raises(ValueError):
        rows_as_dicts(["a", "b"], [[1, 2], [3]])


def test_rows_as_dicts_checks_its_columns():
    assert rows_as_dicts([], []) == []
    assert rows_as_dicts(("a", "b"), ([1, 2], (3, 4))) == [{"a": 1, "b": 3}, {"a": 2, "b": 4}]
    with pytest.raises(ValueError):
        rows_as_dicts(["a"], [[1], [2]])
    with pytest.raises(ValueError):
        rows_as_dicts(["a", "b"], [[1], [2, 3]])
    from rowformat import _pyrows
    with pytest.raises(TypeError):
        _pyrows.rows_as_dicts(["a"], [(1,)])
    rows = rows_as_dicts(["k"], [[None, 1]])
    assert rows == [{"k": None}, {"k": 1}] and rows[0] is not rows[1]
