"""rowformat.paimon._predicate: masks equal to pypaimon's row-by-row
``Predicate.test`` for the columns and literals it evaluates, Unsupported
for the others."""
import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._deps import importorskip_pypaimon

from rowformat.paimon import _predicate

importorskip_pypaimon()
from pypaimon.common.predicate import Predicate  # noqa: E402

COLUMNS = {
    "i8": (pa.int8(), st.integers(-128, 127)),
    "f64": (pa.float64(), st.floats(allow_nan=True, width=64)),
    "s": (pa.string(), st.text(alphabet="aé😀b", max_size=3)),
    "b": (pa.binary(), st.binary(max_size=2)),
    "day": (pa.date32(), st.dates(dt.date(1960, 1, 1), dt.date(1980, 1, 1))),
    "ts": (pa.timestamp("ms"), st.datetimes(dt.datetime(1969, 12, 31), dt.datetime(1970, 1, 2))
           .map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))),
    "flag": (pa.bool_(), st.booleans()),
}
NAMES = list(COLUMNS)
METHODS = ["equal", "notEqual", "lessThan", "lessOrEqual", "greaterThan", "greaterOrEqual",
           "between", "notBetween", "in", "notIn", "isNull", "isNotNull",
           "startsWith", "endsWith", "contains"]


class _Row:
    def __init__(self, values):
        self.values = values

    def get_field(self, i):
        return self.values[i]


class _Field:
    def __init__(self, name):
        self.name = name


@st.composite
def _case(draw):
    rows = draw(st.integers(0, 12))
    cols = {name: draw(st.lists(st.one_of(st.none(), strat), min_size=rows, max_size=rows))
            for name, (_t, strat) in COLUMNS.items()}

    def leaf():
        name = draw(st.sampled_from(NAMES))
        method = draw(st.sampled_from(METHODS))
        lit = st.one_of(st.none(), COLUMNS[name][1]) if method in ("in", "notIn") else COLUMNS[name][1]
        if method in ("startsWith", "endsWith", "contains"):
            lit = COLUMNS["s"][1]
        lits = draw(st.lists(lit, min_size=0, max_size=3))
        return Predicate(method, NAMES.index(name), name, lits)
    pred = leaf()
    for _ in range(draw(st.integers(0, 2))):
        pred = Predicate(draw(st.sampled_from(["and", "or"])), None, None, [pred, leaf()])
    return cols, pred


@settings(max_examples=300, deadline=None)
@given(_case())
def test_mask_is_predicate_test(case):
    cols, pred = case
    table = pa.table({name: pa.array(cols[name], COLUMNS[name][0]) for name in NAMES})
    try:
        mask = _predicate.compile_mask(pred, [_Field(n) for n in NAMES])(table)
    except _predicate.Unsupported:
        return
    rows = [_Row([cols[n][i] for n in NAMES]) for i in range(table.num_rows)]
    try:
        expected = [bool(pred.test(r)) for r in rows]
    except TypeError:
        pytest.fail("evaluated a predicate pypaimon cannot test")
    assert mask.to_pylist() == expected


@pytest.mark.parametrize("method,name,lits", [
    ("like", "s", ["a%"]),
    ("equal", "f64", [float("nan")]),
    ("equal", "i8", [None]),
    ("lessThan", "i8", [1.5]),
    ("equal", "s", [b"a"]),
    ("in", "i8", [1, "a"]),
    ("startsWith", "i8", ["1"]),
])
def test_what_it_does_not_evaluate(method, name, lits):
    table = pa.table({n: pa.array([None], COLUMNS[n][0]) for n in NAMES})
    with pytest.raises(_predicate.Unsupported):
        _predicate.compile_mask(Predicate(method, NAMES.index(name), name, lits),
                                [_Field(n) for n in NAMES])(table)
