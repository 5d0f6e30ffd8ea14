"""Which Python processes Spark starts for a ``paimon-row`` query, and what
a fresh one costs before it does any work (issues 42 and 44: the fixed cost
of a Python source).

    .venv/bin/python benchmarks/spark_workers.py [--queries 5] [--fresh 5]
        [--master local[2]]

1. **Processes a query starts.** A 200,000-row table partitioned by
   ``day`` (10 partitions); a batch query (``WHERE day = 3``, count) run
   ``--queries`` times, then as many ``trigger(availableNow=True)`` stream
   reads of it into Spark's ``noop`` sink. A thread lists ``/proc`` every
   20 ms: the Python processes that appear during each query are counted
   by the module Spark runs them with (``pyspark.daemon <worker module>``:
   forked by PySpark's daemon for that module; others started by the JVM
   directly). A worker that starts and exits within 20 ms would be missed:
   with worker reuse (Spark's default) none exit.
2. **A fresh process's start-up.** In ``--fresh`` new interpreters, the
   imports and opens a stream-reader process makes before its first
   answer, timed one after another: PySpark's streaming runner module,
   ``rowformat.spark.datasource`` (what unpickling the source imports),
   ``rowformat.spark.stream_reader``, and ``open_table`` (the pypaimon
   import and the table's open). Medians.

Prints a Markdown report; the load average before and after.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from spark_tables import commit, start_spark, versions  # noqa: E402

# one fresh interpreter: each step's seconds, printed as "name=seconds" lines
FRESH = r"""
import sys, time
t = time.perf_counter()
def mark(name):
    global t
    now = time.perf_counter(); print(f"{name}={now - t:.4f}"); t = now
import pyspark.sql.streaming.python_streaming_source_runner; mark("PySpark streaming runner module")
import rowformat.spark.datasource; mark("rowformat.spark.datasource")
import rowformat.spark.stream_reader; mark("rowformat.spark.stream_reader")
from rowformat.paimon import tables as tb
tb.open_table(sys.argv[1]); mark("open_table (pypaimon import + open)")
"""


class ProcessWatch:
    """Python processes (pid -> command line) seen in /proc since start()."""

    def __init__(self):
        self.seen: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for name in os.listdir("/proc"):
                if not name.isdigit() or int(name) in self.seen:
                    continue
                try:
                    with open(f"/proc/{name}/cmdline", "rb") as f:
                        args = f.read().split(b"\0")
                except OSError:
                    continue
                line = " ".join(a.decode(errors="replace") for a in args if a)
                if "pyspark" in line and "python" in line:
                    self.seen[int(name)] = line
            self._stop.wait(0.02)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()


def kind(cmdline: str) -> str:
    parts = cmdline.split()
    if "-m" in parts:
        i = parts.index("-m")
        return " ".join(parts[i + 1:i + 3])
    return parts[-1]


def run_queries(spark, path: str, n: int, base: str, watch: ProcessWatch) -> list[tuple]:
    """[(query, wall s, {process kind: count started during it})]"""
    def batch(i):
        spark.read.format("paimon-row").load(path).where("day = 3").count()

    def stream(i):
        q = (spark.readStream.format("paimon-row").load(path).writeStream.format("noop")
             .option("checkpointLocation", os.path.join(base, f"ck{i}"))
             .trigger(availableNow=True).start())
        q.awaitTermination()

    rows = []
    for name, fn in (("batch `WHERE day = 3` count", batch),
                     ("stream `availableNow` into noop", stream)):
        for i in range(n):
            before = set(watch.seen)
            t0 = time.perf_counter()
            fn(i)
            wall = time.perf_counter() - t0
            time.sleep(0.2)         # a process started at the very end is seen
            started: dict[str, int] = {}
            for pid in set(watch.seen) - before:
                k = kind(watch.seen[pid])
                started[k] = started.get(k, 0) + 1
            rows.append((name, i + 1, wall, started))
    return rows


def fresh(path: str, n: int) -> dict[str, list[float]]:
    steps: dict[str, list[float]] = {}
    for _ in range(n):
        out = subprocess.run([sys.executable, "-c", FRESH, path], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            name, secs = line.rsplit("=", 1)
            steps.setdefault(name, []).append(float(secs))
    return steps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--fresh", type=int, default=5)
    ap.add_argument("--master", default="local[2]")
    a = ap.parse_args(argv)
    load_before = os.getloadavg()
    base = tempfile.mkdtemp(prefix="rowformat-workers-")
    path = os.path.join(base, "t")
    watch = ProcessWatch().start()
    spark = start_spark(a.master, "2g")
    try:
        import rowformat.spark
        rowformat.spark.register(spark)
        (spark.range(200_000).selectExpr("id", "cast(id as string) name",
                                         "id * 10 div 200000 day")
         .write.format("paimon-row").option("partitionKeys", "day").mode("append").save(path))
        spark.read.format("paimon-row").load(path).count()      # the first query's workers
        rows = run_queries(spark, path, a.queries, base, watch)
        conf = {k: spark.sparkContext.getConf().get(k, "(default)")
                for k in ("spark.python.use.daemon", "spark.python.worker.reuse",
                          "spark.python.daemon.module")}
    finally:
        spark.stop()
        watch.stop()
    steps = fresh(path, a.fresh)
    load_after = os.getloadavg()
    out = [f"`benchmarks/spark_workers.py --queries {a.queries} --fresh {a.fresh} "
           f"--master {a.master}` at {commit()}, {time.strftime('%Y-%m-%d')}, "
           f"{os.cpu_count()} cores; conf: "
           + ", ".join(f"{k}={v}" for k, v in conf.items()) + ".", "",
           "Python processes started during each query (after one warm-up query):", "",
           "| query | run | wall | Python processes started |", "|---|---:|---:|---|"]
    for name, i, wall, started in rows:
        cell = ", ".join(f"{n} `{k}`" for k, n in sorted(started.items())) or "none"
        out.append(f"| {name} | {i} | {wall:.2f} s | {cell} |")
    out += ["", f"A fresh stream-reader process's start-up (medians of {a.fresh} new "
            "interpreters, s):", "", "| step | median | runs |", "|---|---:|---|"]
    total = 0.0
    for name, vals in steps.items():
        total += statistics.median(vals)
        out.append(f"| {name} | {statistics.median(vals):.3f} | "
                   + ", ".join(f"{v:.3f}" for v in vals) + " |")
    out.append(f"| total (sum of medians) | {total:.3f} | |")
    out += ["", "Load average (1, 5, 15 min) before: "
            + ", ".join(f"{x:.2f}" for x in load_before) + "; after: "
            + ", ".join(f"{x:.2f}" for x in load_after) + ".", "",
            "Versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()) + "."]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
