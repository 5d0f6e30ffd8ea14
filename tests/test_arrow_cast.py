"""rowformat.arrow_cast: the one cast of Arrow data to a target schema."""
import datetime

import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from rowformat import SchemaError, ValueConversionError
from rowformat.arrow_cast import cast_array, cast_batch

VECTOR = pa.list_(pa.field("element", pa.float32(), nullable=False), 2)


def test_columns_are_matched_by_name_and_cast_safely():
    batch = pa.record_batch({"b": ["x", "y"], "a": pa.array([1, 2], pa.int8()), "z": [0, 0]})
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    out = cast_batch(batch, schema)
    assert out.schema == schema and out.to_pydict() == {"a": [1, 2], "b": ["x", "y"]}
    with pytest.raises(SchemaError, match=r"missing \[\], unexpected \['z'\]"):
        cast_batch(batch, schema, extra_columns=False)
    with pytest.raises(SchemaError, match=r"missing \['c'\]"):
        cast_batch(batch, schema.append(pa.field("c", pa.int32())))
    assert cast_batch(out, schema) is out          # nothing to do: the same batch


def test_a_value_that_does_not_fit_names_column_and_row():
    batch = pa.record_batch({"a": pa.array([1, 2, 3, 2**31, 5], pa.int64())})
    with pytest.raises(ValueConversionError,
                       match=r"column 'a', row 103: 2147483648 \(int64\) does not fit INT: "):
        cast_batch(batch, pa.schema([("a", pa.int32())]), first_row=100, type_names={"a": "INT"})


def test_types_without_a_cast_are_a_schema_error():
    batch = pa.record_batch({"a": pa.array([{"x": 1}])})
    with pytest.raises(SchemaError, match=r"column 'a': cannot store struct<x: int64> values as int32"):
        cast_batch(batch, pa.schema([("a", pa.int32())]))


def test_lists_become_fixed_size_lists_null_lists_included():
    # pyarrow's own cast of a list with nulls to a fixed-size list crashes the process
    col = pa.array([[1.0, 2.0], None, [3.0, 4.0]], pa.list_(pa.float64()))
    out = cast_array(col, pa.field("v", VECTOR))
    assert out.type == VECTOR and out.to_pylist() == [[1.0, 2.0], None, [3.0, 4.0]]
    large = pa.array([None, [5, 6]], pa.large_list(pa.int64()))
    assert cast_array(large, pa.field("v", VECTOR)).to_pylist() == [None, [5.0, 6.0]]
    with pytest.raises(ValueConversionError, match=r"column 'v', row 11: 3 elements do not fit VECTOR"):
        cast_array(pa.array([[1.0, 2.0], [1.0, 2.0, 3.0]]), pa.field("v", VECTOR), first_row=10,
                   type_name="VECTOR<FLOAT, 2>")
    with pytest.raises(ValueConversionError, match=r"column 'v': a null element, but .* NOT NULL"):
        cast_array(pa.array([[1.0, None]]), pa.field("v", VECTOR))


FLOAT32 = st.floats(width=32, allow_nan=False)


@given(st.lists(st.one_of(st.none(), st.tuples(FLOAT32, FLOAT32)), max_size=40))
def test_property_vectors_keep_their_values(rows):
    rows = [None if r is None else list(r) for r in rows]
    out = cast_array(pa.array(rows, pa.list_(pa.float32())), pa.field("v", VECTOR))
    assert out.to_pylist() == rows


def test_truncate_floors_times_to_the_coarser_unit():
    ns = pa.array([-1, 1_999, -1_000_000_001, None], pa.timestamp("ns"))
    out = cast_array(ns, pa.field("t", pa.timestamp("us")), truncate=True)
    assert out.cast(pa.int64()).to_pylist() == [-1, 1, -1_000_001, None]   # floored, not toward 0
    with pytest.raises(ValueConversionError):      # without truncate the cast is checked
        cast_array(ns, pa.field("t", pa.timestamp("us")))
    ms = pa.array([-1, 1_500], pa.timestamp("ms"))
    assert cast_array(ms, pa.field("t", pa.timestamp("s")), truncate=True).to_pylist() == [
        datetime.datetime(1969, 12, 31, 23, 59, 59), datetime.datetime(1970, 1, 1, 0, 0, 1)]
    t = pa.array([3_000_000_123], pa.time64("ns"))
    assert cast_array(t, pa.field("t", pa.time32("ms")), truncate=True).to_pylist() == [
        datetime.time(0, 0, 3)]


def test_a_value_without_a_python_form_is_still_shown():
    # without pandas, pyarrow has no Python value for a nanosecond timestamp past
    # microseconds: the message shows Arrow's text of it
    from rowformat.arrow_cast import _value_text
    col = pa.array([-1], pa.timestamp("ns"))
    assert _value_text(col.cast(pa.int64()), 0) == "-1"
    assert _value_text(pa.array([], pa.int64()), 0) == "None"
    text = _value_text(col, 0)
    assert "1969-12-31 23:59:59.999999999" in text
