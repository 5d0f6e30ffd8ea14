"""A driver on the standalone cluster of test_cluster.py, run in its own
process as a user's job would be (the test's own classic session cannot
share a Python process with another SparkContext). Prints one
``CLUSTER-RESULT <json>`` line.

    python tests/spark/cluster_job.py '<json config>'

Modes:
- ``pipeline``: docs/spark.md's archive recipe (``spark.archives`` with a
  venv-pack archive, ``PYSPARK_PYTHON=./environment/bin/python`` and, as
  PySpark's own recipe has it, ``PYSPARK_DRIVER_PYTHON``); first the
  automatically found source (it must refuse, naming ``register(spark)``),
  then the check task's report, then the demo pipeline
  (docs/examples/spark_pipeline.py: partitioned write, filter + aggregate,
  primary-key upsert, ``_ROW_ID`` lookups, Fory round trip, each checked
  against stock pypaimon) on this session; before the session stops, the
  application's REST API and each worker's JSON say which executor ran how
  many tasks on which worker.
- ``unshipped``: ``PYSPARK_PYTHON`` is the driver's venv, which the workers
  cannot see: ``register(spark)`` must fail, naming it.
- ``bench``: write and full scan, ``paimon-row`` against Parquet, medians.
"""
import importlib.util
import json
import os
import statistics
import sys
import time
import urllib.request


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def start(cfg):
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.master(cfg["master"]).appName(f"rowformat-{cfg['mode']}")
    for k, v in cfg["conf"].items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def task_counts(spark, worker_uis):
    """{worker id: tasks its executors of this application ran}, from the
    application's REST API and the workers' JSON."""
    sc = spark.sparkContext
    app = sc.applicationId
    executors = get_json(f"{sc.uiWebUrl}/api/v1/applications/{app}/allexecutors")
    tasks = {e["id"]: e["totalTasks"] for e in executors}
    out = {}
    for port in worker_uis:
        w = get_json(f"http://127.0.0.1:{port}/json/")
        mine = [e for e in w.get("executors", []) + w.get("finishedexecutors", [])
                if e.get("appid") == app]
        out[w["id"]] = sum(tasks.get(str(e["id"]), 0) for e in mine)
    return {"by_worker": out, "executors": {k: v for k, v in tasks.items()}}


def pipeline(cfg, result):
    import rowformat.spark
    from rowformat.spark import preflight
    spark = start(cfg)
    # the source Spark finds by itself runs the driver's Python: it refuses
    try:
        spark.read.format("paimon-row").load(os.path.join(cfg["workdir"], "nothing")).count()
        result["automatic_source"] = "no error"
    except Exception as e:      # noqa: BLE001 - the message is the point
        result["automatic_source"] = str(e)[-3000:]
    result["probe"] = preflight.probe_executors(spark, timeout=120)

    spec = importlib.util.spec_from_file_location("spark_pipeline", cfg["demo"])
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    real_stop = spark.stop

    def stop():                 # what the REST API says, while it is up
        result["tasks"] = task_counts(spark, cfg["worker_uis"])
        real_stop()

    spark.stop = stop
    demo.start_spark = lambda master: spark
    sys.argv = ["spark_pipeline.py", "--master", cfg["master"], "--rows", str(cfg["rows"]),
                "--lookups", str(cfg["lookups"]), "--partitions", "4",
                "--dir", os.path.join(cfg["workdir"], "warehouse")]
    t = time.perf_counter()
    demo.main()
    result["pipeline_s"] = round(time.perf_counter() - t, 1)
    result["driver_link"] = os.readlink("environment") if os.path.islink("environment") \
        else None


def unshipped(cfg, result):
    import rowformat.spark
    from rowformat.errors import WorkerPythonError
    spark = start(cfg)
    try:
        rowformat.spark.register(spark)
        result["register"] = "no error"
    except WorkerPythonError as e:
        result["register"] = str(e)
    finally:
        spark.stop()


# the scans of the benchmark: (name, the columns aggregated); Parquet reads
# only those, a Python source reads every column unless .schema() projects
SCANS = (("3-column aggregate", ("count(*)", "sum(id)", "sum(score)", "max(user)")),
         ("every column", ("count(*)", "sum(id)", "sum(score)", "max(user)", "max(day)",
                           "max(size(buckets))", "max(ts)")))
PROJECTION = "id BIGINT, user STRING, score DOUBLE"


def _floor_source(spark, cfg):
    """With ``cfg["floor"]`` (benchmarks/, for benchmarks/spark_cluster.py):
    the Python-source floor of a scan, benchmarks/spark_tables.py's
    ``arrow-files`` source yielding the paimon-row table's own batches, made
    beforehand, with no decoding: what Spark itself costs any Python source on
    this cluster. Returns ``floor(table)``, which writes the table's batches
    and returns a maker of the DataFrame that reads them."""
    if not cfg.get("floor"):
        return None
    sys.path.insert(0, cfg["floor"])
    import spark_tables                 # the executors cannot import it: sent by value
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(spark_tables)
    spark.dataSource.register(spark_tables.ArrowFilesSource)
    out, files = os.path.join(cfg["workdir"], "floor"), cfg.get("partitions", 4)

    def floor(table):
        schema = spark_tables.write_arrow_files(table, out, files)
        return lambda: (spark.read.format("arrow-files").schema(schema)
                        .option("files", files).option("path", out).load())
    return floor


def bench(cfg, result):
    """paimon-row against Parquet on the same DataFrame: a write, then the
    SCANS (and paimon-row's 3-column aggregate projected by .schema()); the
    formats interleaved in each round, the first round a warm-up; every time
    kept, medians of ``repeat``."""
    import rowformat.spark
    spark = start(cfg)
    rowformat.spark.register(spark)
    n, parts = cfg["rows"], cfg.get("partitions", 4)
    df = spark.range(0, n, 1, parts).selectExpr(
        "id", "concat('user-', cast(id % 997 as string)) as user",
        "cast(id % 4 as string) as day", "cast(rand(7) * 1000 as double) as score",
        "array(id % 3, id % 5) as buckets", "timestamp_seconds(1700000000 + id) as ts")
    times: dict = {}

    def timed(key, fn, counted):
        t = time.perf_counter()
        fn()
        if counted:
            times.setdefault(key, []).append(time.perf_counter() - t)

    floor, floor_scan = _floor_source(spark, cfg), None
    for i in range(cfg["repeat"] + 1):
        for fmt in ("paimon-row", "parquet"):
            path = os.path.join(cfg["workdir"], "bench", fmt)
            timed(f"{fmt}|write", lambda: df.write.format(fmt).mode("overwrite").save(path), i)
            for name, exprs in SCANS:
                timed(f"{fmt}|{name}", lambda: spark.read.format(fmt).load(path)
                      .selectExpr(*exprs).collect(), i)
            if fmt == "paimon-row":
                timed(f"{fmt}|3-column aggregate, .schema() projection",
                      lambda: spark.read.format(fmt).schema(PROJECTION).load(path)
                      .selectExpr(*SCANS[0][1]).collect(), i)
            if fmt == "paimon-row" and floor:
                floor_scan = floor_scan or floor(path)      # every round writes the same rows
                for name, exprs in SCANS:
                    timed(f"floor|{name}", lambda: floor_scan().selectExpr(*exprs).collect(), i)
    result["bench"] = {k: {"median": statistics.median(v), "all": v} for k, v in times.items()}
    result["tasks"] = task_counts(spark, cfg["worker_uis"])
    spark.stop()


def main():
    cfg = json.loads(sys.argv[1])
    result = {"mode": cfg["mode"]}
    {"pipeline": pipeline, "unshipped": unshipped, "bench": bench}[cfg["mode"]](cfg, result)
    print("CLUSTER-RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
