"""Pruning by pushed filters never drops a matching row: a property test
over random tables (several files, random nulls, an append table or a
fixed-bucket primary-key one, with stock pypaimon's full statistics; then
every other prunable type written accelerated, rowformat's statistics under
each stats-mode and truncation), random filters of the
kinds Spark pushes, and the planner's pruning (partitions, buckets, files)
checked against a plain evaluation of every row; the rows rowformat then
evaluates itself (batch_mask) are exactly the matching ones. No Spark
session: the planner and the masks are the source's own code."""
import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from pyspark.sql.datasource import (
    EqualNullSafe, EqualTo, GreaterThan, GreaterThanOrEqual, In, IsNotNull, IsNull, LessThan,
    LessThanOrEqual, Not, StringContains, StringEndsWith, StringStartsWith,
)

import rowformat.paimon as rp
from rowformat.paimon import tables as tb
from rowformat.spark.filters import batch_mask, evaluates, planner_kind, planner_predicate
from tests.paimon._tables import Warehouse, write

INTS = st.one_of(st.none(), st.integers(-20, 20))
STRS = st.one_of(st.none(), st.text(alphabet="ab\u00e9\U0001f600", max_size=3))
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("k", pa.int32()),
                    pa.field("s", pa.string()), pa.field("p", pa.int32(), False)])


def _compare(op, a, b):
    if a is None or b is None:
        return None
    return {EqualTo: a == b, GreaterThan: a > b, GreaterThanOrEqual: a >= b, LessThan: a < b,
            LessThanOrEqual: a <= b}[op]


def spark_value(f, row):
    """Spark's three-valued answer for one row (strings compare by UTF-8
    bytes, which is Python's code point order)."""
    if isinstance(f, Not):
        v = spark_value(f.child, row)
        return None if v is None else not v
    x = row[f.attribute[0]]
    if isinstance(f, IsNull):
        return x is None
    if isinstance(f, IsNotNull):
        return x is not None
    if isinstance(f, EqualNullSafe):
        return x == f.value if x is not None and f.value is not None else x is f.value
    if isinstance(f, In):
        if x is None:
            return None
        if x in [v for v in f.value if v is not None]:
            return True
        return None if None in f.value else False
    if isinstance(f, (StringStartsWith, StringEndsWith, StringContains)):
        if x is None:
            return None
        return {StringStartsWith: x.startswith, StringEndsWith: x.endswith,
                StringContains: x.__contains__}[type(f)](f.value)
    return _compare(type(f), x, f.value)


def check_pruning(t, rows, filters, schema):
    """The planner (with the source's own type keys) keeps every row of
    ``rows`` that Spark's filters keep, and the filters rowformat evaluates
    give Spark's rows among those read."""
    roots = {f.name: planner_kind(f.type) for f in tb.row_type(t).fields}
    predicate = planner_predicate(filters, roots, t.new_read_builder().new_predicate_builder())
    splits = tb.plan_splits(t, None, predicate=predicate)
    read = pa.concat_tables([pa.Table.from_batches([b]) for b in
                             tb.read_batches(t, splits, schema.names)] or [schema.empty_table()])
    kept = set(read.column("id").to_pylist())
    want = {r["id"] for r in rows if all(spark_value(f, r) is True for f in filters)}
    assert want <= kept, (filters, t.table_schema.options, want - kept)
    mine = [f for f in filters if evaluates(f, read.schema)]
    if mine and read.num_rows:
        batch = read.combine_chunks().to_batches()[0]
        mask = batch_mask(mine, batch).to_pylist()
        by_id = {r["id"]: r for r in rows}
        got = {i for i, m in zip(batch.column("id").to_pylist(), mask) if m}
        assert got == {i for i in kept if all(spark_value(f, by_id[i]) is True for f in mine)}


def leaf(column: str, values):
    ops = [EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual]
    lit = values.filter(lambda v: v is not None)
    compare = st.builds(lambda o, v: o((column,), v), st.sampled_from(ops), lit)
    out = [compare, compare, compare,             # the kinds that prune most, most often
           st.builds(lambda vs: In((column,), tuple(vs)), st.lists(values, min_size=1, max_size=4)),
           st.just(IsNull((column,))), st.just(IsNotNull((column,)))]
    if column == "s":
        out.append(st.builds(lambda o, v: o((column,), v),
                             st.sampled_from([StringStartsWith, StringEndsWith, StringContains]),
                             lit))
    return st.one_of(out)


FILTER = st.one_of(leaf("id", st.integers(-2, 62)), leaf("id", st.integers(-2, 62)),
                   leaf("k", INTS), leaf("s", STRS),
                   leaf("p", st.integers(0, 2)))
FILTERS = st.lists(st.one_of(FILTER, FILTER, FILTER.map(Not)), min_size=1, max_size=3)
FILES = st.lists(st.lists(st.tuples(INTS, STRS), min_size=1, max_size=12), min_size=2,
                 max_size=5)


THREE_FILES = [[(i, f"a{i}") for i in range(8)], [(None, "b")] * 8, [(3, None)] * 8]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(files=FILES, filters=FILTERS, keyed=st.booleans())
# shapes whose wrong translation drops whole files (each fails on a planner
# that turns one comparison around), beside the random ones
@example(files=THREE_FILES, filters=[GreaterThan(("id",), 9)], keyed=False)
@example(files=THREE_FILES, filters=[GreaterThanOrEqual(("id",), 16)], keyed=True)
@example(files=THREE_FILES, filters=[LessThan(("id",), 9)], keyed=False)
@example(files=THREE_FILES, filters=[LessThanOrEqual(("id",), 7)], keyed=False)
@example(files=THREE_FILES, filters=[In(("id",), (2, 20))], keyed=True)
@example(files=THREE_FILES, filters=[Not(EqualTo(("k",), 3))], keyed=False)
@example(files=THREE_FILES, filters=[StringStartsWith(("s",), "b")], keyed=False)
@example(files=THREE_FILES, filters=[IsNull(("k",)), EqualTo(("p",), 1)], keyed=False)
def test_pruning_never_drops_a_matching_row(tmp_path_factory, files, filters, keyed):
    wh = Warehouse(tmp_path_factory.mktemp("prune"))
    options = {"metadata.stats-mode": "full"}
    if keyed:
        options["bucket"] = "2"
    t = wh.create("t", SCHEMA, partition_keys=["p"], primary_keys=["id", "p"] if keyed else None,
                  options=options)
    rows, next_id = [], 0
    for chunk in files:                                  # one commit: a file per partition
        batch = [{"id": next_id + i, "k": k, "s": s, "p": (next_id + i) % 3}
                 for i, (k, s) in enumerate(chunk)]
        next_id += len(chunk)
        write(t, pa.Table.from_pylist(batch, SCHEMA))
        rows += batch
    check_pruning(tb.open_table(str(t.table_path)), rows, filters, SCHEMA)


# Every other type the planner prunes by, under every stats-mode: values that
# straddle the truncation (long strings and binaries sharing a prefix, 0xff
# bytes whose rounded-up bound carries, a code point above U+FFFF at the cut).
def _long(chars, alphabet):
    return st.builds(lambda n, tail: chars * n + tail, st.integers(0, 18),
                     st.text(alphabet=alphabet, max_size=4) if isinstance(chars, str)
                     else st.binary(max_size=4))


EPOCH = dt.datetime(1970, 1, 1)
TYPED = {
    "t": (pa.int8(), st.integers(-128, 127)),
    "sm": (pa.int16(), st.integers(-3, 3)),
    "b": (pa.bool_(), st.booleans()),
    "d": (pa.date32(), st.dates(dt.date(1969, 12, 30), dt.date(1970, 1, 3))),
    "dec": (pa.decimal128(10, 2), st.decimals(-2, 2, places=2, allow_nan=False,
                                              allow_infinity=False)),
    "bin": (pa.binary(), st.one_of(_long(b"\xff", None), st.binary(max_size=3))),
    "ls": (pa.string(), st.one_of(_long("a", "ab\U0001f600"), _long("\U0001f600", "ab"))),
    # around the epoch, in each column's unit (the rows as stored)
    "ts3": (pa.timestamp("ms"), st.integers(-2000, 2000).map(
        lambda n: EPOCH + dt.timedelta(milliseconds=n))),
    "ts6": (pa.timestamp("us"), st.integers(-2000, 2000).map(
        lambda n: EPOCH + dt.timedelta(microseconds=n * 997))),
    "ts9": (pa.timestamp("ns"), st.integers(-3, 3).map(lambda n: EPOCH + dt.timedelta(seconds=n))),
    "ltz": (pa.timestamp("us", tz="UTC"), st.integers(-2000, 2000).map(
        lambda n: EPOCH.replace(tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=n * 997))),
}
TYPED_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("p", pa.int32(), False)]
                         + [pa.field(c, t) for c, (t, _) in TYPED.items()])
TYPED_FILTER = st.one_of([leaf(c, st.one_of(st.none(), v)) for c, (_, v) in TYPED.items()])
STATS_MODES = st.sampled_from(["none", "counts", "truncate(16)", "truncate(1)", "full"])


# two files, every column of the second above the first's (its strings and
# binaries past a 16-long cut: the first differing at the 18th)
LOW = {"t": -5, "sm": -1, "b": False, "d": dt.date(1969, 12, 31), "dec": Decimal("-1.00"),
       "bin": b"\x00", "ls": "a" * 18, "ts3": EPOCH - dt.timedelta(milliseconds=1),
       "ts6": EPOCH - dt.timedelta(microseconds=1), "ts9": EPOCH,
       "ltz": EPOCH.replace(tzinfo=dt.timezone.utc) - dt.timedelta(microseconds=1)}
HIGH = {"t": 100, "sm": 3, "b": True, "d": dt.date(1970, 1, 2), "dec": Decimal("1.50"),
        "bin": b"\xff" * 18, "ls": "a" * 17 + "\U0001f600",
        "ts3": EPOCH + dt.timedelta(milliseconds=1), "ts6": EPOCH + dt.timedelta(microseconds=1),
        "ts9": EPOCH + dt.timedelta(seconds=1),
        "ltz": EPOCH.replace(tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=1)}
TWO_FILES = [[LOW], [HIGH]]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@example(files=TWO_FILES, filters=[GreaterThan(("dec",), Decimal("1.00"))], mode="full",
         ls_mode=None)
@example(files=TWO_FILES, filters=[LessThan(("d",), dt.date(1970, 1, 1))], mode="truncate(16)",
         ls_mode=None)
@example(files=TWO_FILES, filters=[GreaterThanOrEqual(("bin",), b"\xff" * 18)],
         mode="truncate(16)", ls_mode=None)
@example(files=TWO_FILES, filters=[EqualTo(("ls",), "a" * 17 + "\U0001f600")],
         mode="truncate(16)", ls_mode=None)
@example(files=TWO_FILES, filters=[LessThanOrEqual(("sm",), -1)], mode="counts",
         ls_mode="full")
@example(files=TWO_FILES, filters=[LessThanOrEqual(("ls",), "a" * 18)], mode="full",
         ls_mode="full")
@example(files=TWO_FILES, filters=[StringStartsWith(("ls",), "a" * 17)], mode="full",
         ls_mode="truncate(1)")
@example(files=TWO_FILES, filters=[StringStartsWith(("ls",), "a" * 17 + "\U0001f600")],
         mode="full", ls_mode=None)
@example(files=TWO_FILES, filters=[GreaterThanOrEqual(("t",), 100)], mode="truncate(16)",
         ls_mode=None)
@example(files=TWO_FILES, filters=[GreaterThan(("ts3",), EPOCH + dt.timedelta(microseconds=999))],
         mode="truncate(16)", ls_mode=None)
@example(files=TWO_FILES, filters=[LessThanOrEqual(("ts6",), EPOCH - dt.timedelta(microseconds=1))],
         mode="full", ls_mode=None)
@example(files=TWO_FILES, filters=[EqualTo(("ltz",), HIGH["ltz"])], mode="truncate(16)",
         ls_mode=None)
@example(files=TWO_FILES, filters=[EqualTo(("b",), True)], mode="full", ls_mode=None)
@example(files=TWO_FILES, filters=[In(("t",), (7, 100))], mode="truncate(16)", ls_mode=None)
@example(files=TWO_FILES, filters=[Not(EqualTo(("sm",), -1))], mode="full", ls_mode=None)
@given(files=st.lists(st.lists(st.fixed_dictionaries(
           {c: st.one_of(st.none(), v) for c, (_, v) in TYPED.items()}), min_size=1, max_size=8),
           min_size=2, max_size=4),
       filters=st.lists(st.one_of(TYPED_FILTER, TYPED_FILTER.map(Not)), min_size=1, max_size=2),
       mode=STATS_MODES, ls_mode=st.one_of(st.none(), STATS_MODES))
def test_pruning_by_every_prunable_type_and_stats_mode(tmp_path_factory, files, filters, mode,
                                                        ls_mode):
    wh = Warehouse(tmp_path_factory.mktemp("prune-typed"))
    options = {"metadata.stats-mode": mode}
    if ls_mode is not None:
        options["fields.ls.stats-mode"] = ls_mode
    t = wh.create("t", TYPED_SCHEMA, partition_keys=["p"], options=options)
    rows, next_id = [], 0
    with rp.accelerated():                 # rowformat's statistics, Java's for each mode
        for chunk in files:
            batch = [{"id": next_id + i, "p": (next_id + i) % 2, **r}
                     for i, r in enumerate(chunk)]
            next_id += len(chunk)
            write(t, pa.Table.from_pylist(batch, TYPED_SCHEMA))
            rows += batch
    check_pruning(tb.open_table(str(t.table_path)), rows, filters, TYPED_SCHEMA)
