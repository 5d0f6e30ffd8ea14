"""Pruning by pushed filters never drops a matching row: a property test
over random tables (several files, random nulls, an append table or a
fixed-bucket primary-key one, with full statistics), random filters of the
kinds Spark pushes, and the planner's pruning (partitions, buckets, files)
checked against a plain evaluation of every row; the rows rowformat then
evaluates itself (batch_mask) are exactly the matching ones. No Spark
session: the planner and the masks are the source's own code."""
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from pyspark.sql.datasource import (
    EqualNullSafe, EqualTo, GreaterThan, GreaterThanOrEqual, In, IsNotNull, IsNull, LessThan,
    LessThanOrEqual, Not, StringContains, StringEndsWith, StringStartsWith,
)

from rowformat.paimon import tables as tb
from rowformat.spark.filters import batch_mask, evaluates, planner_predicate
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
    t = tb.open_table(str(t.table_path))
    roots = {f.name: f.type.root for f in tb.row_type(t).fields}
    predicate = planner_predicate(filters, roots, t.new_read_builder().new_predicate_builder())
    splits = tb.plan_splits(t, None, predicate=predicate)
    read = pa.concat_tables([pa.Table.from_batches([b]) for b in
                             tb.read_batches(t, splits, SCHEMA.names)] or [SCHEMA.empty_table()])
    kept = set(read.column("id").to_pylist())
    want = {r["id"] for r in rows if all(spark_value(f, r) is True for f in filters)}
    assert want <= kept, (filters, want - kept)
    # the filters rowformat evaluates give Spark's rows among those read
    mine = [f for f in filters if evaluates(f, read.schema)]
    if mine and read.num_rows:
        batch = read.combine_chunks().to_batches()[0]
        mask = batch_mask(mine, batch).to_pylist()
        by_id = {r["id"]: r for r in rows}
        got = {i for i, m in zip(batch.column("id").to_pylist(), mask) if m}
        assert got == {i for i in kept if all(spark_value(f, by_id[i]) is True for f in mine)}
