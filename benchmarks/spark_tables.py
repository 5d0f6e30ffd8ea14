"""One local Spark session, side by side: a Paimon table written and scanned
through the ``paimon-row`` source against Spark's built-in Parquet source,
on the same cached DataFrame.

    .venv/bin/python benchmarks/spark_tables.py [--rows 1000000] [--repeats 5]
        [--master 'local[2]'] [--arrow-batch-rows N] [--out benchmarks/results-spark.md]

The data is ``benchmarks/dataset.py``'s ``generate(rows)`` as a DataFrame of
two partitions, cached and counted before any timing, so both sides write the
same in-memory rows. Each repeat runs the sides of an operation back to back,
in rotating order (the machine is shared: neighbours then slow every side
alike); each cell is the median, with the CPU seconds of Spark's JVM and of
its Python workers beside it. One untimed round warms up the JVM and the
Python workers first. The "Python-source floor" sides are what Spark itself
costs a Python source that does no work (see benchmarks/README.md).

* write: ``df.write.format("paimon-row").mode("overwrite").save(table)`` vs
  ``df.write.mode("overwrite").parquet(dir)``; partitioned by ``flag``
  (2 values): ``option("partitionKeys", "flag")`` vs ``partitionBy("flag")``.
* full scan + aggregate: group by ``city`` (200 values), aggregates touching
  every one of the 10 columns, so Parquet's column pruning cannot skip any.
* projected scan + aggregate: ``count(*)``, ``sum(score)`` by ``city``; Parquet
  prunes to two columns, paimon-row gets the same projection through
  ``.schema("city string, score double")`` (Python sources get no pruning).

Targets (the issue's): write at most 1.0x Parquet's time, full scan at most 1.2x.
"""
from __future__ import annotations

import argparse
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

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# Spark's Python workers must run this interpreter (it has rowformat installed).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import pyarrow as pa  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402

from dataset import generate  # noqa: E402

FORMAT = "paimon-row"
FLOOR = "Python-source floor"
TARGETS = {"write": 1.0, "full scan + aggregate": 1.2}
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

def _consume(batches):
    yield pa.RecordBatch.from_pydict({"rows": [sum(b.num_rows for b in batches)]})


def write_floor(df):
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
    from rowformat.spark.table_source import _to_spark_batch
    from rowformat.spark.types import spark_arrow_schema, to_spark_schema
    table = tb.open_table(table_path)
    schema = to_spark_schema(tb.row_type(table))
    target = spark_arrow_schema(schema)
    splits = tb.plan_splits(table)
    for i in range(files):
        with pa.OSFile(f"{out}.{i}", "wb") as f, pa.ipc.new_file(f, target) as w:
            for batch in tb.read_batches(table, splits[i::files], schema.names):
                w.write_batch(_to_spark_batch(batch, target))
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


def run(spark, rows: int, repeats: int, workdir: str, arrow_batch_rows: int | None,
        warmup: bool = True) -> dict:
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
    writes = {
        "write": {
            FORMAT: lambda: df.write.format(FORMAT).mode("overwrite").save(p["row"]),
            "parquet": lambda: df.write.mode("overwrite").parquet(p["parquet"]),
            FLOOR: lambda: write_floor(df)},
        "partitioned write": {
            FORMAT: lambda: df.write.format(FORMAT).option("partitionKeys", "flag")
            .mode("overwrite").save(p["row_part"]),
            "parquet": lambda: df.write.partitionBy("flag").mode("overwrite")
            .parquet(p["parquet_part"])},
    }
    scans = {
        "full scan + aggregate": {
            FORMAT: lambda: full_aggregate(spark.read.format(FORMAT).load(p["row"])).collect(),
            "parquet": lambda: full_aggregate(spark.read.parquet(p["parquet"])).collect(),
            FLOOR: lambda: full_aggregate(spark.read.format("arrow-files").schema(arrow_schema)
                                          .option("files", 2).load(p["arrow"])).collect()},
        "projected scan + aggregate": {
            FORMAT: lambda: projected_aggregate(
                spark.read.format(FORMAT).schema(PROJECTION).load(p["row"])).collect(),
            "parquet": lambda: projected_aggregate(spark.read.parquet(p["parquet"])).collect()},
    }
    Runs(1, None).run("setup", {op: sides[FORMAT] for op, sides in writes.items()})
    arrow_schema = write_arrow_files(p["row"], p["arrow"], 2)
    if warmup:                            # JIT, Python workers, the tables to scan
        warm = Runs(1, None)
        for ops in (writes, scans):
            for op, sides in ops.items():
                warm.run(op, sides)
    runs = Runs(repeats, CpuMeter(spark))
    for ops in (writes, scans):
        for op, sides in ops.items():
            got = runs.run(op, sides)
            if op in scans:
                for side in got:
                    assert same_rows(got[side], got["parquet"]), f"{op}: {side} differs"
                assert sum(r["n"] for r in got[FORMAT]) == rows
    df.unpersist()
    return {"runs": runs, "files": {
        FORMAT: latest_data_files(p["row"]),
        "parquet": dir_stats(p["parquet"], ".parquet"),
        f"{FORMAT} partitioned": latest_data_files(p["row_part"]),
        "parquet partitioned": dir_stats(p["parquet_part"], ".parquet")}}


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
    return head + (" (uncommitted changes)" if git("status", "--porcelain", "--", "rowformat",
                                                   "src", "benchmarks") else "")


def report(res: dict, a, load_before, load_after, vers: dict) -> str:
    runs: Runs = res["runs"]
    batch = a.arrow_batch_rows or "Spark's default, 10,000"
    lines = [
        f"`.venv/bin/python benchmarks/spark_tables.py --rows {a.rows} --repeats {a.repeats}"
        f"{f' --arrow-batch-rows {a.arrow_batch_rows}' if a.arrow_batch_rows else ''}` "
        f"at {commit()}, {datetime.date.today()}, {os.cpu_count()} cores, `{a.master}`; "
        f"`spark.sql.execution.arrow.maxRecordsPerBatch`: {batch}.",
        "",
        f"`benchmarks/dataset.py` rows (10 columns) as a cached DataFrame of 2 partitions; "
        f"medians of {a.repeats} interleaved runs. {FLOOR}: what Spark itself costs a Python "
        f"source that does nothing (see benchmarks/README.md).",
        "",
        f"| operation | {FORMAT} (Paimon table) | Parquet | ratio | target | | {FLOOR} |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for op, sides in runs.wall.items():
        row, pq = runs.median(op, FORMAT), runs.median(op, "parquet")
        target = TARGETS.get(op)
        verdict = "" if target is None else ("met" if row / pq <= target else "**missed**")
        floor = f"{runs.median(op, FLOOR):.2f} s ({runs.median(op, FLOOR) / pq:.2f}x)" \
            if FLOOR in sides else ""
        lines.append(f"| {op} | {row:.2f} s | {pq:.2f} s | {row / pq:.2f}x | "
                     f"{'' if target is None else f'<= {target:.1f}x'} | {verdict} | {floor} |")
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
        f"{k} {n} files, {b / 1e6:.1f} MB" for k, (n, b) in res["files"].items()) + "."]
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
        res = run(spark, a.rows, a.repeats, os.path.join(workdir, "data"), a.arrow_batch_rows,
                  not a.no_warmup)
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    md = report(res, a, load_before, os.getloadavg(), vers)
    print(md)
    pathlib.Path(out).write_text("# Paimon tables through Spark: paimon-row against Parquet\n\n"
                                 + md + "\n")


if __name__ == "__main__":
    main()
