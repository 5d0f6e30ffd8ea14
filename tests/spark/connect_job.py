"""A Spark Connect client (run by test_connect.py in its own process, as a
user's script would be): docs/spark.md's Spark Connect recipe, then the
paimon-row source and every rowformat.spark helper through the Connect
session, each result checked against stock pypaimon; first a plain Python
UDF reports where the server's Python workers run. Prints one
``CONNECT-RESULT <json>`` line.

    python tests/spark/connect_job.py sc://127.0.0.1:15002 WORKDIR
"""
import json
import os
import sys
import time


def stock(path):
    """The table read by plain pypaimon (no rowformat in the read path)."""
    from pypaimon.table.file_store_table import FileStoreTable
    table = FileStoreTable.from_path(path)
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def where_python_runs(_):
    """A plain Python UDF (no rowformat): the Python it ran, where, and
    whether the client's venv is hidden there (as on another node)."""
    import json as _json
    import os as _os
    import sys as _sys
    return _json.dumps({"python": _sys.executable, "cwd": _os.getcwd(),
                        "prefix": _os.path.normpath(_sys.prefix),
                        "venv_hidden": not _os.listdir(VENV) if _os.path.isdir(VENV) else True})


VENV = sys.prefix       # the client's venv (sent by value with the UDF)


def main():
    url, workdir = sys.argv[1], sys.argv[2]
    out = {}
    t = time.perf_counter()
    # -- the recipe (docs/spark.md, "Spark Connect") --
    from pyspark.sql import SparkSession
    import rowformat.spark

    spark = SparkSession.builder.remote(url).getOrCreate()
    rowformat.spark.register(spark)     # checks the server's workers; registers the source
    # -- end of the recipe --
    out["start_and_register_s"] = round(time.perf_counter() - t, 2)
    from pyspark.sql import functions as F
    from rowformat.spark import preflight
    out["is_connect"] = preflight.is_connect(spark)
    out["probe"] = preflight.probe_executors(spark)
    out["plain_udf"] = json.loads(spark.range(0, 1, 1, 1).select(
        F.udf(where_python_runs, "string", useArrow=False)("id")).collect()[0][0])

    # a partitioned, row-tracking table; filter + aggregate
    path = os.path.join(workdir, "db.db", "events")
    n = 6000
    spark.range(0, n, 1, 2).selectExpr(
        "id", "cast(id % 3 as int) as day", "concat('u', cast(id as string)) as user",
        "cast(id as double) / 4 as score").write.format("paimon-row") \
        .option("partitionKeys", "day").option("paimon.row-tracking.enabled", "true") \
        .mode("overwrite").save(path)
    events = spark.read.format("paimon-row").load(path)
    agg = {r.day: [r.n, r.s] for r in events.where("id >= 100").groupBy("day").agg(
        F.count("*").alias("n"), F.sum("id").alias("s")).collect()}
    ev = stock(path)
    want = {}
    for d, i in zip(ev.column("day").to_pylist(), ev.column("id").to_pylist()):
        if i >= 100:
            c, s = want.get(d, [0, 0])
            want[d] = [c + 1, s + i]
    out["rows"] = ev.num_rows
    out["aggregate_equal"] = agg == want

    # pushed filters: the rows of a read without (register() leaves the conf
    # off on Spark 4.3, whose DataFrames keep a pushed read: each read here
    # is a fresh DataFrame, and the conf is unset again after)
    out["pushdown_conf"] = spark.conf.get("spark.sql.python.filterPushdown.enabled", None)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    pushed = {}
    for condition in ("id = 4242", "_ROW_ID IN (5, 4000, 5999)", "user LIKE 'u59%' AND id > 5990"):
        def read(push, condition=condition):
            return sorted(tuple(r) for r in spark.read.format("paimon-row")
                          .option("rowIds", "true").option("pushFilters", push).load(path)
                          .where(condition).select("_ROW_ID", "id", "user").collect())
        got = read("true")
        pushed[condition] = [len(got), got == read("false")]
    out["pushdown"] = pushed
    spark.conf.unset("spark.sql.python.filterPushdown.enabled")

    # a primary-key upsert
    users = os.path.join(workdir, "db.db", "users")
    spark.range(0, 200, 1, 2).selectExpr("concat('k', cast(id as string)) as k", "id as v") \
        .write.format("paimon-row").option("primaryKeys", "k").option("bucket", "2") \
        .mode("overwrite").save(users)
    spark.range(0, 200, 1, 2).where("id % 2 = 0").selectExpr(
        "concat('k', cast(id as string)) as k", "-id as v").write.format("paimon-row") \
        .mode("append").save(users)
    merged = {r.k: r.v for r in spark.read.format("paimon-row").load(users).collect()}
    us = stock(users)
    out["upsert_equal"] = merged == dict(zip(us.column("k").to_pylist(),
                                             us.column("v").to_pylist()))
    out["upserted"] = sum(1 for k, v in merged.items()
                          if int(k[1:]) % 2 == 0 and v == -int(k[1:]))
    # its full compaction: a bucket a task on the executors, committed by this client
    c = rowformat.spark.compact(spark, users, full=True)
    out["compacted"] = [c.written, c.files_after, {
        r.k: r.v for r in spark.read.format("paimon-row").load(users).collect()} == merged]

    # _ROW_ID lookups: the mapInArrow stage (local_max_rows=0) and the driver path
    truth = dict(zip(ev.column("id").to_pylist(), ev.column("user").to_pylist()))
    ids = spark.read.format("paimon-row").option("rowIds", "true").load(path) \
        .select("_ROW_ID", "id").where("id % 37 = 0")
    for name, kw in (("lookup_row_ids_stage", {"local_max_rows": 0}),
                     ("lookup_row_ids_driver", {})):
        hits = rowformat.spark.lookup_row_ids(ids, path, ["id", "user"], prefix="hit_",
                                              **kw).collect()
        out[name] = [len(hits), all(h.hit_id == h.id and truth[h.id] == h.hit_user
                                    for h in hits)]

    # lookup and lookup_udf on bare .row files
    files = os.path.join(workdir, "files")
    os.makedirs(files, exist_ok=True)
    schema = "k INT, v STRING"
    with rowformat.RowFileWriter(os.path.join(files, "x.row"), schema) as w:
        w.write_rows([(i, f"v{i}") for i in range(1000)])
    keys = spark.read.format("paimon-row").option("paimonSchema", schema) \
        .option("rowNumbers", "true").load(files).where("k % 9 = 0").select("_file", "_row", "k")
    got = rowformat.spark.lookup(keys, "_file", "_row", ["v"], schema=schema, prefix="hit_",
                                 local_max_rows=0).collect()
    out["lookup"] = [len(got), all(r.hit_v == f"v{r.k}" for r in got)]
    fetch = rowformat.spark.lookup_udf(["v"], schema=schema)
    got = keys.select("k", fetch("_file", "_row").alias("hit")).collect()
    out["lookup_udf"] = [len(got), all(r.hit.v == f"v{r.k}" for r in got)]

    # Fory rows: struct -> bytes -> struct
    back = events.select("id", rowformat.spark.from_fory(
        rowformat.spark.to_fory(F.struct("id", "user", "score")),
        "id BIGINT, user STRING, score DOUBLE").alias("r"))
    out["fory_bad"] = back.where("r.id != id or r.user != concat('u', cast(id as string)) "
                                 "or r is null").count()
    out["fory_rows"] = back.count()
    spark.stop()
    print("CONNECT-RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
