"""One local Spark session, side by side: a Paimon table written and scanned
through the ``paimon-row`` source against Spark's built-in Parquet source,
on the same cached DataFrame.

    .venv/bin/python benchmarks/spark_tables.py [--rows 1000000] [--repeats 5]
        [--master 'local[2]'] [--arrow-batch-rows N] [--lookups n:k,...]
        [--only 'write,full scan'] [--out benchmarks/results-spark.md]

The data is ``benchmarks/dataset.py``'s ``generate(rows)`` as a DataFrame of
two partitions, cached and counted before any timing, so both sides write the
same in-memory rows. Each repeat runs the sides of an operation back to back,
in rotating order (the machine is shared: neighbours then slow every side
alike); each cell is the median, with the CPU seconds of Spark's JVM and of
its Python workers beside it. One untimed round warms up the JVM and the
Python workers first. The "Python-source floor" sides are what Spark itself
costs a Python source that does no work (see benchmarks/README.md): for the
write, ``null-sink``, a Python source whose writer only counts the rows it is
sent (beside it, a ``mapInArrow`` that only counts: Spark's rows to Arrow
batches in Python workers, without a source's writer around them).

* write: ``df.write.format("paimon-row").mode("overwrite").save(table)`` vs
  ``df.write.mode("overwrite").parquet(dir)``; partitioned by ``flag``
  (2 values): ``option("partitionKeys", "flag")`` vs ``partitionBy("flag")``.
* full scan + aggregate: group by ``city`` (200 values), aggregates touching
  every one of the 10 columns, so Parquet's column pruning cannot skip any.
* projected scan + aggregate: ``count(*)``, ``sum(score)`` by ``city``; Parquet
  prunes to two columns, paimon-row gets the same projection through
  ``.schema("city string, score double")`` (Python sources get no pruning).

* to_fory / from_fory: the table's rows (the 8 columns pyfory can encode) to
  Fory row bytes and back, ``rowformat.spark.to_fory``/``from_fory`` (Arrow
  UDFs over the batch codec) against the same conversion with pyfory 1.7.7
  in a ``pandas_udf`` (a Python object per row, as pyfory's API works);
  from_fory's floor is an ``arrow_udf`` over the same BINARY column that
  decodes nothing and returns rows decoded beforehand (one Arrow batch's
  worth, reused): what Spark costs any Arrow UDF with that input and result;
  to_fory's floor likewise returns Fory bytes made beforehand. Beside them,
  an identity ``arrow_udf`` returning the struct it is given (Spark
  converting the struct both ways).
* lookup k of n: rows fetched by ``_ROW_ID`` with ``lookup_row_ids`` against a
  Parquet join (broadcast) finding the same rows by ``id``; tables made with
  ``spark.range`` (``--lookups``, default 2,000 of 10M and 20,000 of 2M).
  ``lookup_row_ids`` takes its default path: the driver when the k ids
  (cached, so Spark's statistics know their size) are at most its
  ``local_max_rows`` (10,000), else ``mapInArrow``; "distributed" is the same
  lookup forced through ``mapInArrow`` (``local_max_rows=0``). The floor is the same aggregate over
  the cached ids alone: what Spark costs the query of k rows with no lookup;
  beside it, the touched blocks (read beforehand) decompressed whole on 2
  threads on the driver: the least the lookup itself decodes.

Targets (issue 25): write and full scan within 1.1x of the Python-source
floor; to_fory/from_fory at least 1M rows/s per core and at most 0.2x
pyfory's time; lookups at most 0.2x (2,000 of 10M) and 0.5x (20,000 of 2M)
of the Parquet join.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import math
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# Spark's Python workers must run this interpreter (it has rowformat installed).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import pyarrow as pa  # noqa: E402
from pyspark.sql.datasource import (  # noqa: E402
    DataSource, DataSourceArrowWriter, DataSourceReader, InputPartition, WriterCommitMessage)
from pyspark.sql.types import StructType  # noqa: E402

from dataset import generate  # noqa: E402
from floor import decompress_list, split_in  # noqa: E402

FORMAT = "paimon-row"
FLOOR = "Python-source floor"
BASE = "baseline"
DIST = "distributed"          # a lookup forced through mapInArrow
IDENTITY = "identity arrow_udf"
MAP_IN_ARROW = "mapInArrow that only counts"
DECODE = "decompress the touched blocks"   # of a lookup, on the driver
SMALL_BLOCKS = "table of 8 KiB blocks"  # a lookup on a table with file.block-size = 8kb
BLOCKS: dict = {}                      # (lookup op, side) -> blocks its rows touch
# op -> the most ours may take, as a multiple of the floor (write, scan) or
# of the baseline (the rest)
FLOOR_TARGETS = {"write": 1.1, "full scan + aggregate": 1.1}
TARGETS = {"to_fory": 0.2, "from_fory": 0.2}
LABELS = {"write": "Parquet", "partitioned write": "Parquet", "full scan + aggregate": "Parquet",
          "projected scan + aggregate": "Parquet", "to_fory": "pyfory pandas_udf",
          "from_fory": "pyfory pandas_udf"}
LOOKUPS = "10000000:2000,2000000:20000"         # n:k,... (the two cases)
FORY_COLUMNS = ["id", "user_id", "score", "flag", "name", "city", "tags", "payload"]
FORY_DDL = ("id BIGINT, user_id INT, score DOUBLE, flag BOOLEAN, name STRING, city STRING, "
            "tags ARRAY<STRING>, payload BINARY")
FORY_ARROW = pa.schema([("id", pa.int64()), ("user_id", pa.int32()), ("score", pa.float64()),
                        ("flag", pa.bool_()), ("name", pa.string()), ("city", pa.string()),
                        ("tags", pa.list_(pa.string())), ("payload", pa.binary())])
PROJECTION = "city string, score double"


def start_spark(master: str, driver_memory: str):
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.master(master).appName("rowformat-spark-bench")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", driver_memory)
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.shuffle.partitions", "2"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def full_aggregate(df):
    """Aggregates by city that read every column."""
    from pyspark.sql import functions as F
    return df.groupBy("city").agg(
        F.count("*").alias("n"), F.max("id").alias("max_id"), F.sum("user_id").alias("users"),
        F.sum("score").alias("score"), F.sum(F.col("flag").cast("int")).alias("flags"),
        F.sum(F.length("name")).alias("name_chars"), F.sum(F.size("tags")).alias("tags"),
        F.max("ts").alias("last_ts"), F.sum("amount").alias("amount"),
        F.sum(F.length("payload")).alias("payload_bytes"))


def projected_aggregate(df):
    from pyspark.sql import functions as F
    return df.groupBy("city").agg(F.count("*").alias("n"), F.sum("score").alias("score"))


def same_rows(a: list, b: list) -> bool:
    """Equal rows by city; doubles (summed in whatever order the tasks
    ran) to 1e-9 relative, everything else exactly."""
    def key(rows):
        return {r["city"]: r.asDict() for r in rows}
    ka, kb = key(a), key(b)
    if ka.keys() != kb.keys():
        return False
    for city, ra in ka.items():
        for col, va in ra.items():
            vb = kb[city][col]
            ok = math.isclose(va, vb, rel_tol=1e-9) if isinstance(va, float) else va == vb
            if not ok:
                return False
    return True


class CpuMeter:
    """CPU seconds used so far by Spark's JVM and by its Python workers (the
    JVM's process tree, exited workers included through their parents), read
    from /proc: unlike wall times, they barely move with the machine's load."""

    def __init__(self, spark):
        self.jvm = spark.sparkContext._gateway.proc.pid
        self.tick = os.sysconf("SC_CLK_TCK")

    def _tree(self, pid: int) -> list[int]:
        pids = [pid]
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    pids += [q for c in f.read().split() for q in self._tree(int(c))]
        except OSError:
            pass
        return pids

    def read(self) -> dict[str, float]:
        out = {"jvm": 0.0, "python": 0.0}
        for pid in self._tree(self.jvm):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    exe = f.read().split(b"\0")[0]
            except OSError:
                continue
            # utime, stime, cutime, cstime: its own and its reaped children's
            used = sum(int(x) for x in fields[11:15]) / self.tick
            out["jvm" if exe.endswith(b"java") else "python"] += used
        return out


class Runs:
    """Runs the sides of each operation interleaved, in rotating order (a
    neighbour's burst slows every side alike); keeps wall and CPU times."""

    def __init__(self, repeats: int, meter: CpuMeter | None):
        self.repeats = repeats
        self.meter = meter
        self.wall: dict[str, dict[str, list[float]]] = {}
        self.cpu: dict[str, dict[str, list[dict[str, float]]]] = {}

    def run(self, op: str, sides: dict) -> dict:
        names = list(sides)
        results = {}
        for i in range(self.repeats):
            for name in names[i % len(names):] + names[:i % len(names)]:
                before = self.meter.read() if self.meter else {}
                t0 = time.perf_counter()
                results[name] = sides[name]()
                self.wall.setdefault(op, {}).setdefault(name, []).append(time.perf_counter() - t0)
                if self.meter:
                    after = self.meter.read()
                    self.cpu.setdefault(op, {}).setdefault(name, []).append(
                        {k: after[k] - before[k] for k in after})
        return results

    def median(self, op: str, side: str) -> float:
        return statistics.median(self.wall[op][side])

    def cpu_median(self, op: str, side: str, kind: str) -> float:
        return statistics.median(c[kind] for c in self.cpu[op][side])


# ---------------------------------------------------------------- the floors
# What any Python data source pays, before its own work: Spark turning the
# cached rows into Arrow batches for a Python worker (a write), or taking
# Arrow batches, already in Spark's types, from Python workers (a scan).

class NullSink(DataSource):
    """``null-sink``: a Python source whose writer only counts the rows it
    is sent; Spark's whole write path for a Python source, with no work."""

    @classmethod
    def name(cls):
        return "null-sink"

    def writer(self, schema, overwrite):
        return NullWriter()


@dataclasses.dataclass
class Counted(WriterCommitMessage):
    rows: int


class NullWriter(DataSourceArrowWriter):
    def write(self, iterator):
        return Counted(sum(b.num_rows for b in iterator))

    def commit(self, messages):
        pass


def _consume(batches):
    yield pa.RecordBatch.from_pydict({"rows": [sum(b.num_rows for b in batches)]})


def write_floor(df):
    """Spark's rows to Arrow batches in Python workers alone (no source)."""
    return df.mapInArrow(_consume, "rows long").collect()


class ArrowFilesSource(DataSource):
    """``arrow-files``: yields the batches of ``<path>.<i>`` (Arrow IPC files
    in Spark's types), one partition per file; no decoding, no conversion."""

    @classmethod
    def name(cls):
        return "arrow-files"

    def reader(self, schema):
        return ArrowFilesReader(self.options["path"], int(self.options["files"]))


class ArrowFilesReader(DataSourceReader):
    def __init__(self, path: str, files: int):
        self.path, self.files = path, files

    def partitions(self):
        return [InputPartition(i) for i in range(self.files)]

    def read(self, partition):
        with pa.memory_map(f"{self.path}.{partition.value}") as source:
            yield from pa.ipc.open_file(source).read_all().to_batches()


def write_arrow_files(table_path: str, out: str, files: int) -> StructType:
    """The table's rows as read through paimon-row (Spark's Arrow types and
    the batches pypaimon yields), split into ``files`` IPC files."""
    from rowformat.paimon import tables as tb
    from rowformat.arrow_cast import cast_batch
    from rowformat.spark.spark_types import spark_arrow_schema, to_spark_schema
    table = tb.open_table(table_path)
    schema = to_spark_schema(tb.row_type(table))
    target = spark_arrow_schema(schema)
    splits = tb.plan_splits(table)
    for i in range(files):
        with pa.OSFile(f"{out}.{i}", "wb") as f, pa.ipc.new_file(f, target) as w:
            for batch in tb.read_batches(table, splits[i::files], schema.names):
                w.write_batch(cast_batch(batch, target, truncate=True))
    return schema


def dir_stats(path: str, suffix: str) -> tuple[int, int]:
    """(data files, bytes) under ``path``: files ending in ``suffix``."""
    n = size = 0
    for root, _, names in os.walk(path):
        for name in names:
            if name.endswith(suffix):
                n += 1
                size += os.path.getsize(os.path.join(root, name))
    return n, size


def latest_data_files(table: str) -> tuple[int, int]:
    """(files, bytes) of the table's latest snapshot (older ones keep theirs)."""
    from rowformat.paimon import tables as tb
    files = [f for s in tb.plan(tb.open_table(table)) for f in s.files]
    return len(files), sum(int(f.file_size) for f in files)


# ---------------------------------------------------------------- Fory columns

_PYFORY: dict = {}


def _pyfory():
    """pyfory's encoder of the FORY_COLUMNS schema (per worker process)."""
    if not _PYFORY:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pyfory.format as pf
        schema = pf.from_arrow_schema(FORY_ARROW)
        _PYFORY.update(pf=pf, schema=schema, encoder=pf.create_row_encoder(schema))
    return _PYFORY


def pyfory_encode(frame):
    """pandas_udf body: a struct column (a pandas DataFrame) -> Fory rows,
    one pyfory call per row."""
    import pandas as pd
    enc = _pyfory()["encoder"]
    rows = pa.Table.from_pandas(frame, preserve_index=False).to_pylist()
    return pd.Series([enc.to_row(r).to_bytes() for r in rows])


def pyfory_decode(data):
    """pandas_udf body: Fory rows -> a struct column, one pyfory call per row."""
    import pandas as pd
    f = _pyfory()
    names = FORY_COLUMNS
    records = [f["encoder"].from_row(f["pf"].RowData(f["schema"], b)) for b in data]
    return pd.DataFrame({n: [getattr(r, n) for r in records] for n in names})


def _same(structs):
    """An Arrow UDF that returns the struct it is given."""
    return structs


class Constant:
    """An Arrow UDF that computes nothing: it returns values of the right
    type made before the run (``values``, one Arrow batch's worth, reused),
    as many as it is given rows; Spark's cost of a UDF's input and result
    with no work in between (from_fory's and to_fory's floors)."""

    def __init__(self, values: pa.Array):
        self.values = values

    def __call__(self, data):
        n, have = len(data), len(self.values)
        if n <= have:
            return self.values.slice(0, n)
        return pa.concat_arrays([self.values] * (n // have + 1)).slice(0, n)


def fory_ops(spark, df) -> tuple[dict, object]:
    """to_fory / from_fory against pyfory in pandas UDFs; the rows' bytes
    (cached) for the decode side, which the caller unpersists."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql.functions import arrow_udf, pandas_udf
    from rowformat.spark import from_fory, to_fory
    cols = F.struct(*FORY_COLUMNS)
    encode = pandas_udf(pyfory_encode, "binary")
    decode = pandas_udf(pyfory_decode, FORY_DDL)
    same = arrow_udf(_same, FORY_DDL)     # Spark's cost of such a struct, in and out
    data = df.select(to_fory(cols).alias("b"), cols.alias("s")).persist(StorageLevel.MEMORY_ONLY)
    data.count()
    batch_rows = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000"))
    sample = data.limit(batch_rows).toArrow()
    # the floors: no decoding, no encoding
    constant_structs = arrow_udf(Constant(sample.column("s").combine_chunks()), FORY_DDL)
    constant_bytes = arrow_udf(Constant(sample.column("b").combine_chunks()), "binary")

    def total(col):
        return df.select(col.alias("b")).agg(F.sum(F.length("b"))).first()[0]

    def decoded(col):
        return data.select(col.alias("r")).agg(F.count("r.id"), F.sum("r.id"),
                                               F.sum(F.length("r.name"))).first()
    return {
        "to_fory": {FORMAT: lambda: total(to_fory(cols)), BASE: lambda: total(encode(cols)),
                    FLOOR: lambda: total(constant_bytes(cols))},
        "from_fory": {FORMAT: lambda: decoded(from_fory("b", FORY_DDL)),
                      BASE: lambda: decoded(decode("b")),
                      FLOOR: lambda: decoded(constant_structs("b")),
                      IDENTITY: lambda: decoded(same("s"))},
    }, data


# ---------------------------------------------------------------- lookups

class TouchedBlocks:
    """The frames of the blocks of a row-tracking table that ``row_ids``
    fall in, read into memory beforehand; a call decompresses them whole on
    2 threads, on the driver: the least a lookup of those rows decodes
    (prefix decoding stops at the last row a block is asked for)."""

    def __init__(self, path: str, row_ids: list[int]):
        import numpy as np
        import rowformat
        from rowformat.paimon import tables as tb
        paths, rows = tb.RowIdRouter.from_table(tb.open_table(path), path).route(
            pa.array(row_ids, pa.int64()))
        frames, sizes = [], []
        by_file = pa.table({"p": paths, "r": rows}).group_by("p").aggregate([("r", "list")])
        for file, wanted in zip(by_file["p"].to_pylist(), by_file["r_list"].to_pylist()):
            index = rowformat.read_metadata(file).block_index
            blocks = np.unique(np.searchsorted(index.row_starts, wanted, "right") - 1)
            offsets = index.offsets
            with open(file, "rb") as f:
                for b in blocks.tolist():
                    f.seek(int(offsets[b]))
                    frames.append(f.read(int(index.compressed_sizes[b])))
                    sizes.append(int(index.uncompressed_sizes[b]))
        self.frames, self.sizes = frames, sizes
        self.pool = ThreadPoolExecutor(2)

    def __call__(self):
        return list(self.pool.map(lambda p: decompress_list(*p),
                                  zip(split_in(self.frames, 2), split_in(self.sizes, 2))))

def lookup_ops(spark, workdir: str, sizes: list[tuple[int, int]]) -> dict:
    """For each (n, k): a row-tracking Paimon table and a Parquet copy of n
    rows, k ids picked evenly; lookup_row_ids against a broadcast join."""
    import rowformat.spark
    from pyspark.sql import functions as F
    ops = {}
    for n, k in sizes:
        op = f"lookup {k:,} of {n:,}"
        pq = os.path.join(workdir, f"lk{n}.parquet")
        data = spark.range(0, n, 1, 2).selectExpr(
            "id", "concat('user-', cast(id % 997 as string)) as user",
            "cast(id % 1000 as double) / 8 as score", "repeat('x', cast(id % 40 as int)) as note")
        data.write.mode("overwrite").parquet(pq)
        step = max(1, n // k)
        tables = {}
        for side, block_size in ((FORMAT, None), (SMALL_BLOCKS, "8kb")):
            path = os.path.join(workdir, f"lk{n}-{block_size or 'default'}")
            write = data.write.format(FORMAT).option("paimon.row-tracking.enabled", "true")
            if block_size:
                write = write.option("paimon.file.block-size", block_size)
            write.mode("overwrite").save(path)
            # the same rows by id: their _ROW_IDs are the table's own
            picked = spark.read.format(FORMAT).option("rowIds", "true").load(path) \
                .where(F.col("id") % step == 0).select("_ROW_ID", "id").limit(k).collect()
            ids = spark.createDataFrame([tuple(r) for r in picked], "_ROW_ID long, id long")
            assert ids.cache().count() == k
            touched = TouchedBlocks(path, [r[0] for r in picked])
            BLOCKS[(op, side)] = len(touched.frames)
            tables[side] = path, ids, touched
        path, ids, touched = tables[FORMAT]

        def ours(path=path, ids=ids, local_max_rows=None):
            out = rowformat.spark.lookup_row_ids(ids, path, ["id", "user", "score"],
                                                 prefix="hit_", local_max_rows=local_max_rows)
            return tuple(out.agg(F.count("hit_id"), F.sum("hit_id"), F.sum("hit_score")).first())

        def floor(ids=ids):
            return tuple(ids.agg(F.count("id"), F.sum("id"), F.sum("_ROW_ID")).first())

        def join(pq=pq, ids=ids):
            out = F.broadcast(ids.select("id")).join(spark.read.parquet(pq), "id")
            return tuple(out.agg(F.count("user"), F.sum("id"), F.sum("score")).first())
        TARGETS[op] = 0.2 if n // k >= 5000 else 0.5
        LABELS[op] = "Parquet join"
        small_path, small_ids, _ = tables[SMALL_BLOCKS]
        ops[op] = {FORMAT: ours, BASE: join, DIST: lambda ours=ours: ours(local_max_rows=0),
                   FLOOR: floor, DECODE: touched,
                   SMALL_BLOCKS: lambda ours=ours, p=small_path, i=small_ids: ours(p, i)}
    return ops


def run(spark, rows: int, repeats: int, workdir: str, arrow_batch_rows: int | None,
        warmup: bool = True, lookups: list[tuple[int, int]] = (), only: list[str] = ()) -> dict:
    from pyspark import StorageLevel
    table = generate(rows)
    df = spark.createDataFrame(table).repartition(2).persist(StorageLevel.MEMORY_ONLY)
    assert df.count() == rows            # materialized before any timing
    del table
    if arrow_batch_rows:                 # set after caching: the same rows in each partition
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(arrow_batch_rows))
    p = {k: os.path.join(workdir, k) for k in ("row", "parquet", "row_part", "parquet_part",
                                               "arrow")}
    spark.dataSource.register(ArrowFilesSource)
    spark.dataSource.register(NullSink)
    writes = {
        "write": {
            FORMAT: lambda: df.write.format(FORMAT).mode("overwrite").save(p["row"]),
            BASE: lambda: df.write.mode("overwrite").parquet(p["parquet"]),
            FLOOR: lambda: df.write.format("null-sink").mode("overwrite").save(),
            MAP_IN_ARROW: lambda: write_floor(df)},
        "partitioned write": {
            FORMAT: lambda: df.write.format(FORMAT).option("partitionKeys", "flag")
            .mode("overwrite").save(p["row_part"]),
            BASE: lambda: df.write.partitionBy("flag").mode("overwrite")
            .parquet(p["parquet_part"])},
    }
    scans = {
        "full scan + aggregate": {
            FORMAT: lambda: full_aggregate(spark.read.format(FORMAT).load(p["row"])).collect(),
            BASE: lambda: full_aggregate(spark.read.parquet(p["parquet"])).collect(),
            FLOOR: lambda: full_aggregate(spark.read.format("arrow-files").schema(arrow_schema)
                                          .option("files", 2).load(p["arrow"])).collect()},
        "projected scan + aggregate": {
            FORMAT: lambda: projected_aggregate(
                spark.read.format(FORMAT).schema(PROJECTION).load(p["row"])).collect(),
            BASE: lambda: projected_aggregate(spark.read.parquet(p["parquet"])).collect()},
    }
    Runs(1, None).run("setup", {op: sides[FORMAT] for op, sides in writes.items()})
    arrow_schema = write_arrow_files(p["row"], p["arrow"], 2)
    def wanted(op: str) -> bool:
        return not only or any(op.startswith(name) for name in only)
    fory, fory_data = fory_ops(spark, df) if wanted("to_fory") or wanted("from_fory") \
        else ({}, None)
    looks = lookup_ops(spark, workdir, list(lookups))
    writes, scans, fory = ({op: sides for op, sides in ops.items() if wanted(op)}
                           for ops in (writes, scans, fory))
    if warmup:                            # JIT, Python workers, the tables to scan
        warm = Runs(1, None)
        for ops in (writes, scans, fory, looks):
            for op, sides in ops.items():
                warm.run(op, sides)
    runs = Runs(repeats, CpuMeter(spark))
    for ops in (writes, scans, fory, looks):
        for op, sides in ops.items():
            got = runs.run(op, sides)
            if op in scans:
                for side in got:
                    assert same_rows(got[side], got[BASE]), f"{op}: {side} differs"
                assert sum(r["n"] for r in got[FORMAT]) == rows
            elif op not in writes:
                assert got[FORMAT] == got[BASE], f"{op}: {got}"
                for side in (DIST, SMALL_BLOCKS):
                    assert got.get(side, got[FORMAT]) == got[FORMAT], f"{op}: {got}"
    if fory_data is not None:
        fory_data.unpersist()
    df.unpersist()
    return {"runs": runs, "files": {
        FORMAT: latest_data_files(p["row"]),
        "Parquet": dir_stats(p["parquet"], ".parquet"),
        f"{FORMAT} partitioned": latest_data_files(p["row_part"]),
        "Parquet partitioned": dir_stats(p["parquet_part"], ".parquet")}, "rows": rows}


def versions() -> dict:
    from importlib.metadata import version
    out = {p: version(p) for p in ("pyspark", "pypaimon", "pyarrow", "rowformat")}
    out["python"] = platform.python_version()
    java = subprocess.run(["java", "-version"], capture_output=True, text=True)
    out["java"] = (java.stderr.splitlines() or ["?"])[0]
    return out


def commit() -> str:
    def git(*args):
        return subprocess.run(["git", "-C", str(HERE), *args], capture_output=True,
                              text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    # ":/" pathspecs count from the repository's top: git runs in benchmarks/
    return head + (" (uncommitted changes)" if git("status", "--porcelain", "--", ":/rowformat",
                                                   ":/src", ":/benchmarks") else "")


def report(res: dict, a, load_before, load_after, vers: dict) -> str:
    runs: Runs = res["runs"]
    batch = a.arrow_batch_rows or "Spark's default, 10,000"
    lines = [
        f"`.venv/bin/python benchmarks/spark_tables.py --rows {a.rows} --repeats {a.repeats}"
        f"{f' --arrow-batch-rows {a.arrow_batch_rows}' if a.arrow_batch_rows else ''}"
        f"{f' --lookups {a.lookups or chr(39) * 2}' if a.lookups != LOOKUPS else ''}"
        f"{f' --only {a.only!r}' if a.only else ''}` "
        f"at {commit()}, {datetime.date.today()}, {os.cpu_count()} cores, `{a.master}`; "
        f"`spark.sql.execution.arrow.maxRecordsPerBatch`: {batch}.",
        "",
        f"`benchmarks/dataset.py` rows (10 columns) as a cached DataFrame of 2 partitions "
        f"(write, scans, to_fory/from_fory); lookups on tables of their own; "
        f"medians of {a.repeats} interleaved runs. {FLOOR}: what Spark itself costs a Python "
        f"source that does nothing (see benchmarks/README.md).",
        "",
        f"| operation | rowformat | baseline | ratio | target | | {FLOOR} | ratio to floor | "
        f"target | |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    cores = int(a.master.split("[")[1].rstrip("]")) if "[" in a.master and \
        a.master.split("[")[1].rstrip("]").isdigit() else (os.cpu_count() or 1)
    for op, sides in runs.wall.items():
        ours, base = runs.median(op, FORMAT), runs.median(op, BASE)
        target = TARGETS.get(op)
        verdict = "" if target is None else ("met" if ours / base <= target else "**missed**")
        floor = ft = fv = fr = ""
        if FLOOR in sides:
            fl = runs.median(op, FLOOR)
            floor, fr = f"{fl:.2f} s", f"{ours / fl:.2f}x"
            if op in FLOOR_TARGETS:
                ft = f"<= {FLOOR_TARGETS[op]:.1f}x"
                fv = "met" if ours / fl <= FLOOR_TARGETS[op] else "**missed**"
        extra = ""
        if op in ("to_fory", "from_fory"):
            per_core = res["rows"] / ours / cores
            extra = f" ({per_core / 1e6:.2f}M rows/s a core{'' if per_core >= 1e6 else ', **below 1M**'})"
        if DIST in sides:
            from rowformat.spark.lookups import LOCAL_MAX_ROWS
            k = int(op.split()[1].replace(",", ""))
            where = "on the driver" if k <= LOCAL_MAX_ROWS else "mapInArrow"
            extra = f" ({where}; {DIST}: {runs.median(op, DIST):.2f} s)"
        lines.append(f"| {op} | {ours:.2f} s{extra} | {base:.2f} s ({LABELS.get(op, BASE)}) | "
                     f"{ours / base:.2f}x | {'' if target is None else f'<= {target:.1f}x'} | "
                     f"{verdict} | {floor} | {fr} | {ft} | {fv} |")
    lines += ["", f"The {FLOOR} column: of a write, a Python source (`null-sink`) whose "
              f"writer only counts the rows it is sent; of a scan, a Python source yielding "
              f"the rows as ready Arrow batches; of from_fory and to_fory, an `arrow_udf` over "
              f"the same input returning results made beforehand (Spark's cost of the UDF's "
              f"input and result, no decoding or encoding); of a lookup, the same aggregate "
              f"over the cached ids alone (Spark's cost of the query, no lookup). The CPU of a "
              f"lookup on the driver misses the driver's own Python process (only Spark's JVM "
              f"and its workers are measured)."]
    notes = []
    for op, sides in runs.wall.items():
        ours = runs.median(op, FORMAT)
        if MAP_IN_ARROW in sides:
            m = runs.median(op, MAP_IN_ARROW)
            notes.append(f"- {op}: a `{MAP_IN_ARROW}` (Spark's rows to Arrow batches in Python "
                         f"workers, without a source's writer): {m:.2f} s; ours is {ours / m:.2f}x "
                         f"that.")
        if op in ("to_fory", "from_fory") and FLOOR in sides:
            fl = runs.median(op, FLOOR)
            notes.append(f"- {op}: Spark's floor for such a UDF alone is "
                         f"{res['rows'] / fl / cores / 1e6:.2f}M rows/s a core.")
        if DECODE in sides:
            q, d = runs.median(op, FLOOR), runs.median(op, DECODE)
            need = TARGETS[op] * runs.median(op, BASE)
            notes.append(f"- {op}: the rows fall in {BLOCKS.get((op, FORMAT), 0):,} blocks "
                         f"({BLOCKS.get((op, SMALL_BLOCKS), 0):,} in the {SMALL_BLOCKS}, where "
                         f"the lookup takes {runs.median(op, SMALL_BLOCKS):.2f} s); decompressing "
                         f"them whole on 2 threads (on the driver, the blocks read beforehand) "
                         f"takes {d:.3f} s, and the query alone {q:.3f} s: {q + d:.3f} s together, "
                         f"against the {need:.3f} s the target allows.")
    if notes:
        lines += [""] + notes
    lines += ["", "CPU seconds (medians; Spark's JVM + its Python workers, from /proc), and "
              "every wall time:", "",
              "| operation | side | CPU JVM | CPU Python | CPU total | wall times (s) |",
              "|---|---|---:|---:|---:|---|"]
    for op, sides in runs.wall.items():
        for side, walls in sides.items():
            jvm, py = runs.cpu_median(op, side, "jvm"), runs.cpu_median(op, side, "python")
            lines.append(f"| {op} | {side} | {jvm:.2f} | {py:.2f} | {jvm + py:.2f} | "
                         f"{', '.join(f'{t:.2f}' for t in walls)} |")
    lines += ["", "Data files: " + "; ".join(
        f"{k} {n} files, {b / 1e6:.1f} MB" for k, (n, b) in res["files"].items() if n) + "."]
    lines += ["", f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; "
                  f"after: {', '.join(f'{x:.2f}' for x in load_after)}.", "",
              "Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()) + "."]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--arrow-batch-rows", type=int,
                    help="spark.sql.execution.arrow.maxRecordsPerBatch: the rows per Arrow batch "
                         "Spark hands a Python writer (default: Spark's, 10,000)")
    ap.add_argument("--no-warmup", action="store_true",
                    help="skip the untimed first round (for a smoke test, not for numbers)")
    ap.add_argument("--lookups", default=LOOKUPS,
                    help="n:k,...: look k rows up in a table of n (empty: none)")
    ap.add_argument("--only", default="",
                    help="time only the operations whose names start with one of these "
                         "(comma-separated, e.g. 'write,full scan'; --lookups '' drops the lookups)")
    ap.add_argument("--out", default=str(HERE / "results-spark.md"))
    a = ap.parse_args(argv)
    out = os.path.abspath(a.out)
    workdir = tempfile.mkdtemp(prefix="spark-bench-")
    # Spark's Python workers put the working directory on sys.path: run in an
    # empty one, so a source checkout there cannot shadow the installed package.
    os.chdir(workdir)
    vers = versions()
    load_before = os.getloadavg()
    spark = start_spark(a.master, a.driver_memory)
    try:
        lookups = [tuple(int(x) for x in pair.split(":")) for pair in a.lookups.split(",") if pair]
        res = run(spark, a.rows, a.repeats, os.path.join(workdir, "data"), a.arrow_batch_rows,
                  not a.no_warmup, lookups, [o.strip() for o in a.only.split(",") if o.strip()])
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    md = report(res, a, load_before, os.getloadavg(), vers)
    print(md)
    pathlib.Path(out).write_text("# rowformat in Spark: tables, Fory columns and lookups\n\n"
                                 + md + "\n")


if __name__ == "__main__":
    main()
