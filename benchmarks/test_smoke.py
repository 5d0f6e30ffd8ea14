"""Smoke test of the benchmark suite's own parts at a tiny size (no timing claims):
the seeded generator, the rowformat adapter, the ZSTD floor and the memory check."""
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute  # noqa: F401

import dataset  # benchmarks/ is on sys.path (conftest.py)

BENCH = os.path.dirname(os.path.abspath(__file__))


def test_dataset_is_seeded_and_shaped():
    a, b = dataset.generate(3000, seed=5), dataset.generate(3000, seed=5)
    assert a.equals(b) and a.schema.equals(dataset.ARROW_SCHEMA)
    assert not a.equals(dataset.generate(3000, seed=6))
    names = pa.compute.utf8_length(a["name"]).to_numpy()
    assert names.min() >= 8 and names.max() <= 24
    assert pa.compute.count_distinct(a["city"]).as_py() <= 200
    tags = pa.compute.list_value_length(a["tags"]).to_numpy()
    assert tags.min() >= 0 and tags.max() <= 4
    pay = pa.compute.binary_length(a["payload"]).to_numpy()
    assert pay.min() >= 16 and pay.max() <= 64


def test_rowformat_adapter_and_floor(tmp_path):
    import numpy as np
    import floor
    import peers
    t = dataset.generate(5000)
    p = peers.RowFormat(threads=2)
    path = str(tmp_path / "x.row")
    p.write(t, path)
    assert p.scan(path).equals(t)
    lk = p.open(path)
    lk.drop_cache()
    assert lk.get(1234)[0] == 1234
    rows = np.array([3, 77, 4999])
    assert lk.take(rows).equals(t.take(pa.array(rows)))
    lk.close()
    f = floor.measure(path, repeat=1, block_ids=[0, 1])
    assert f["blocks"] >= 2 and f["one_block"] > 0 and f["decomp_2t"] > 0 and f["comp_2t"] > 0


def test_memcheck_runs():
    p = subprocess.run([sys.executable, os.path.join(BENCH, "memcheck.py"), "--rows", "20000",
                        "--json"], capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["rows"] == 20000 and res["limit_bytes"] > res["cache_bytes"] > 0


def test_compare_report_and_chart(tmp_path):
    out = tmp_path / "r.md"
    p = subprocess.run([sys.executable, os.path.join(BENCH, "compare.py"), "--rows", "3000", "--repeat", "1",
                        "--lookups", "50", "--take", "100", "--peers", "rowformat,parquet", "--no-memory", "--no-paimon",
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert "| lookup median | lookup p90 | lookup p99 |" in text
    assert "rowformat take([i]), block cached" in text
    assert "Where the looked-up rows fell in their blocks" in text
    data = json.loads((tmp_path / "r.json").read_text())
    rf = data["results"]["rowformat"]
    q = rf["in_block_quartiles"]
    assert 0 <= q[0] <= q[1] <= q[2] <= 1
    assert rf["get_p90_us"] <= rf["get_p99_us"] and rf["take1_cached_p90_us"] > 0
    png = (tmp_path / "r.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_spark_tables_report(tmp_path):
    """spark_tables.py end to end at a tiny size: every operation, both sides and the
    floors ran and the two sides' aggregates agreed (the script asserts it)."""
    import pytest
    pytest.importorskip("pyspark", reason="pyspark is not installed: it comes with the [spark] "
                        "extra, not [test] (bash run.sh test installs both)")
    out = tmp_path / "spark.md"
    p = subprocess.run([sys.executable, os.path.join(BENCH, "spark_tables.py"), "--rows", "2000",
                        "--repeats", "1", "--no-warmup", "--driver-memory", "1g",
                        "--lookups", "200000:200,40000:4000", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    text = out.read_text()
    for op in ("write", "partitioned write", "full scan + aggregate", "projected scan + aggregate"):
        assert f"\n| {op} | " in text
    assert text.count("| <= 1.1x |") == 2           # write and full scan: the floor targets
    assert "| write | Python-source floor |" in text
    assert "| full scan + aggregate | Python-source floor |" in text
    assert "| write | mapInArrow that only counts |" in text
    assert "| to_fory | Python-source floor |" in text
    assert text.count("| decompress the touched blocks |") == 2     # the two lookups
    assert "Load average" in text and "pyspark 4." in text


def test_paimon_tables_report(tmp_path):
    """paimon_tables.py end to end at a tiny size: stock against accelerate(), and, when
    pypaimon-rust is installed, its readers and writer (every reader's rows checked equal
    by the script itself)."""
    import pytest
    pytest.importorskip("pypaimon")
    out = tmp_path / "paimon.md"
    p = subprocess.run([sys.executable, os.path.join(BENCH, "paimon_tables.py"), "--rows", "5000",
                        "--stock-rows", "1000", "--pk-rows", "1000", "--repeats", "1",
                        "--lookups", "100", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    text = out.read_text()
    assert "| append, 5,000 rows | full scan |" in text
    assert "| primary-key merged scan >= 5x |" in text
    assert "Load average" in text and "pypaimon 2.1.0" in text
    try:
        import pypaimon_rust  # noqa: F401
    except ImportError:
        assert "pypaimon-rust not installed" in text
        return
    for op in ("full scan, 5,000 rows", "scan of 2 columns (id, name)",
               "100 random rows by `_ROW_ID` (all columns)", "write+commit, 5,000 rows"):
        assert text.count(f"\n| {op} | ") == 2          # wall and CPU tables
    assert text.count(">= 2x faster than pypaimon-rust") == 4


def test_write_stats_report(tmp_path):
    """write_stats.py end to end at a tiny size: every case reported against its baseline."""
    import pytest
    pytest.importorskip("pypaimon")
    out = tmp_path / "write-stats.md"
    p = subprocess.run([sys.executable, os.path.join(BENCH, "write_stats.py"), "--rows", "2000",
                        "--repeats", "1", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    text = out.read_text()
    lines = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    for base in (".row writer, no stats", "accelerated pypaimon, stats-mode none"):
        assert lines[base].count(" 1.000x |") == 2          # wall and CPU, against itself
    assert "accelerated pypaimon, full" in lines and ".row writer, min-max of every column" in lines


def test_object_store_report(tmp_path):
    """object_store.py end to end at a tiny size on its own loopback S3 server
    (--smoke): every operation of every format that runs here reported with
    its requests and bytes (the script checks each result's rows itself)."""
    out = tmp_path / "object-store.md"
    p = subprocess.run([sys.executable, os.path.join(BENCH, "object_store.py"), "--smoke",
                        "--no-paimon", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    text = out.read_text()
    for op in ("open", "get", "take(100)", "take(1000)", "scan", "scan 2 columns"):
        assert f"| {op} | rowformat `.row` | " in text
    assert "read / touched 1.00x" in text and "Load average" in text


def test_scale_report(tmp_path):
    out = tmp_path / "scale.md"
    p = subprocess.run([sys.executable, os.path.join(BENCH, "scale.py"), "--rows", "3000",
                        "--epoch-rows", "3000", "--opens", "1", "--dir", str(tmp_path / "files"),
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    text = out.read_text()
    for heading in ("## Opening a file", "## RowDataset epoch", "## A 10k-row take"):
        assert heading in text
    assert "| 3,000 | 60 |" in text and not (tmp_path / "files").exists()


def test_spark_streaming_bookkeeping():
    """spark_streaming.py's latency bookkeeping and report, without a Spark session (a
    streaming run takes well over the suite's budget): rows are matched to the sink batch
    that took them in by the rate source's offsets, latencies are measured from event
    time and from that batch's start, and the report states each target's outcome."""
    import argparse

    import numpy as np
    import pytest
    pytest.importorskip("pyspark", reason="pyspark is not installed: it comes with the [spark] "
                        "extra, not [test] (bash run.sh test installs both)")
    import spark_streaming as ss
    # a rate of 10 rows/s: batch 0 took seconds [0, 2) (ids 0-19), batch 1 second 2 (20-29)
    progress = [{"timestamp": "2026-01-01T00:00:02.000Z", "numInputRows": 20,
                 "sources": [{"startOffset": None, "endOffset": 2}]},
                {"timestamp": "2026-01-01T00:00:03.000Z", "numInputRows": 0,
                 "sources": [{"startOffset": 2, "endOffset": 2}]},
                {"timestamp": "2026-01-01T00:00:03.500Z", "numInputRows": 10,
                 "sources": [{"startOffset": 2, "endOffset": 3}]}]
    t2 = ss._when(progress[0])
    entered = ss.batch_starts(progress, 10)
    got = entered(np.array([0, 19, 20, 29, 30]))
    assert list(got[:4]) == [t2, t2, t2 + 1.5, t2 + 1.5] and np.isnan(got[4])
    arr = ss.Arrivals()
    # rows 19 and 25 made at t2 - 0.1 and t2 + 0.5, arrived at t2 + 1 and t2 + 3
    arr.event_us = [np.array([int((t2 - 0.1) * 1e6)]), np.array([int((t2 + 0.5) * 1e6)])]
    arr.ids = [np.array([19]), np.array([25])]
    arr.arrival = [t2 + 1, t2 + 3]
    lat, since = arr.latencies(t2 - 1, t2 + 1, entered)
    assert np.allclose(lat, [1.1, 2.5]) and np.allclose(since, [1.0, 1.5])
    assert len(arr.latencies(t2, t2 + 1, entered)[0]) == 1       # row 19 is before the window

    a = argparse.Namespace(rate=10, warmup=1, duration=2, pipeline_repeats=1, reader_trigger=1,
                           snapshots=2, snapshot_rows=5, repeats=1, master="local[2]",
                           only="pipeline,backlog")
    run = dict(rate=10, window=2.0, sink_rows=20, sink_batches=2, throughput=10.0,
               capacity=40.0, sink_batch_ms=500, sink_add_ms=300, read_batch_ms=400,
               read_batches=2, rows_seen=20, rows_made=20, drained=True, p50=1.5, p95=1.9,
               max=2.0, in_p50=1.0, in_p95=1.2, in_rows=20, cpu_jvm=1.0, cpu_workers=0.5,
               cpu_driver_py=0.1)
    pipes = [dict(run, side=ss.FORMAT), dict(run, side=ss.PARQUET, p95=2.5)]
    sides = (ss.STREAM, ss.BATCH, ss.FLOOR, ss.PQ_STREAM, ss.PQ_BATCH)
    walls = dict(zip(sides, (1.2, 1.0, 0.3, 0.9, 0.8)))
    back = {"wall": {k: [v] for k, v in walls.items()}, "cpu": {k: [v] for k, v in walls.items()},
            "files": 4, "phases": [dict(batches=1, latestOffset=0.1, queryPlanning=0.0,
                                        addBatch=0.5, walCommit=0.0, commitOffsets=0.0,
                                        triggerExecution=0.7)]}
    text = ss.report(a, pipes, back, (1.0, 1.0, 1.0), (2.0, 2.0, 2.0), {"pyspark": "4.3.0"})
    assert "p95 latency <= 2 triggers: 1.90 s (met; Parquet 2.50 s)" in text
    assert "sink throughput >= Parquet's: 10 against 10 rows/s (met" in text
    assert "| paimon-row | 10 rows/s | 40 rows/s | 500 ms | 400 ms | 1.50 s (1.50) | " \
           "1.90 s (1.90) | 2.00 s | 1.00 / 1.20 s | 20 / 20 | 1.0 / 0.1 |" in text
    assert "Target: within 1.3x of the batch read: 1.20x (met); beyond batch read + floor: " \
           "-0.10 s." in text
    assert "Load average (1, 5, 15 min) before: 1.00, 1.00, 1.00" in text
