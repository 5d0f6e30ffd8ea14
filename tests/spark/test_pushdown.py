"""Spark's filters pushed to ``paimon-row`` tables (rowformat.spark.filters):
the rows they keep are Spark's own answer on the same rows (Spark's Parquet
source holds the reference copy), partitions and files are pruned by the
manifests' statistics, ``_ROW_ID`` predicates read only the files and rows
they name, and register() turns pushdown on unless the conf was set."""
from __future__ import annotations

import datetime as dt
import math
import pickle
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (
    CaseInsensitiveDict, EqualNullSafe, EqualTo, GreaterThan, GreaterThanOrEqual, In, IsNotNull,
    IsNull, LessThan, LessThanOrEqual, Not, StringContains, StringEndsWith, StringStartsWith,
)

import rowformat.spark
from rowformat.spark import FORMAT_NAME
from rowformat.spark.datasource import PUSHDOWN_CONF, RowDataSource
from rowformat.spark.filters import batch_mask, evaluates, row_id_ranges
from rowformat.spark.table_source import FilteringReader, RowIdSlices, SplitGroup, TableReader

SCHEMA = ("id BIGINT, i INT, d DOUBLE, s STRING, b BINARY, dec DECIMAL(10,2), day DATE, "
          "flag BOOLEAN, ts TIMESTAMP, ntz TIMESTAMP_NTZ")
NAN, INF = float("nan"), float("inf")
EPOCH, US = dt.datetime(1970, 1, 1), dt.timedelta(microseconds=1)
UTC = dt.timezone.utc
FIRST, LAST = dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
LEAP = dt.datetime(2024, 2, 29, 12, 0, 0, 1)
ROWS = [
    (0, 0, 0.0, "", b"", Decimal("0.00"), dt.date(1970, 1, 1), False,
     EPOCH.replace(tzinfo=UTC), EPOCH),
    (1, -2 ** 31, -0.0, "a", b"\x00", Decimal("-1.10"), dt.date(1, 1, 1), True,
     FIRST.replace(tzinfo=UTC), FIRST),
    (2, 2 ** 31 - 1, NAN, "ab", b"\xff", Decimal("99999999.99"), dt.date(9999, 12, 31), True,
     LAST.replace(tzinfo=UTC), LAST),
    (3, None, None, None, None, None, None, None, None, None),
    (4, 7, INF, "\u00e9t\u00e9", b"\x00\xff", Decimal("1.10"), dt.date(2024, 2, 29), False,
     LEAP.replace(tzinfo=UTC), LEAP),
    (5, -7, -INF, "\U0001f600", b"\x7f", Decimal("1.11"), dt.date(2024, 3, 1), None,
     (EPOCH - US).replace(tzinfo=UTC), EPOCH - US),
    (6, 7, 1.5, "b", b"\x80", Decimal("-99999999.99"), dt.date(1969, 12, 31), True,
     EPOCH.replace(tzinfo=UTC), EPOCH + US),
    (7, 1, NAN, "ab\x00", b"\xfe\xff", Decimal("1.10"), None, False, None, EPOCH),
]

# (Spark SQL condition, the pushed filter it becomes)
CASES = [
    ("i = 7", EqualTo(("i",), 7)),
    ("i <=> 7", EqualNullSafe(("i",), 7)),
    ("i > -7", GreaterThan(("i",), -7)),
    ("i >= 2147483647", GreaterThanOrEqual(("i",), 2 ** 31 - 1)),
    ("i < 1", LessThan(("i",), 1)),
    ("i <= -2147483648", LessThanOrEqual(("i",), -2 ** 31)),
    ("i IN (7, 1, -7)", In(("i",), (7, 1, -7))),
    ("i IS NULL", IsNull(("i",))),
    ("i IS NOT NULL", IsNotNull(("i",))),
    ("NOT i IN (7, 1)", Not(In(("i",), (7, 1)))),
    ("d = double('NaN')", EqualTo(("d",), NAN)),
    ("d > 1.0", GreaterThan(("d",), 1.0)),
    ("d >= double('NaN')", GreaterThanOrEqual(("d",), NAN)),
    ("d < double('NaN')", LessThan(("d",), NAN)),
    ("d <= double('NaN')", LessThanOrEqual(("d",), NAN)),
    ("d > double('NaN')", GreaterThan(("d",), NAN)),
    ("d = 0.0", EqualTo(("d",), 0.0)),
    ("d < double('Infinity')", LessThan(("d",), INF)),
    ("d IN (double('NaN'), 1.5)", In(("d",), (NAN, 1.5))),
    ("NOT d = 1.5", Not(EqualTo(("d",), 1.5))),
    ("s = 'ab'", EqualTo(("s",), "ab")),
    ("s > 'ab'", GreaterThan(("s",), "ab")),
    ("s < '\u00e9'", LessThan(("s",), "\u00e9")),
    ("s >= '\U0001f600'", GreaterThanOrEqual(("s",), "\U0001f600")),
    ("s LIKE 'a%'", StringStartsWith(("s",), "a")),
    ("s LIKE '%b'", StringEndsWith(("s",), "b")),
    ("s LIKE '%t%'", StringContains(("s",), "t")),
    ("s LIKE ''", EqualTo(("s",), "")),
    ("s <=> NULL", EqualNullSafe(("s",), None)),
    ("NOT s LIKE 'a%'", Not(StringStartsWith(("s",), "a"))),
    ("b = X'00'", EqualTo(("b",), b"\x00")),
    ("b > X'7F'", GreaterThan(("b",), b"\x7f")),
    ("b <= X'00FF'", LessThanOrEqual(("b",), b"\x00\xff")),
    ("dec = 1.1", EqualTo(("dec",), Decimal("1.10"))),
    ("dec > 1.10", GreaterThan(("dec",), Decimal("1.10"))),
    ("dec < -1.1", LessThan(("dec",), Decimal("-1.10"))),
    ("dec IN (1.10, 0.00)", In(("dec",), (Decimal("1.10"), Decimal("0.00")))),
    ("day = DATE'2024-02-29'", EqualTo(("day",), dt.date(2024, 2, 29))),
    ("day < DATE'1970-01-01'", LessThan(("day",), dt.date(1970, 1, 1))),
    ("day >= DATE'9999-12-31'", GreaterThanOrEqual(("day",), dt.date(9999, 12, 31))),
    ("flag = true", EqualTo(("flag",), True)),
    ("flag <=> false", EqualNullSafe(("flag",), False)),
    ("NOT flag = true", Not(EqualTo(("flag",), True))),
    ("ts = TIMESTAMP'1970-01-01 00:00:00+00:00'", EqualTo(("ts",), EPOCH.replace(tzinfo=UTC))),
    ("ts < TIMESTAMP'1970-01-01 00:00:00+00:00'", LessThan(("ts",), EPOCH.replace(tzinfo=UTC))),
    ("ts >= TIMESTAMP'2024-02-29 12:00:00.000001+00:00'",
     GreaterThanOrEqual(("ts",), LEAP.replace(tzinfo=UTC))),
    ("ts IN (TIMESTAMP'0001-01-01 00:00:00+00:00', TIMESTAMP'9999-12-31 23:59:59.999999+00:00')",
     In(("ts",), (FIRST.replace(tzinfo=UTC), LAST.replace(tzinfo=UTC)))),
    ("ntz = TIMESTAMP_NTZ'1969-12-31 23:59:59.999999'", EqualTo(("ntz",), EPOCH - US)),
    ("ntz > TIMESTAMP_NTZ'1970-01-01 00:00:00'", GreaterThan(("ntz",), EPOCH)),
    ("ntz <= TIMESTAMP_NTZ'0001-01-01 00:00:00'", LessThanOrEqual(("ntz",), FIRST)),
    ("NOT ntz = TIMESTAMP_NTZ'1970-01-01 00:00:00'", Not(EqualTo(("ntz",), EPOCH))),
    ("i IN (7, NULL)", In(("i",), (7, None))),
    ("NOT i IN (7, NULL)", Not(In(("i",), (7, None)))),
]


@pytest.fixture(scope="module")
def edge(spark, tmp_path_factory):
    """The edge rows as a paimon-row table, a Parquet copy and Arrow."""
    base = tmp_path_factory.mktemp("pushdown-edge")
    df = spark.createDataFrame(ROWS, SCHEMA)
    table, parquet = str(base / "t"), str(base / "p")
    df.write.format(FORMAT_NAME).mode("overwrite").save(table)
    df.write.mode("overwrite").parquet(parquet)
    return table, parquet, df.toArrow()


@pytest.fixture(scope="module")
def registered(spark):
    before = spark.conf.get(PUSHDOWN_CONF, None)
    rowformat.spark.register(spark)
    spark.conf.set(PUSHDOWN_CONF, "true")    # (register() leaves it off on Spark 4.3)
    yield spark
    if before is None:
        spark.conf.unset(PUSHDOWN_CONF)
    else:
        spark.conf.set(PUSHDOWN_CONF, before)


def _ids(df) -> list[int]:
    return sorted(r.id for r in df.select("id").collect())


@pytest.mark.parametrize("condition,pushed", CASES, ids=[c for c, _ in CASES])
def test_filter_on_batches_is_sparks_answer(spark, edge, condition, pushed):
    """batch_mask keeps exactly the rows Spark's own filter keeps."""
    _, parquet, arrow = edge
    want = _ids(spark.read.parquet(parquet).where(condition))
    batch = arrow.combine_chunks().to_batches()[0]
    assert evaluates(pushed, batch.schema), pushed
    mask = batch_mask([pushed], batch).to_pylist()
    assert sorted(i for i, keep in zip(batch.column("id").to_pylist(), mask) if keep) == want


CONDITIONS = [c for c, _ in CASES] + [
    "i > 0 AND s LIKE 'a%'", "d > 1.0 AND NOT flag = true", "dec >= 0 AND day IS NOT NULL",
    "id = 3", "i = 7 OR s = 'ab'", "s IN ('ab', 'b', NULL)",
    "ntz >= TIMESTAMP_NTZ'1970-01-01 00:00:00' AND ts < TIMESTAMP'2000-01-01 00:00:00+00:00'",
]


@pytest.mark.parametrize("condition", CONDITIONS)
def test_pushed_read_is_sparks_answer(registered, edge, condition):
    """Through the source, with pushdown on (Spark's own filter objects):
    the rows Spark's Parquet source gives for the same condition."""
    spark = registered
    table, parquet, _ = edge
    want = _ids(spark.read.parquet(parquet).where(condition))
    assert _ids(spark.read.format(FORMAT_NAME).load(table).where(condition)) == want


def _reader(path: str, pushdown: bool = True, **options):
    opts = CaseInsensitiveDict({"path": path, **options})
    source = type("S", (RowDataSource,), {"pushdown": pushdown})(opts)
    return source.reader(source.schema())


def _planned_files(reader) -> int:
    n = 0
    for p in reader.partitions():
        if isinstance(p, SplitGroup):
            n += sum(len(s.files) for s in pickle.loads(p.splits))
        else:
            n += len(p.files)
    return n


@pytest.fixture(scope="module")
def many_files(spark, tmp_path_factory):
    """20,000 rows in 10 files (ids in file order), with full statistics
    (metadata.stats-mode: the table option), partitioned by `part`; ``ts``
    and ``ntz`` the id's second after the epoch."""
    path = str(tmp_path_factory.mktemp("pushdown-files") / "t")
    spark.range(0, 20000, numPartitions=10) \
        .selectExpr("id", "concat('user', id) AS name", "CAST(id % 2 AS INT) AS part",
                    "timestamp_seconds(id) AS ts",
                    "CAST(timestamp_seconds(id) AS TIMESTAMP_NTZ) AS ntz") \
        .write.format(FORMAT_NAME).mode("overwrite").option("partitionKeys", "part") \
        .option("paimon.metadata.stats-mode", "full") \
        .option("paimon.row-tracking.enabled", "true").save(path)
    return path


# Task k writes ids [2000k, 2000k + 2000) as two files, the even ids in
# part=0 and the odd ones in part=1: each file's id range is about 2000 wide.
@pytest.mark.parametrize("filters,files", [
    ([EqualTo(("id",), 4242)], 2),            # [4000, 5998] and [4001, 5999]
    ([EqualTo(("id",), 4242), EqualTo(("part",), 0)], 1),
    ([GreaterThanOrEqual(("id",), 4000), LessThanOrEqual(("id",), 5999)], 2),
    ([GreaterThan(("id",), 19998)], 1),
    # names compare as strings: four files' [min, max] hold 'user4242'
    # (task 0's ['user0', 'user998'] among them)
    ([EqualTo(("name",), "user4242")], 4),
    ([EqualTo(("part",), 1)], 10),
    ([In(("id",), (1, 19999))], 3),           # [0, 1998], [1, 1999], [18001, 19999]
    ([IsNull(("id",))], 0),
    # ts and ntz: the id's second after the epoch (Spark's literals: aware
    # UTC for a TIMESTAMP, naive for a TIMESTAMP_NTZ)
    ([GreaterThan(("ts",), (EPOCH + dt.timedelta(seconds=19998)).replace(tzinfo=UTC))], 1),
    ([LessThan(("ntz",), EPOCH + dt.timedelta(seconds=2))], 2),
    ([], 20),
])
def test_planner_prunes_files(many_files, filters, files):
    reader = _reader(many_files)
    assert isinstance(reader, FilteringReader)
    reader.pushFilters(list(filters))
    assert _planned_files(reader) == files


def test_pushdown_off_switch(many_files):
    assert type(_reader(many_files, pushFilters="false")) is TableReader
    assert type(_reader(many_files, pushdown=False)) is TableReader
    assert isinstance(_reader(many_files, pushdown=False, pushFilters="true"), FilteringReader)
    with pytest.raises(ValueError, match="pushFilters"):
        _reader(many_files, pushFilters="yes")


def test_unhandled_filters_go_back_to_spark(many_files):
    """Spark gets back, by reference, exactly the filters rowformat does not
    evaluate (a timestamp literal on a BIGINT column here)."""
    reader = _reader(many_files)
    odd = EqualTo(("id",), dt.datetime(2020, 1, 1))
    nested = EqualTo(("name", "x"), "a")
    kept = EqualTo(("id",), 5)
    back = list(reader.pushFilters([kept, odd, nested]))
    assert len(back) == 2 and back[0] is odd and back[1] is nested


def test_row_id_predicates_read_only_their_rows(registered, many_files):
    spark = registered
    ids = [3, 4242, 4243, 19999, 123456789]
    reader = _reader(many_files, rowIds="true")
    reader.pushFilters([In(("_ROW_ID",), tuple(ids))])
    parts = reader.partitions()
    assert parts and all(isinstance(p, RowIdSlices) for p in parts)
    touched = sorted((f[2], f[3]) for p in parts for f in p.files)
    assert len(touched) == 3                      # the 3 files holding rows 3, 4242-4243, 19999

    df = spark.read.format(FORMAT_NAME).option("rowIds", "true").load(many_files)
    got = df.where(f"_ROW_ID IN ({', '.join(map(str, ids))})").select("_ROW_ID", "id", "name")
    full = spark.read.format(FORMAT_NAME).option("rowIds", "true") \
        .option("pushFilters", "false").load(many_files)
    want = full.where(f"_ROW_ID IN ({', '.join(map(str, ids))})").select("_ROW_ID", "id", "name")
    assert sorted(got.collect()) == sorted(want.collect()) and len(want.collect()) == 4
    for cond in ("_ROW_ID BETWEEN 1990 AND 2010", "_ROW_ID = 7 AND id = 7",
                 "_ROW_ID > 19995", "_ROW_ID < 3 AND _ROW_ID >= 1"):
        a = spark.read.format(FORMAT_NAME).option("rowIds", "true").load(many_files).where(cond)
        b = full.where(cond)
        assert sorted(a.collect()) == sorted(b.collect()), cond


def test_the_conf_as_it_is_at_each_read(registered, many_files):
    """register() saw the conf on; turned off later, reads still work (the
    source follows the conf each planner is given, not register()'s)."""
    spark = registered
    spark.conf.set(PUSHDOWN_CONF, "false")
    try:
        df = spark.read.format(FORMAT_NAME).load(many_files)
        assert df.where("id = 4242").count() == 1 and df.count() == 20000
    finally:
        spark.conf.set(PUSHDOWN_CONF, "true")


def test_row_id_ranges():
    assert row_id_ranges([]) is None
    assert row_id_ranges([In(("_ROW_ID",), (5, 3, 4, 9))]).tolist() == [[3, 6], [9, 10]]
    assert row_id_ranges([GreaterThan(("_ROW_ID",), 5), LessThanOrEqual(("_ROW_ID",), 8),
                          In(("_ROW_ID",), (1, 6, 8, 9))]).tolist() == [[6, 7], [8, 9]]
    assert row_id_ranges([EqualTo(("_ROW_ID",), 2), EqualTo(("_ROW_ID",), 3)]).tolist() == []
    assert row_id_ranges([Not(EqualTo(("_ROW_ID",), 2))]) is None


def test_register_turns_pushdown_on_unless_set(spark):
    """On, unless the session set it, where Spark keeps a pushed read on its
    query; Spark 4.3 keeps it on the DataFrame (a later unfiltered query of
    it would reuse the pruned read): left off there."""
    from rowformat.spark.datasource import reuses_pushed_reads
    assert reuses_pushed_reads("4.3.0") and not reuses_pushed_reads("4.4.0")
    before = spark.conf.get(PUSHDOWN_CONF, None)
    try:
        spark.conf.set(PUSHDOWN_CONF, "false")
        rowformat.spark.register(spark)
        assert spark.conf.get(PUSHDOWN_CONF) == "false"
        spark.conf.unset(PUSHDOWN_CONF)
        rowformat.spark.register(spark)
        want = None if reuses_pushed_reads(spark.version) else "true"
        assert spark.conf.get(PUSHDOWN_CONF, None) == want
    finally:
        if before is None:
            spark.conf.unset(PUSHDOWN_CONF)
        else:
            spark.conf.set(PUSHDOWN_CONF, before)
        rowformat.spark.register(spark)


def test_the_spark_4_3_reuse_that_keeps_pushdown_off_by_default(registered, many_files):
    """Why register() leaves pushdown off where reuses_pushed_reads(): Spark
    4.3 keeps the read a pushed filter planned on the DataFrame's source
    (PythonDataSourceV2's read info), and a later query of the same
    DataFrame that pushes no filter reads those pruned files. Should this
    fail on such a Spark, its reuse is gone and so may the gate."""
    from rowformat.spark.datasource import reuses_pushed_reads
    spark = registered
    if not reuses_pushed_reads(spark.version):
        pytest.skip(f"Spark {spark.version} keeps a pushed read on its query")
    df = spark.read.format(FORMAT_NAME).load(many_files)
    assert df.where("id < 2000").count() == 2000            # 2 of 20 files planned
    assert df.count() == 2000                               # not 20,000: the pruned read
    assert spark.read.format(FORMAT_NAME).load(many_files).count() == 20000


@pytest.fixture(scope="module")
def bare_files(tmp_path_factory):
    """Two bare .row files of 2,000 rows each in blocks of about 100 rows."""
    from rowformat import RowFileWriter
    d = tmp_path_factory.mktemp("pushdown-bare")
    paths = []
    for n in range(2):
        path = str(d / f"f{n}.row")
        with RowFileWriter(path, "k BIGINT NOT NULL, s STRING", block_size=1024) as w:
            w.write_rows([(n * 10000 + i, None if i % 7 == 0 else f"s{i}") for i in range(2000)])
        paths.append(path)
    return str(d), paths


def test_row_number_predicates_on_bare_files(registered, bare_files):
    """``_row`` ranges and ``_file`` equalities pick the blocks and files
    read; the rows are those of the same filter over the whole read."""
    spark = registered
    d, paths = bare_files
    from rowformat import RowFileReader
    from rowformat.spark.file_source import BlockRange, FilteringRowReader
    with RowFileReader(paths[0], "k BIGINT NOT NULL, s STRING") as r:
        starts = r.block_index.row_starts.tolist()
    assert len(starts) > 10

    reader = _reader(d, paimonSchema="k BIGINT NOT NULL, s STRING", rowNumbers="true",
                     rowsPerPartition=1)
    assert isinstance(reader, FilteringRowReader)
    back = reader.pushFilters([In(("_row",), (5, 1500)), EqualTo(("_file",), paths[1])])
    assert back == []                              # both evaluated on the batches
    parts = reader.partitions()
    assert all(isinstance(p, BlockRange) and p.path == paths[1] for p in parts)
    # one block each: the ones holding rows 5 and 1500
    assert sorted(p.start for p in parts) == [0, max(s for s in starts if s <= 1500)]
    assert type(_reader(d, paimonSchema="k BIGINT NOT NULL, s STRING",
                        pushFilters="false")) is not FilteringRowReader

    def load(push):
        return spark.read.format(FORMAT_NAME).option("paimonSchema", "k BIGINT NOT NULL, s STRING") \
            .option("rowNumbers", "true").option("pushFilters", push).load(d)
    for cond in ("_row = 1999", "_row IN (0, 7, 1500, 5000)", "_row BETWEEN 95 AND 305",
                 "_row > 1990 AND s IS NULL", "_row < 3 OR k = 10004", "NOT _row < 1995",
                 f"_file = '{paths[0]}' AND _row >= 1998", "_row = -1", "_row >= 2000",
                 f"_file IN ('{paths[1]}', 'nope') AND _row IN (1, 2)"):
        got = load("true").where(cond).select("_file", "_row", "k", "s")
        want = load("false").where(cond).select("_file", "_row", "k", "s")
        assert sorted(got.collect()) == sorted(want.collect()), cond
    assert load("true").where("_row = 1999").count() == 2


def test_a_flag_that_is_neither_true_nor_false_is_an_error_naming_it(bare_files, many_files):
    d, _ = bare_files
    with pytest.raises(ValueError, match="option rowNumbers must be 'true' or 'false', got 'yes'"):
        _reader(d, paimonSchema="k BIGINT NOT NULL, s STRING", rowNumbers="yes")
    with pytest.raises(ValueError, match="option rowIds must be 'true' or 'false', got '1'"):
        _reader(many_files, rowIds="1")
