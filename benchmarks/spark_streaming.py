"""Structured Streaming through ``paimon-row`` against Spark's Parquet file
sink and file source (issue 44's targets).

    .venv/bin/python benchmarks/spark_streaming.py [--rate 2000] [--warmup 15]
        [--duration 60] [--pipeline-repeats 1] [--snapshots 100]
        [--snapshot-rows 10000] [--repeats 5] [--only pipeline,backlog]
        [--out benchmarks/results-spark-streaming.md]

1. **Pipeline.** A ``rate`` source (``--rate`` rows/s, 2 partitions) into a
   table with ``trigger(processingTime='1 second')``, and a second query
   streaming out of that table, also with 1 s triggers, into a
   ``foreachBatch`` that takes each batch's ``timestamp`` column to the
   driver and notes the wall time when it has it (the row's arrival).
   Side by side: ``paimon-row`` sink and stream reader (``scan.mode``
   ``latest``), and Spark's Parquet file sink and file source (which reads
   the sink's ``_spark_metadata`` log). Each pipeline runs ``--warmup``
   seconds unmeasured, then ``--duration`` seconds measured, then until
   every row made in the measured window has arrived (or 60 s more); the
   pipelines run one after another (rotating order when repeated).
   Measured over the window: sink throughput (rows of the sink's batches
   that ended in the window / the window), the sink's capacity (those rows
   / the time its batches took: what it could take if it worked all the
   time, the cheap estimate of the highest sustainable rate), the sink's
   and reader's batch times, and end-to-end latency of every row whose
   event time (the rate source's ``timestamp``) is in the window: arrival
   minus event time, p50/p95/max, in seconds and in triggers (1 s). The
   rate source itself holds a row until the second it falls in is over and
   the next trigger comes: that part (about 0.5-1.5 s) is in both sides.
2. **Backlog.** ``--snapshots`` commits of ``--snapshot-rows`` rows each to
   a table (written in this process through rowformat's batch write path,
   two files a commit as a 2-task Spark write makes), then one
   ``trigger(availableNow=True)`` query reading all of them
   (``scan.mode`` ``from-snapshot``, ``scan.snapshot-id`` 1) into Spark's
   ``noop`` sink, against ``spark.read.format("paimon-row")`` of the same
   rows into ``noop``: medians of ``--repeats`` interleaved rounds, each
   stream run on a new checkpoint. Target: within 1.3x.

CPU seconds of Spark's JVM and its Python workers (``CpuMeter``, as in
spark_tables.py) and of this driver process are reported beside the walls;
the report has the commit, the load average and the versions.
"""
from __future__ import annotations

import argparse
import datetime
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute  # noqa: E402,F401

from pyspark.sql.datasource import (  # noqa: E402
    DataSource, DataSourceStreamReader, InputPartition)
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow  # noqa: E402

from spark_tables import CpuMeter, commit, start_spark, versions  # noqa: E402

FORMAT = "paimon-row"
PARQUET = "Parquet"
TRIGGER_S = 1.0
SIDES = (FORMAT, PARQUET)


def _when(progress: dict) -> float:
    """A progress entry's trigger start, as epoch seconds."""
    return datetime.datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")) \
        .timestamp()


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


class Arrivals:
    """The reading query's foreachBatch: each batch's event times (µs) with
    the wall time they reached the driver."""

    def __init__(self):
        self.lock = threading.Lock()
        self.event_us: list[np.ndarray] = []
        self.ids: list[np.ndarray] = []
        self.arrival: list[float] = []
        self.max_event_us = 0

    def __call__(self, df, batch_id):
        from pyspark.sql import functions as F
        t = df.select("id", F.unix_micros("ts").alias("us")).toArrow()
        now = time.time()
        us = t.column("us").to_numpy(zero_copy_only=False)
        with self.lock:
            self.event_us.append(us.astype(np.int64))
            self.ids.append(t.column("id").to_numpy(zero_copy_only=False).astype(np.int64))
            self.arrival.append(now)
            if len(us):
                self.max_event_us = max(self.max_event_us, int(us.max()))

    def latencies(self, t0: float, t1: float, entered) -> tuple[np.ndarray, np.ndarray]:
        """For every row made in [t0, t1): arrival minus event time, and
        arrival minus the start of the sink batch that took it in
        (``entered(ids)``: those starts, NaN where unknown)."""
        with self.lock:
            out, since = [], []
            for us, ids, at in zip(self.event_us, self.ids, self.arrival):
                ev = us / 1e6
                keep = (ev >= t0) & (ev < t1)
                out.append(at - ev[keep])
                since.append(at - entered(ids[keep]))
        if not out:
            return np.array([]), np.array([])
        return np.concatenate(out), np.concatenate(since)


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def batch_starts(progress: list[dict], rate: int):
    """A function from rate-source values (ids) to the start time of the
    sink micro-batch that took each in (NaN if none did): the rate source's
    batch with offsets (start, end] holds the values [start, end) x rate."""
    spans = sorted((int(p["sources"][0]["startOffset"] or 0) * rate,
                    int(p["sources"][0]["endOffset"]) * rate, _when(p))
                   for p in progress if p["numInputRows"])
    lo = np.array([x[0] for x in spans], dtype=np.int64)
    hi = np.array([x[1] for x in spans], dtype=np.int64)
    began = np.array([x[2] for x in spans], dtype=float)

    def entered(ids: np.ndarray) -> np.ndarray:
        if not len(lo):
            return np.full(len(ids), np.nan)
        i = np.clip(np.searchsorted(lo, ids, side="right") - 1, 0, None)
        ok = (ids >= lo[i]) & (ids < hi[i])
        return np.where(ok, began[i], np.nan)
    return entered


def pipeline(spark, side: str, rate: int, base: str, warmup: float, duration: float,
             meter: CpuMeter, reader_trigger: float = TRIGGER_S) -> dict:
    """One run of the rate -> sink -> stream reader -> foreachBatch pipeline."""
    os.makedirs(base)
    table, ck_w, ck_r = (os.path.join(base, x) for x in ("table", "ck-write", "ck-read"))
    src = spark.readStream.format("rate").option("rowsPerSecond", rate) \
        .option("numPartitions", 2).load().selectExpr("value AS id", "timestamp AS ts")
    w = src.writeStream.option("checkpointLocation", ck_w) \
        .trigger(processingTime=f"{TRIGGER_S:g} second")
    if side == FORMAT:
        writer = w.format(FORMAT).start(table)
    else:
        writer = w.format("parquet").start(table)
    arrivals = Arrivals()
    reader = None
    try:
        # the reader needs the table (its schema) or the sink's log to exist
        if side == FORMAT:
            from rowformat.paimon import tables as tb
            _wait(lambda: tb.is_table(table) and
                  tb.latest_snapshot_id(tb.open_table(table)) is not None, 120,
                  "the sink's first snapshot")
            r = spark.readStream.format(FORMAT).option("scan.mode", "latest").load(table)
        else:
            _wait(lambda: os.path.exists(os.path.join(table, "_spark_metadata", "0")), 120,
                  "the sink's first batch")
            r = spark.readStream.schema("id bigint, ts timestamp").parquet(table)
        rw = r.writeStream.foreachBatch(arrivals).option("checkpointLocation", ck_r)
        if reader_trigger:
            rw = rw.trigger(processingTime=f"{reader_trigger:g} seconds")
        reader = rw.start()       # (0: Spark's default, each batch when the last ends)
        time.sleep(warmup)
        t0 = time.time()
        cpu0, py0 = meter.read(), time.process_time()
        time.sleep(duration)
        t1 = time.time()
        cpu1, py1 = meter.read(), time.process_time()
        # every row made in the window has to arrive (the sink may lag)
        try:
            _wait(lambda: arrivals.max_event_us >= t1 * 1e6, 60, "the window's last rows")
            drained = True
        except RuntimeError:
            drained = False
        w_progress, r_progress = list(writer.recentProgress), list(reader.recentProgress)
    finally:
        for q in (reader, writer):
            if q is not None:
                q.stop()
    entered = batch_starts(w_progress, rate)
    lat, since = arrivals.latencies(t0, t1, entered)
    since = since[~np.isnan(since)]

    def in_window(progress):        # batches with rows that ended in [t0, t1]
        out = []
        for p in progress:
            end = _when(p) + p["durationMs"].get("triggerExecution", 0) / 1000
            if p["numInputRows"] and t0 <= end <= t1:
                out.append(p)
        return out
    wb, rb = in_window(w_progress), in_window(r_progress)
    rows = sum(p["numInputRows"] for p in wb)
    busy = sum(p["durationMs"]["triggerExecution"] for p in wb) / 1000
    return {
        "side": side, "rate": rate, "window": t1 - t0,
        "sink_rows": rows, "sink_batches": len(wb),
        "throughput": rows / (t1 - t0),
        "capacity": rows / busy if busy else float("nan"),
        "sink_batch_ms": statistics.median(p["durationMs"]["triggerExecution"] for p in wb)
        if wb else float("nan"),
        "sink_add_ms": statistics.median(p["durationMs"].get("addBatch", 0) for p in wb)
        if wb else float("nan"),
        "read_batch_ms": statistics.median(p["durationMs"]["triggerExecution"] for p in rb)
        if rb else float("nan"),
        "read_batches": len(rb),
        "rows_seen": int(len(lat)), "rows_made": int(round(rate * (t1 - t0))),
        "drained": drained,
        "p50": _pct(lat, 50), "p95": _pct(lat, 95),
        "in_p50": _pct(since, 50), "in_p95": _pct(since, 95), "in_rows": int(len(since)), "max": float(lat.max()) if len(lat) else
        float("nan"),
        "cpu_jvm": cpu1["jvm"] - cpu0["jvm"], "cpu_workers": cpu1["python"] - cpu0["python"],
        "cpu_driver_py": py1 - py0,
    }


# ---------------------------------------------------------------- the backlog

def build_backlog(path: str, snapshots: int, rows: int) -> int:
    """``snapshots`` commits of ``rows`` rows (two files each) to a new
    table at ``path``, through rowformat's batch write path; total rows."""
    from rowformat.paimon import tables as tb
    from rowformat.datatypes import schema
    table = tb.create_table(path, schema("id BIGINT, v STRING, score DOUBLE"))
    for s in range(snapshots):
        pickled = []
        for half in range(2):          # one task's file each, as local[2] writes
            lo = s * rows + half * (rows // 2)
            hi = s * rows + (rows if half else rows // 2)
            ids = pa.array(np.arange(lo, hi, dtype=np.int64))
            batch = pa.record_batch([ids, pa.compute.binary_join_element_wise(
                "v", pa.compute.cast(ids, pa.string()), ""),
                pa.array((np.arange(lo, hi) % 1000) / 7.0)], names=["id", "v", "score"])
            pickled.append(tb.write_batches(table, [batch], False))
        tb.commit(table, pickled, False)
        table = tb.open_table(path)
    return snapshots * rows


class EmptyStream(DataSource):
    """The floor: a Python stream source that does no work (one micro-batch
    of one empty partition under availableNow): what Spark costs any Python
    stream source's availableNow query (its reader process, offsets,
    checkpoint, one job)."""

    @classmethod
    def name(cls):
        return "empty-stream"

    def schema(self):
        return "id bigint, v string, score double"

    def streamReader(self, schema):
        return EmptyStreamReader()


class EmptyStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def prepareForTriggerAvailableNow(self):
        pass

    def initialOffset(self):
        return {"i": 0}

    def latestOffset(self, start, limit):
        return {"i": 1}

    def partitions(self, start, end):
        return [InputPartition(0)] if start != end else []

    def read(self, partition):
        return iter(())


STREAM, BATCH, FLOOR = "availableNow stream", "batch read", "Python stream floor"
PQ_STREAM, PQ_BATCH = "Parquet availableNow stream", "Parquet batch read"


def backlog(spark, path: str, total: int, repeats: int, base: str, meter: CpuMeter) -> dict:
    """The availableNow query against the batch read (and the floor, and
    Spark's Parquet source both ways over the same rows in as many files)."""
    n = [0]
    parquet = os.path.join(base, "backlog-parquet")
    files = sum(1 for f in os.listdir(os.path.join(path, "bucket-0")) if f.startswith("data-"))
    spark.read.format(FORMAT).load(path).repartition(files).write.parquet(parquet)

    def stream(load, expect=total):
        n[0] += 1
        q = load().writeStream.format("noop") \
            .option("checkpointLocation", os.path.join(base, f"ck-backlog-{n[0]}")) \
            .trigger(availableNow=True).start()
        q.awaitTermination()
        progress = [p for p in q.recentProgress if p["numInputRows"] or expect == 0]
        got = sum(p["numInputRows"] for p in progress)
        assert got == expect, (got, expect)
        return progress

    def ours():
        return spark.readStream.format(FORMAT).option("scan.mode", "from-snapshot") \
            .option("scan.snapshot-id", "1").load(path)

    sides = {
        STREAM: lambda: stream(ours),
        BATCH: lambda: spark.read.format(FORMAT).load(path).write.format("noop")
        .mode("overwrite").save(),
        FLOOR: lambda: stream(lambda: spark.readStream.format("empty-stream").load(), 0),
        PQ_STREAM: lambda: stream(lambda: spark.readStream.schema(
            "id bigint, v string, score double").parquet(parquet)),
        PQ_BATCH: lambda: spark.read.parquet(parquet).write.format("noop").mode("overwrite")
        .save(),
    }
    assert spark.read.format(FORMAT).load(path).count() == total
    assert spark.read.parquet(parquet).count() == total
    for f in sides.values():             # first uses outside the timings
        f()
    wall = {k: [] for k in sides}
    cpu = {k: [] for k in sides}
    phases = []
    names = list(sides)
    for i in range(repeats):
        for name in names[i % len(names):] + names[:i % len(names)]:
            c0, p0 = meter.read(), time.process_time()
            t0 = time.perf_counter()
            progress = sides[name]()
            wall[name].append(time.perf_counter() - t0)
            c1, p1 = meter.read(), time.process_time()
            cpu[name].append(c1["jvm"] - c0["jvm"] + c1["python"] - c0["python"] + p1 - p0)
            if name == STREAM:
                phases.append({"batches": len(progress), **{
                    k: sum(p["durationMs"].get(k, 0) for p in progress) / 1000
                    for k in ("latestOffset", "queryPlanning", "addBatch", "walCommit",
                              "commitOffsets", "triggerExecution")}})
    return {"wall": wall, "cpu": cpu, "phases": phases, "files": files}


# ---------------------------------------------------------------- report

def report(a, pipes: list[dict], back: dict | None, load_before, load_after, vers) -> str:
    lines = ["# Structured Streaming: paimon-row against Spark's Parquet sink and source "
             "(issue 44)", "",
             f"`.venv/bin/python benchmarks/spark_streaming.py --rate {a.rate} --warmup "
             f"{a.warmup:g} --duration {a.duration:g} --pipeline-repeats {a.pipeline_repeats} "
             f"--reader-trigger {a.reader_trigger:g} --snapshots {a.snapshots} --snapshot-rows "
             f"{a.snapshot_rows} --repeats {a.repeats} --only {a.only}` at {commit()}, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
             f"`{a.master}`.", ""]
    if pipes:
        med = {s: {k: statistics.median(p[k] for p in pipes if p["side"] == s)
                   for k in pipes[0] if k not in ("side", "drained")} for s in SIDES
               if any(p["side"] == s for p in pipes)}
        n = len([p for p in pipes if p["side"] == FORMAT])
        rt = f"{a.reader_trigger:g} s triggers" if a.reader_trigger else \
            "no trigger: each batch when the last ends"
        lines += [
            f"## Pipeline: `rate` ({a.rate} rows/s, 2 partitions) -> sink (1 s triggers) -> "
            f"stream read ({rt}) -> foreachBatch", "",
            f"{a.warmup:g} s warm-up, then a {a.duration:g} s window; "
            f"{'medians of ' + str(n) + ' runs a side' if n > 1 else 'one run a side'}, "
            "one after another. Throughput: rows of the sink's batches that ended in the window "
            "/ window; capacity: those rows / the time the batches took. Latency: each row made "
            "in the window, from its `timestamp` to its arrival in the reading query's "
            "foreachBatch (1 trigger = 1 s); \"from the sink batch's start\": from the start "
            "of the sink's micro-batch that took the row in (its rate-source offsets name "
            "its rows), which leaves out the rate source's own hold (a row waits for its "
            "second to end and for the next trigger). CPU: Spark's JVM and this driver "
            "process (foreachBatch runs here) over the window.", "",
            "| | sink throughput | sink capacity | sink batch (median) | reader batch (median) "
            "| latency p50 | latency p95 | max | from the sink batch's start p50 / p95 "
            "| rows arrived / made | CPU s (JVM / driver Python) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for s, m in med.items():
            lines.append(
                f"| {s} | {m['throughput']:,.0f} rows/s | {m['capacity']:,.0f} rows/s | "
                f"{m['sink_batch_ms']:.0f} ms | {m['read_batch_ms']:.0f} ms | "
                f"{m['p50']:.2f} s ({m['p50'] / TRIGGER_S:.2f}) | {m['p95']:.2f} s "
                f"({m['p95'] / TRIGGER_S:.2f}) | {m['max']:.2f} s | {m['in_p50']:.2f} / "
                f"{m['in_p95']:.2f} s | {m['rows_seen']:,.0f} / {m['rows_made']:,.0f} | "
                f"{m['cpu_jvm']:.1f} / {m['cpu_driver_py']:.1f} |")
        if FORMAT in med and PARQUET in med:
            p, q = med[FORMAT], med[PARQUET]
            lines += ["", f"Targets: sink throughput >= Parquet's: {p['throughput']:,.0f} against "
                      f"{q['throughput']:,.0f} rows/s "
                      f"({'met' if p['sink_rows'] >= q['sink_rows'] - a.rate * TRIGGER_S else 'missed'}, "
                      f"counted in whole batches: one batch is {a.rate * TRIGGER_S / a.duration:,.0f} "
                      f"rows/s of the window; "
                      f"capacity {p['capacity']:,.0f} against {q['capacity']:,.0f}); "
                      f"p95 latency <= 2 triggers: {p['p95']:.2f} s "
                      f"({'met' if p['p95'] <= 2 * TRIGGER_S else 'missed'}; Parquet "
                      f"{q['p95']:.2f} s)."]
        lines += ["", "Every run:", ""]
        for p in pipes:
            lines.append(
                f"- {p['side']}: {p['throughput']:,.0f} rows/s in {p['sink_batches']} sink "
                f"batches, capacity {p['capacity']:,.0f}, sink batch {p['sink_batch_ms']:.0f} ms "
                f"(addBatch {p['sink_add_ms']:.0f}), reader batch {p['read_batch_ms']:.0f} ms in "
                f"{p['read_batches']}, latency p50 {p['p50']:.2f} / p95 {p['p95']:.2f} / max "
                f"{p['max']:.2f} s (from the sink batch's start p50 {p['in_p50']:.2f} / p95 "
                f"{p['in_p95']:.2f} s, {p['in_rows']:,} rows matched to their batch), "
                f"{p['rows_seen']:,} of {p['rows_made']:,} rows"
                f"{'' if p['drained'] else ' (NOT drained 60 s after the window)'}")
        lines.append("")
    if back:
        w, c = back["wall"], back["cpu"]
        med = {k: statistics.median(v) for k, v in w.items()}
        cmed = {k: statistics.median(v) for k, v in c.items()}
        s_, b = med[STREAM], med[BATCH]
        total = a.snapshots * a.snapshot_rows
        lines += [
            f"## availableNow over a backlog of {a.snapshots} snapshots", "",
            f"{a.snapshots} commits of {a.snapshot_rows:,} rows ({back['files']} data files, "
            f"{total:,} rows of `id bigint, v string, score double`); medians of {a.repeats} "
            "interleaved rounds, everything into Spark's `noop` sink, each stream run on a new "
            "checkpoint. The floor: an availableNow query of a Python stream source that does "
            "no work (one empty partition). Parquet: the same rows in as many files, Spark's "
            "file source both ways.", "",
            "| | wall | CPU s (JVM + workers + driver) | ratio to its batch read |",
            "|---|---:|---:|---:|",
            f"| paimon-row `readStream` (`from-snapshot` 1) `trigger(availableNow=True)` | "
            f"{s_:.2f} s | {cmed[STREAM]:.2f} | {s_ / b:.2f}x |",
            f"| paimon-row `spark.read` | {b:.2f} s | {cmed[BATCH]:.2f} | 1.00x |",
            f"| {FLOOR} | {med[FLOOR]:.2f} s | {cmed[FLOOR]:.2f} | |",
            f"| paimon-row batch read + {FLOOR} | {b + med[FLOOR]:.2f} s | | "
            f"{(b + med[FLOOR]) / b:.2f}x |",
            f"| Parquet `readStream` `trigger(availableNow=True)` | {med[PQ_STREAM]:.2f} s | "
            f"{cmed[PQ_STREAM]:.2f} | {med[PQ_STREAM] / med[PQ_BATCH]:.2f}x |",
            f"| Parquet `spark.read` | {med[PQ_BATCH]:.2f} s | {cmed[PQ_BATCH]:.2f} | 1.00x |",
            "",
            f"Target: within 1.3x of the batch read: {s_ / b:.2f}x "
            f"({'met' if s_ <= 1.3 * b else 'missed'}); beyond batch read + floor: "
            f"{s_ - b - med[FLOOR]:+.2f} s.", "",
            "Every wall time (s):", ""]
        for k, v in w.items():
            lines.append(f"- {k}: {', '.join(f'{x:.2f}' for x in v)}")
        ph = back["phases"]
        lines += ["", "The paimon-row stream runs' phases (Spark's progress durations, s, summed "
                  "over their micro-batches): " + "; ".join(
                      f"{p['batches']} batch(es), latestOffset {p['latestOffset']:.2f}, "
                      f"queryPlanning {p['queryPlanning']:.2f}, addBatch {p['addBatch']:.2f}, "
                      f"trigger {p['triggerExecution']:.2f}" for p in ph) + ".", ""]
    lines += [f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}"
              f"; after: {', '.join(f'{x:.2f}' for x in load_after)}.", "",
              "Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()) + ".", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--warmup", type=float, default=15)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--pipeline-repeats", type=int, default=1)
    ap.add_argument("--reader-trigger", type=float, default=TRIGGER_S,
                    help="the reading query's trigger in seconds (0: Spark's default)")
    ap.add_argument("--snapshots", type=int, default=100)
    ap.add_argument("--snapshot-rows", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", default="pipeline,backlog")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "results-spark-streaming.md"))
    a = ap.parse_args(argv)
    only = {x.strip() for x in a.only.split(",") if x.strip()}
    import rowformat.spark
    spark = start_spark(a.master, a.driver_memory)
    rowformat.spark.register(spark)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "1000")
    spark.dataSource.register(EmptyStream)
    meter = CpuMeter(spark)
    base = tempfile.mkdtemp(prefix="spark-streaming-")
    load_before = os.getloadavg()
    pipes, back = [], None
    try:
        if "pipeline" in only:
            for i in range(a.pipeline_repeats):
                for side in SIDES[i % 2:] + SIDES[:i % 2]:
                    r = pipeline(spark, side, a.rate, os.path.join(base, f"{side}-{i}"),
                                 a.warmup, a.duration, meter, a.reader_trigger)
                    print(r, flush=True)
                    pipes.append(r)
        if "backlog" in only:
            path = os.path.join(base, "backlog")
            total = build_backlog(path, a.snapshots, a.snapshot_rows)
            back = backlog(spark, path, total, a.repeats, base, meter)
            print(back, flush=True)
    finally:
        spark.stop()
        shutil.rmtree(base, ignore_errors=True)
    md = report(a, pipes, back, load_before, os.getloadavg(), versions())
    with open(a.out, "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
