"""One local Spark session, side by side: a Paimon table written and scanned
through the ``paimon-row`` source against Spark's built-in Parquet source,
on the same cached DataFrame.

    .venv/bin/python benchmarks/spark_tables.py [--rows 1000000] [--repeats 5]
        [--master 'local[2]'] [--out benchmarks/results-spark.md]

The data is ``benchmarks/dataset.py``'s ``generate(rows)`` as a DataFrame of
two partitions, cached and counted before any timing, so both sides write the
same in-memory rows. Each repeat runs the two sides of an operation back to
back, in alternating order (the machine is shared: neighbours then slow both
sides alike); each cell is the median. One untimed round warms up the JVM and
the Python workers first.

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

from dataset import generate  # noqa: E402

FORMAT = "paimon-row"
TARGETS = {"write": 1.0, "scan": 1.2}
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


class Pairs:
    """Times the two sides of each operation, interleaved run by run."""

    def __init__(self, repeats: int):
        self.repeats = repeats
        self.times: dict[str, dict[str, list[float]]] = {}

    def run(self, op: str, sides: dict):
        names = list(sides)
        cell = self.times.setdefault(op, {n: [] for n in names})
        results = {}
        for i in range(self.repeats):
            for name in (names if i % 2 == 0 else names[::-1]):
                t0 = time.perf_counter()
                results[name] = sides[name]()
                cell[name].append(time.perf_counter() - t0)
        return results

    def median(self, op: str, side: str) -> float:
        return statistics.median(self.times[op][side])


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
    from rowformat.spark import tables as tb
    files = [f for s in tb.plan(tb.open_table(table)) for f in s.files]
    return len(files), sum(int(f.file_size) for f in files)


def run(spark, rows: int, repeats: int, workdir: str) -> dict:
    from pyspark import StorageLevel
    table = generate(rows)
    df = spark.createDataFrame(table).repartition(2).persist(StorageLevel.MEMORY_ONLY)
    assert df.count() == rows            # materialized before any timing
    del table
    paths = {k: os.path.join(workdir, k) for k in ("row", "parquet", "row_part", "parquet_part")}
    writes = {
        "write": {FORMAT: lambda: df.write.format(FORMAT).mode("overwrite").save(paths["row"]),
                  "parquet": lambda: df.write.mode("overwrite").parquet(paths["parquet"])},
        "partitioned write": {
            FORMAT: lambda: df.write.format(FORMAT).option("partitionKeys", "flag")
            .mode("overwrite").save(paths["row_part"]),
            "parquet": lambda: df.write.partitionBy("flag").mode("overwrite")
            .parquet(paths["parquet_part"])},
    }
    scans = {
        "full scan + aggregate": {
            FORMAT: lambda: full_aggregate(spark.read.format(FORMAT).load(paths["row"])).collect(),
            "parquet": lambda: full_aggregate(spark.read.parquet(paths["parquet"])).collect()},
        "projected scan + aggregate": {
            FORMAT: lambda: projected_aggregate(
                spark.read.format(FORMAT).schema(PROJECTION).load(paths["row"])).collect(),
            "parquet": lambda: projected_aggregate(spark.read.parquet(paths["parquet"])).collect()},
    }
    warm = Pairs(1)                       # JIT, Python workers, the tables to scan
    for ops in (writes, scans):
        for op, sides in ops.items():
            warm.run(op, sides)
    pairs = Pairs(repeats)
    for ops in (writes, scans):
        for op, sides in ops.items():
            got = pairs.run(op, sides)
            if op in scans:
                assert same_rows(got[FORMAT], got["parquet"]), f"{op}: the two sides differ"
                assert sum(r["n"] for r in got[FORMAT]) == rows
    df.unpersist()
    return {"pairs": pairs, "files": {
        FORMAT: latest_data_files(paths["row"]),
        "parquet": dir_stats(paths["parquet"], ".parquet"),
        f"{FORMAT} partitioned": latest_data_files(paths["row_part"]),
        "parquet partitioned": dir_stats(paths["parquet_part"], ".parquet")}}


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
    pairs: Pairs = res["pairs"]

    def s(x):
        return f"{x:.2f} s"
    lines = [
        f"`.venv/bin/python benchmarks/spark_tables.py --rows {a.rows} --repeats {a.repeats} "
        f"--master '{a.master}'` at {commit()}, {datetime.date.today()}, "
        f"{os.cpu_count()} cores.",
        "",
        f"`benchmarks/dataset.py` rows (10 columns) as a cached DataFrame of 2 partitions; "
        f"medians of {a.repeats} interleaved runs.",
        "",
        f"| operation | {FORMAT} (Paimon table) | Parquet | ratio | target | |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for op in pairs.times:
        row, pq = pairs.median(op, FORMAT), pairs.median(op, "parquet")
        kind = "write" if op == "write" else "scan" if op == "full scan + aggregate" else None
        target = TARGETS.get(kind)
        verdict = "" if target is None else ("met" if row / pq <= target else "**missed**")
        lines.append(f"| {op} | {s(row)} | {s(pq)} | {row / pq:.2f}x | "
                     f"{'' if target is None else f'<= {target:.1f}x'} | {verdict} |")
    lines += ["", "Every run (seconds):", ""]
    for op, sides in pairs.times.items():
        for side, ts in sides.items():
            lines.append(f"- {op}, {side}: {', '.join(f'{t:.2f}' for t in ts)}")
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
        res = run(spark, a.rows, a.repeats, os.path.join(workdir, "data"))
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    md = report(res, a, load_before, os.getloadavg(), vers)
    print(md)
    pathlib.Path(out).write_text("# Paimon tables through Spark: paimon-row against Parquet\n\n"
                                 + md + "\n")


if __name__ == "__main__":
    main()
