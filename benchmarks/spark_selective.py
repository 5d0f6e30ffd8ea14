"""Selective Spark queries on a paimon-row table against the same rows in
Spark's Parquet source (issue 42): pushed filters prune files by the
manifests' statistics, ``_ROW_ID`` predicates read only their blocks.

    .venv/bin/python benchmarks/spark_selective.py --rows 20000000 --files 200
    .venv/bin/python benchmarks/spark_selective.py --cluster ...   (as root)

``--cluster``: the same run on a standalone cluster on this machine, a
master and one worker with 2 cores on 127.0.0.1 started (and stopped, by
PID) here as tests/spark/test_cluster.py starts them: the worker in a mount
namespace where the driver's venv is an empty directory, rowformat shipped
to the executor as the wheel of this checkout in a venv-pack archive
(``spark.archives``); the driver is this process.

Data: ``spark.range(rows)`` in ``--files`` tasks (so each file holds a run
of ids), columns ``id``, ``name`` (``'user'`` + the id zero-padded to 10
digits: names sort as ids do), ``day`` (``id * 10 // rows``: 10 partitions),
``score`` (a double); written once by the paimon-row source (a row-tracking
table, ``metadata.stats-mode=full``) and once by Spark's Parquet source
(``partitionBy("day")``): one file per task either way, give or take the
tasks that straddle a day.

Queries (each on a freshly loaded DataFrame: PySpark 4.3.0 reuses a
DataFrame's pruned plan): ``id = x``, ``id BETWEEN x AND x+999``,
``name = '...'`` (their rows collected), ``day = 3`` (a count and a sum),
and ``_ROW_ID IN (ids)`` of ``--ids`` random ids against
``rowformat.spark.lookup_row_ids`` of the same ids, and a full scan (a
count and sums, no filter). The Python-source floor:
a Python source whose reader plans one split and yields no row, queried the
same way (what Spark costs any Python source: planning in a Python worker,
the task, the Arrow hand-off); for the partition filter and the full scan
also a Python source handing Spark the same rows as ready Arrow batches.
Files opened: the distinct data files any process on this machine opened
during each query (inotify watches on the tables' directories: the
executors' Python workers are other processes, on a cluster under another
JVM), beside the files paimon-row's planner keeps (planned in this process).
Medians of ``--repeats`` interleaved rounds; the run's section of
``benchmarks/results-spark-selective.md`` (``local[2]`` or the cluster) is
replaced, the other kept.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import pickle
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pyspark.sql.datasource import (  # noqa: E402
    CaseInsensitiveDict, DataSource, DataSourceReader, EqualTo, GreaterThanOrEqual, In,
    InputPartition, LessThanOrEqual,
)

from spark_tables import ArrowFilesSource, Runs, start_spark  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMAT = "paimon-row"
SCHEMA = "id bigint, name string, day int, score double"


class EmptySource(DataSource):
    """The floor: plans one split, reads no row."""

    @classmethod
    def name(cls):
        return "empty-floor"

    def schema(self):
        return SCHEMA

    def reader(self, schema):
        return EmptyReader()


class EmptyReader(DataSourceReader):
    def pushFilters(self, filters):
        return []

    def partitions(self):
        return [InputPartition(0)]

    def read(self, partition):
        return iter(())


def build(spark, rows: int, files: int, base: str) -> tuple[str, str, float, float]:
    df = spark.range(0, rows, numPartitions=files).selectExpr(
        "id", "concat('user', lpad(CAST(id AS STRING), 10, '0')) AS name",
        f"CAST(id * 10 DIV {rows} AS INT) AS day", "CAST(id % 1000 AS DOUBLE) / 7 AS score")
    table, parquet = os.path.join(base, "t"), os.path.join(base, "p")
    t0 = time.perf_counter()
    df.write.format(FORMAT).mode("overwrite").option("partitionKeys", "day") \
        .option("paimon.metadata.stats-mode", "full") \
        .option("paimon.row-tracking.enabled", "true").save(table)
    t_table = time.perf_counter() - t0
    t0 = time.perf_counter()
    df.write.mode("overwrite").partitionBy("day").parquet(parquet)
    return table, parquet, t_table, time.perf_counter() - t0


class OpenedFiles:
    """The files opened under some directories by any process of this
    machine, from inotify: the executors' Python workers open the data files,
    which a counter in this process would not see (on a cluster they are
    children of another JVM). Each directory is watched (IN_OPEN), so the
    directories must exist before; ``take()`` returns the paths opened since
    the last call."""
    IN_OPEN, IN_Q_OVERFLOW, IN_ISDIR = 0x20, 0x4000, 0x40000000

    def __init__(self, roots):
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.dirs: dict[int, str] = {}
        for root in roots:
            for d, _, _ in os.walk(root):
                wd = libc.inotify_add_watch(self.fd, d.encode(), self.IN_OPEN)
                if wd < 0:
                    raise OSError(ctypes.get_errno(), f"inotify_add_watch {d}")
                self.dirs[wd] = d

    def take(self) -> set[str]:
        got: set[str] = set()
        while True:
            try:
                buf = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return got
            off = 0
            while off < len(buf):
                wd, mask, _, n = struct.unpack_from("iIII", buf, off)
                name = buf[off + 16:off + 16 + n].rstrip(b"\0").decode()
                off += 16 + n
                if mask & self.IN_Q_OVERFLOW:    # a count would be too low: no figure at all
                    raise RuntimeError("inotify's queue overflowed: the files opened are unknown")
                if name and not mask & self.IN_ISDIR and wd in self.dirs:
                    got.add(os.path.join(self.dirs[wd], name))

    def close(self):
        os.close(self.fd)


def start_cluster(tmp: str, memory: str):
    """tests/spark/test_cluster.py's cluster with one worker of 2 cores: a
    master, then the worker in a mount namespace of its own where the
    driver's venv is an empty tmpfs (as on another node), both by PID; and
    the archive of this checkout's wheel. (cluster, archive); the caller
    stops the cluster."""
    sys.path.insert(0, ROOT)
    from tests.spark.test_cluster import Cluster, _why_not, build_archive
    why = _why_not()
    if why:
        sys.exit(f"cannot start the cluster: {why}")
    t0 = time.perf_counter()
    with open(os.path.join(tmp, "archive.log"), "wb") as log:
        archive = build_archive(tmp, log)
    print(f"archive built in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    c = Cluster(tmp)
    c.start(workers=1, cores=2, memory=memory)
    return c, archive


def cluster_session(c, archive: str, driver_memory: str, executor_memory: str, workdir: str):
    """A session of this process on ``c``: the executor's Python is the
    archive's (``./environment/bin/python``), the driver's this one; run
    from ``workdir``, where register() links ./environment for the driver's
    planning workers."""
    from pyspark.sql import SparkSession
    os.environ["PYSPARK_PYTHON"] = "./environment/bin/python"
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.chdir(workdir)
    conf = c.app_conf(**{"spark.archives": f"{archive}#environment",
                         "spark.executor.cores": "2", "spark.cores.max": "2",
                         "spark.executor.memory": executor_memory,
                         "spark.driver.memory": driver_memory,
                         # the tests' C1-only JIT and serial GC start faster; measured
                         # here is the JVM as deployed
                         "spark.driver.extraJavaOptions": "",
                         "spark.executor.extraJavaOptions": "",
                         "spark.sql.shuffle.partitions": "2"})
    builder = SparkSession.builder.master(c.master).appName("rowformat-spark-selective")
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def data_files(path: str, suffix: str) -> int:
    return sum(1 for _, _, names in os.walk(path) for x in names
               if x.endswith(suffix) and not x.startswith("."))


def write_matching_arrow(spark, table_path: str, out: str, filters) -> tuple[int, str]:
    """The rows of the partitions paimon-row's reader plans for ``filters``
    in this session, as Arrow IPC files of Spark's types, one a partition
    (as many tasks as paimon-row's read, each handing over the same rows):
    the input of the Arrow hand-off floor. (files, the Spark schema)"""
    import pyarrow as pa
    from rowformat.arrow_cast import cast_batch
    from rowformat.paimon import tables as tb
    from rowformat.spark.datasource import configured
    from rowformat.spark.spark_types import spark_arrow_schema, to_spark_schema
    table = tb.open_table(table_path)
    schema = to_spark_schema(tb.row_type(table))
    target = spark_arrow_schema(schema)
    source = type("S", (configured(spark),), {"pushdown": True})(
        CaseInsensitiveDict({"path": table_path}))
    reader = source.reader(source.schema())
    reader.pushFilters(list(filters))
    parts = list(reader.partitions())
    for i, part in enumerate(parts):
        with pa.OSFile(f"{out}.{i}", "wb") as f, pa.ipc.new_file(f, target) as w:
            for batch in tb.read_batches(table, pickle.loads(part.splits), schema.names):
                w.write_batch(cast_batch(batch, target, truncate=True))
    return len(parts), schema


def planned_files(table: str, filters, row_ids: bool = False) -> int:
    from rowformat.spark.datasource import RowDataSource
    from rowformat.spark.table_source import SplitGroup
    opts = {"path": table, **({"rowIds": "true"} if row_ids else {})}
    source = type("S", (RowDataSource,), {"pushdown": True})(CaseInsensitiveDict(opts))
    reader = source.reader(source.schema())
    reader.pushFilters(list(filters))
    n = 0
    for p in reader.partitions():
        n += sum(len(s.files) for s in pickle.loads(p.splits)) if isinstance(p, SplitGroup) \
            else len(p.files)
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--ids", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--cluster", action="store_true",
                    help="on a standalone master + one 2-core worker started here (root)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--executor-memory", default="4g", help="with --cluster")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__),
                                                  "results-spark-selective.md"))
    a = ap.parse_args(argv)
    import rowformat.spark
    import spark_tables
    base = tempfile.mkdtemp(prefix="spark-selective-")
    cluster, cwd = None, os.getcwd()
    try:
        if a.cluster:
            cluster, archive = start_cluster(base, "6g")
            cluster.wait(workers=1)
            a.master = cluster.master
            work = os.path.join(base, "driver")
            os.makedirs(work)
            spark = cluster_session(cluster, archive, a.driver_memory, a.executor_memory, work)
            # the executor cannot import benchmarks/: its sources go by value
            from pyspark import cloudpickle
            cloudpickle.register_pickle_by_value(spark_tables)
        else:
            # the workers unpickle ArrowFilesSource from spark_tables by reference
            here = os.path.dirname(os.path.abspath(__file__))
            os.environ["PYTHONPATH"] = os.pathsep.join(
                p for p in (here, os.environ.get("PYTHONPATH")) if p)
            spark = start_spark(a.master, a.driver_memory)
        try:
            out = run(spark, a, base)
        finally:
            spark.stop()
    finally:
        os.chdir(cwd)
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(base, ignore_errors=True)
    md = report(a, *out, os.getloadavg())
    merge(a.out, md)
    print(md)
    return 0


def run(spark, a, base):
    import rowformat.spark
    rowformat.spark.register(spark)
    # (register() leaves it off on Spark 4.3; every query here loads a new DataFrame)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(EmptySource)
    spark.dataSource.register(ArrowFilesSource)
    load_before = os.getloadavg()
    table, parquet, t_table, t_parquet = build(spark, a.rows, a.files, base)
    opened = OpenedFiles([table, parquet])
    try:
        return (*measure(spark, a, base, table, parquet, opened), t_table, t_parquet,
                load_before)
    finally:
        opened.close()


def measure(spark, a, base, table, parquet, opened):
    import rowformat.spark
    rng = random.Random(42)
    x = rng.randrange(a.rows - 1000)
    name = f"user{rng.randrange(a.rows):010d}"
    ids = sorted(rng.sample(range(a.rows), a.ids))

    def paimon():
        return spark.read.format(FORMAT).load(table)

    def pq():
        return spark.read.parquet(parquet)

    def floor():
        return spark.read.format("empty-floor").load()

    # op: (WHERE, the filters Spark pushes, the partition Parquet keeps, a handoff floor)
    queries = {
        "id = x": (f"id = {x}", [EqualTo(("id",), x)], None, False),
        "id BETWEEN x AND x+999": (f"id BETWEEN {x} AND {x + 999}",
                                   [GreaterThanOrEqual(("id",), x),
                                    LessThanOrEqual(("id",), x + 999)], None, False),
        "name = '...'": (f"name = '{name}'", [EqualTo(("name",), name)], None, False),
        "day = 3 (count, sum)": ("day = 3", [EqualTo(("day",), 3)], 3, True),
        "full scan (count, sums, max)": (None, [], None, True),
    }
    handoffs = {}
    for op, (_, filters, _, handoff) in queries.items():
        if handoff:
            path = os.path.join(base, f"handoff{len(handoffs)}.arrow")
            n, schema = write_matching_arrow(spark, table, path, filters)
            handoffs[op] = (path, n, schema)
            print(f"{op}: the hand-off floor reads {n} partitions", file=sys.stderr)

    def handoff_of(op):
        path, n, schema = handoffs[op]
        return lambda: spark.read.format("arrow-files").schema(schema) \
            .option("path", path).option("files", n).load()

    runs = Runs(a.repeats, None)
    # first uses (JVM warm-up, Python workers, planner workers) outside the timings
    for load in (paimon, pq, floor):
        load().where(f"id = {x}").collect()
    opened.take()
    # {op: {side: [(paimon-row files opened, Parquet files opened), ...]}}
    counts: dict = {}

    def counted(op, side, fn):
        def go():
            opened.take()
            got = fn()
            paths = opened.take()
            counts.setdefault(op, {}).setdefault(side, []).append(
                (sum(p.startswith(table + os.sep) and p.endswith(".row") for p in paths),
                 sum(p.startswith(parquet + os.sep) and p.endswith(".parquet") for p in paths)))
            return got
        return go

    files = {}
    total_paimon, total_parquet = data_files(table, ".row"), data_files(parquet, ".parquet")
    for op, (cond, filters, day, handoff) in queries.items():
        if day is None and cond is not None:
            def q(load, cond=cond):
                return sorted(tuple(r) for r in load().where(cond)
                              .select("id", "name", "day", "score").collect())
        elif cond is not None:
            def q(load, cond=cond):
                return tuple(load().where(cond).selectExpr("count(*)", "sum(id)").first())
        else:
            def q(load):
                return tuple(load().selectExpr("count(*)", "sum(id)", "sum(score)",
                                               "max(name)").first())
        sides = {"paimon-row": lambda q=q: q(paimon), "Parquet": lambda q=q: q(pq),
                 "floor": lambda q=q: q(floor)}
        if handoff:
            sides["Arrow hand-off floor"] = lambda q=q, op=op: q(handoff_of(op))
        got = runs.run(op, {s: counted(op, s, f) for s, f in sides.items()})
        if handoff:
            assert same(got["Arrow hand-off floor"], got["paimon-row"]), op
        assert same(got["paimon-row"], got["Parquet"]), (op, got["paimon-row"], got["Parquet"])
        files[op] = planned_files(table, filters)

    id_list = ", ".join(map(str, ids))

    def by_predicate():
        return sorted(tuple(r) for r in spark.read.format(FORMAT).option("rowIds", "true")
                      .load(table).where(f"_ROW_ID IN ({id_list})")
                      .select("_ROW_ID", "id", "name", "day", "score").collect())

    def by_lookup():
        ids_df = spark.createDataFrame([(i,) for i in ids], "_ROW_ID bigint")
        return sorted(tuple(r) for r in rowformat.spark.lookup_row_ids(
            ids_df, table, ["id", "name", "day", "score"]).collect())
    op = f"_ROW_ID IN ({a.ids} random ids)"
    got = runs.run(op, {"paimon-row": counted(op, "paimon-row", by_predicate),
                        "lookup_row_ids": counted(op, "lookup_row_ids", by_lookup)})
    assert got["paimon-row"] == got["lookup_row_ids"] and len(got["paimon-row"]) == a.ids
    files[op] = planned_files(table, [In(("_ROW_ID",), tuple(ids))], row_ids=True)
    return runs, files, counts, total_paimon, total_parquet


def same(a, b) -> bool:
    """Equal results; doubles (summed in whichever order the tasks ran) to
    1e-9 relative."""
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def opened_cell(counts, op, side, which) -> str:
    """The files a side opened: one figure when every round opened as many."""
    got = sorted({c[which] for c in counts[op][side]})
    return str(got[0]) if len(got) == 1 else "-".join(map(str, (got[0], got[-1])))


SECTIONS = ("## `local[2]`", "## Standalone cluster")


def merge(path: str, section: str) -> None:
    """Replaces this run's section of the results file (by its heading),
    keeping the other mode's."""
    title = "# Selective Spark queries: paimon-row against Parquet (issue 42)\n"
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = title
    parts, cur = {}, None
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            cur = line
        if cur is not None:
            parts[cur] = parts.get(cur, "") + line
    mine = section.splitlines(keepends=True)[0]
    parts[mine] = section
    order = sorted(parts, key=lambda h: next(
        (i for i, s in enumerate(SECTIONS) if h.startswith(s)), len(SECTIONS)))
    with open(path, "w") as f:
        f.write(title + "\n" + "\n".join(parts[h].rstrip("\n") + "\n" for h in order))


def report(a, runs, files, counts, total_paimon, total_parquet, t_table, t_parquet, load_before,
           load_after) -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=os.path.dirname(__file__)).stdout.strip()
    except OSError:
        commit = ""
    commit = commit or os.environ.get("ROWFORMAT_COMMIT", "?")
    where = ("a standalone master and one worker with 2 cores on 127.0.0.1, rowformat shipped "
             "to the executor as a venv-pack archive of this checkout's wheel (the worker "
             "cannot see the driver's venv)" if a.cluster else f"`{a.master}`")
    lines = [
        (f"{SECTIONS[1]}: a master and 1 worker (2 cores)" if a.cluster else SECTIONS[0]), "",
        f"`.venv/bin/python benchmarks/spark_selective.py{' --cluster' if a.cluster else ''} "
        f"--rows {a.rows} --files {a.files} --ids {a.ids} --repeats {a.repeats}` at {commit}, "
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, {where}; medians of "
        f"{a.repeats} interleaved rounds, each query on a freshly loaded DataFrame. Data files: "
        f"paimon-row {total_paimon}, Parquet {total_parquet}; built in {t_table:.0f} s "
        f"(paimon-row) and {t_parquet:.0f} s (Parquet). Files opened: distinct data files "
        f"opened by any process during the query (inotify), every round; planned: the files "
        f"paimon-row's planner keeps.",
        "",
        "| query | paimon-row | Parquet | ratio | floor | ratio to floor | files opened "
        "(paimon-row / Parquet of) | planned | target |",
        "|---|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for op, planned in files.items():
        if op.startswith("_ROW_ID"):
            continue
        p, q, fl = (runs.median(op, s) for s in ("paimon-row", "Parquet", "floor"))
        handoff = "Arrow hand-off floor" in runs.wall[op]
        if handoff:      # the floor of a Python source handing Spark these rows
            fl = runs.median(op, "Arrow hand-off floor")
        if op.startswith("full scan"):
            target = "none (the issue: unchanged within noise)"
        else:
            met = p <= 1.2 * q or p <= 1.2 * fl
            target = f"<= 1.2x Parquet or floor: {'met' if met else 'missed'}"
        lines.append(f"| `{op}` | {p:.2f} s | {q:.2f} s | {p / q:.2f}x | {fl:.2f} s"
                     f"{' (Arrow hand-off)' if handoff else ''} | {p / fl:.2f}x | "
                     f"{opened_cell(counts, op, 'paimon-row', 0)} / "
                     f"{opened_cell(counts, op, 'Parquet', 1)} of {total_paimon} / "
                     f"{total_parquet} | {planned} | {target} |")
    op = next(o for o in files if o.startswith("_ROW_ID"))
    p, q = runs.median(op, "paimon-row"), runs.median(op, "lookup_row_ids")
    lines += ["", "| query | paimon-row (`WHERE`) | `lookup_row_ids` | ratio | files opened "
              "(`WHERE` / `lookup_row_ids`) | planned | target |",
              "|---|---:|---:|---:|---|---:|---|",
              f"| `{op}` | {p:.2f} s | {q:.2f} s | {p / q:.2f}x | "
              f"{opened_cell(counts, op, 'paimon-row', 0)} / "
              f"{opened_cell(counts, op, 'lookup_row_ids', 0)} of {total_paimon} (only the "
              f"ids' rows: RowFileReader.take) | {files[op]} | <= 1.5x: "
              f"{'met' if p <= 1.5 * q else 'missed'} |"]
    lines += ["", "Every wall time (s):", ""]
    for op, sides in runs.wall.items():
        for side, times in sides.items():
            lines.append(f"- {op}, {side}: {', '.join(f'{t:.2f}' for t in times)}")
    lines += ["", f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}"
              f"; after: {', '.join(f'{x:.2f}' for x in load_after)}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
