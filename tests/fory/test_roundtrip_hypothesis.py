"""Hypothesis round trips for both layouts: random nested schemas and values
through encode/decode, the Arrow batch paths and the views."""
import datetime as dt
import decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from rowformat.fory import RowEncoder, RowView

SETTINGS = settings(max_examples=60, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SCALARS = [pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(),
           pa.string(), pa.binary(), pa.date32(), pa.timestamp("us"), pa.duration("us"),
           pa.decimal128(12, 3), pa.decimal256(60, 10)]

scalar_types = st.sampled_from(SCALARS)
names = st.text(alphabet="abcXYZ_$0é", min_size=1, max_size=6)


def fields_of(children):
    return st.lists(st.tuples(names, children, st.booleans()), min_size=1, max_size=5,
                    unique_by=lambda t: t[0]).map(
        lambda fs: [pa.field(n, t, nullable) for n, t, nullable in fs])


types = st.recursive(
    scalar_types,
    lambda children: st.one_of(
        st.tuples(children, st.booleans()).map(lambda a: pa.list_(pa.field("item", a[0], a[1]))),
        st.tuples(st.sampled_from([pa.string(), pa.int32(), pa.int8()]), children).map(
            lambda a: pa.map_(a[0], a[1])),
        fields_of(children).map(pa.struct),
    ),
    max_leaves=8,
)
schemas = fields_of(types).map(pa.schema)


def value_of(t, nullable):
    base = nonnull_of(t)
    return st.one_of(st.none(), base) if nullable else base


def nonnull_of(t):
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_integer(t):
        return st.integers(-(1 << (t.bit_width - 1)), (1 << (t.bit_width - 1)) - 1)
    if pa.types.is_float32(t):
        return st.floats(width=32, allow_nan=False)
    if pa.types.is_float64(t):
        return st.floats(allow_nan=False)
    if pa.types.is_string(t):
        return st.text(max_size=12)
    if pa.types.is_binary(t):
        return st.binary(max_size=12)
    if pa.types.is_date32(t):
        return st.dates()
    if pa.types.is_timestamp(t):
        return st.datetimes()
    if pa.types.is_duration(t):
        return st.timedeltas(min_value=dt.timedelta(days=-10**6), max_value=dt.timedelta(days=10**6))
    if pa.types.is_decimal(t):
        lim = 10 ** t.precision - 1
        # from a (sign, digits, exponent) tuple: exact, where scaleb would round at 28 digits
        return st.integers(-lim, lim).map(lambda u, s=t.scale: decimal.Decimal((int(u < 0), tuple(map(int, str(abs(u)))), -s)))
    if pa.types.is_map(t):
        return st.lists(st.tuples(nonnull_of(t.key_type), value_of(t.item_type, True)), max_size=4)
    if pa.types.is_list(t):
        return st.lists(value_of(t.value_type, t.value_field.nullable), max_size=4)
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({f.name: value_of(f.type, f.nullable) for f in t})
    raise AssertionError(t)


@st.composite
def schema_and_rows(draw):
    schema = draw(schemas)
    row = pa.struct(list(schema))
    rows = draw(st.lists(nonnull_of(row), min_size=1, max_size=4))
    return schema, rows


@pytest.mark.parametrize("layout", ["standard", "compact"])
@SETTINGS
@given(case=schema_and_rows())
def test_round_trip(layout, case):
    schema, rows = case
    enc = RowEncoder(schema, layout=layout)
    encoded = [enc.encode(r) for r in rows]
    for r, b in zip(rows, encoded):
        assert enc.decode(b) == r
        assert enc.encode(enc.decode(b)) == b           # deterministic bytes
        assert RowView(schema, b, layout=layout).to_dict() == r
        if layout == "standard":
            assert len(b) % 8 == 0
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    out = enc.encode_batch(batch)
    assert out.to_pylist() == encoded                     # C path == Python path
    back = enc.decode_batch(out)
    back.validate(full=True)
    assert back.to_pylist() == batch.to_pylist()
