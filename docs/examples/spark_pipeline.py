"""End-to-end rowformat pipeline on local Spark (no cluster needed).

    python docs/examples/spark_pipeline.py [--rows 200000] [--lookups 20000] [--master 'local[*]']

Spark writes a partitioned, row-tracking Paimon table (``file.format=row``),
reads it back with an aggregate, updates rows through a primary-key table,
fetches rows by ``_ROW_ID`` inside a UDF, turns rows into Fory bytes and
back, and checks every result against stock pypaimon reading the same
tables. The one-time start-up (the JVM, the first Python workers) is timed
on its own line; every step after it runs on warm workers, so its rows/s
is throughput, not start-up. Needs ``pip install 'rowformat[spark]'`` and
Java 17+.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

# Spark's Python workers must run this interpreter (it has rowformat installed).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

FORMAT = "paimon-row"


class Timer:
    """Steps with their time, rows and a sentence saying what they did."""

    def __init__(self):
        self.rows = []

    def step(self, name, fn, rows=None):
        t = time.perf_counter()
        result = fn()
        self.rows.append([name, time.perf_counter() - t, rows, ""])
        return result

    def say(self, text):
        """What the last step did, in words."""
        self.rows[-1][3] = text
        print(f"  {self.rows[-1][0]}: {text}")

    def print(self):
        width = max(len(n) for n, _, _, _ in self.rows)
        print(f"\n{'step (warm)':<{width}}  {'seconds':>7}  {'rows/s':>10}  what it did")
        print(f"{'-' * width}  {'-' * 7}  {'-' * 10}  {'-' * 40}")
        for name, secs, rows, text in self.rows:
            rate = f"{rows / secs:>10,.0f}" if rows else " " * 10
            print(f"{name:<{width}}  {secs:>7.2f}  {rate}  {text}")
        print(f"{'total':<{width}}  {sum(s for _, s, _, _ in self.rows):>7.2f}")


def warm_up(spark, workdir):
    """A tiny write, read, lookup and Fory round trip: starts the Python
    workers (planning, reading, writing, UDFs) and imports their modules,
    which the first job of a session pays once."""
    import rowformat.spark
    from pyspark.sql import functions as F
    path = os.path.join(workdir, "warmup")
    spark.range(0, 100, 1, 2).selectExpr("id", "cast(id as string) as s") \
        .write.format(FORMAT).option("paimon.row-tracking.enabled", "true") \
        .mode("overwrite").save(path)
    df = spark.read.format(FORMAT).option("rowIds", "true").load(path)
    rowformat.spark.lookup_row_ids(df.select("_ROW_ID"), path, ["s"]).count()
    df.select(rowformat.spark.from_fory(rowformat.spark.to_fory(F.struct("id", "s")),
                                        "id BIGINT, s STRING")).count()


def start_spark(master):
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.master(master).appName("rowformat-pipeline")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", "4"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--lookups", type=int, default=20_000)
    ap.add_argument("--partitions", type=int, default=4, help="write tasks")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--dir", help="warehouse directory (default: a temporary one, removed)")
    args = ap.parse_args()

    import rowformat.spark
    from pyspark.sql import functions as F
    from rowformat.paimon import tables as tb

    workdir = args.dir or tempfile.mkdtemp(prefix="rowformat-pipeline-")
    path = os.path.join(workdir, "demo.db", "events")       # a filesystem catalog's layout
    users_path = os.path.join(workdir, "demo.db", "users")
    n, k = args.rows, min(args.lookups, args.rows)
    timer = Timer()
    t0 = time.perf_counter()
    spark = start_spark(args.master)
    rowformat.spark.register(spark)     # checks the workers' Python; the session's sizing
    t1 = time.perf_counter()
    try:
        warm_up(spark, workdir)
        t2 = time.perf_counter()
        print(f"start-up, once per session (not in the figures below): Spark {t1 - t0:.1f} s, "
              f"first Python workers {t2 - t1:.1f} s; master {args.master}, "
              f"{spark.sparkContext.defaultParallelism} cores\n")

        # 1. Generate and write a partitioned Paimon table: one commit, one snapshot.
        events = spark.range(0, n, 1, args.partitions).selectExpr(
            "id",
            "concat('user-', cast(id % 997 as string)) as user",
            "cast(id % 4 as string) as day",
            "cast(rand(7) * 1000 as double) as score",
            "array(id % 3, id % 5) as buckets",
            "timestamp_seconds(1700000000 + id) as ts",
            "case when id % 11 = 0 then null else named_struct('ok', id % 2 = 0, "
            "'note', repeat('x', cast(id % 20 as int))) end as extra")
        timer.step("write table", lambda: events.write.format(FORMAT)
                   .option("partitionKeys", "day").option("paimon.row-tracking.enabled", "true")
                   .mode("overwrite").save(path), n)
        t = tb.open_table(path)
        files = [f for s in tb.plan(t) for f in s.files]
        timer.say(f"{sum(f.row_count for f in files):,} rows from {args.partitions} Spark tasks "
                  f"into {len(files)} .row files ({sum(f.file_size for f in files) / 1e6:.1f} MB) "
                  f"partitioned by {', '.join(t.partition_keys)}, one snapshot "
                  f"(#{tb.latest_snapshot_id(t)})")

        # 2. Read back with an aggregate.
        table_df = spark.read.format(FORMAT).load(path)
        got = timer.step("scan + aggregate", lambda: table_df.groupBy("day").agg(
            F.count("*").alias("n"), F.sum("id").alias("s")).collect(), n)
        timer.say(f"read {n:,} rows in {table_df.rdd.getNumPartitions()} Spark partitions, "
                  f"counted and summed them by day: {len(got)} groups")

        # 3. A primary-key table: the latest score per user, then an update.
        latest = spark.read.format(FORMAT).load(path).groupBy("user").agg(
            F.max("score").alias("best"), F.count("id").alias("events"))
        timer.step("write keyed table", lambda: latest.write.format(FORMAT)
                   .option("primaryKeys", "user").option("bucket", "2")
                   .mode("overwrite").save(users_path))
        timer.say("best score per user into a primary-key table (key user, 2 buckets)")
        updates = spark.read.format(FORMAT).load(users_path).where("events % 2 = 0") \
            .selectExpr("user", "cast(-1 as double) as best", "events")
        n_updates = timer.step("upsert", lambda: (updates.write.format(FORMAT).mode("append")
                                                  .save(users_path), updates.count())[1])
        timer.say(f"rewrote {n_updates:,} users' rows by key; Paimon merges on read")
        users = spark.read.format(FORMAT).load(users_path)
        merged = timer.step("read merged", lambda: users.selectExpr(
            "count(*) as n", "sum(case when best = -1.0 then 1 else 0 end) as updated").first())
        assert merged.n == min(997, n) and merged.updated == n_updates, (merged, n_updates)
        timer.say(f"{merged.n:,} users, {merged.updated:,} of them with the updated score")

        # 4. Rows by _ROW_ID inside a UDF: routed to files, each block read once per task.
        ids = spark.read.format(FORMAT).option("rowIds", "true").load(path) \
            .select("_ROW_ID", "id").sample(fraction=min(1.0, 2 * k / n), seed=3).limit(k).cache()
        k = ids.count()
        looked = rowformat.spark.lookup_row_ids(ids, path, ["id", "user", "score"],
                                                prefix="hit_")
        hits = timer.step("lookup by _ROW_ID", lambda: looked.select(
            "hit_id", "hit_user", "hit_score").collect(), k)
        timer.say(f"fetched {k:,} rows by _ROW_ID out of {n:,}, reading only the blocks "
                  f"that hold them")

        # 5. Fory rows: struct -> bytes -> struct, in C, no Python object per row.
        fory = table_df.select("id", rowformat.spark.to_fory(
            F.struct("id", "user", "score", "buckets")).alias("row"))
        back = fory.select("id", rowformat.spark.from_fory(
            "row", "id BIGINT, user STRING, score DOUBLE, buckets ARRAY<BIGINT>").alias("r"))
        fory_bad = timer.step("Fory encode + decode", lambda: back.where(
            "r.id != id or r is null").count(), n)
        assert fory_bad == 0, f"{fory_bad} rows did not survive Fory bytes"
        timer.say(f"{n:,} rows to Fory row bytes (to_fory) and back (from_fory), all equal")

        # 6. Stock pypaimon (no rowformat in the read path) agrees with every result.
        def stock(table_path):
            from pypaimon.table.file_store_table import FileStoreTable
            table = FileStoreTable.from_path(table_path)
            rb = table.new_read_builder()
            return rb.new_read().to_arrow(rb.new_scan().plan().splits())
        ev = timer.step("stock pypaimon read", lambda: stock(path), n)
        timer.say(f"read the events table again with plain pypaimon ({n:,} rows), to check")
        assert ev.num_rows == n and sum(ev.column("id").to_pylist()) == n * (n - 1) // 2
        by_day = {}
        for d, i in zip(ev.column("day").to_pylist(), ev.column("id").to_pylist()):
            c, s_ = by_day.get(d, (0, 0))
            by_day[d] = (c + 1, s_ + i)
        assert {r.day: (r.n, r.s) for r in got} == by_day, "the aggregate differs"
        spark_sum = table_df.selectExpr("sum(score)").first()[0]
        assert abs(sum(ev.column("score").to_pylist()) - spark_sum) < 1e-6 * max(1.0, spark_sum)
        truth = dict(zip(ev.column("id").to_pylist(),
                         zip(ev.column("user").to_pylist(), ev.column("score").to_pylist())))
        wrong = sum(1 for h in hits if truth.get(h.hit_id) != (h.hit_user, h.hit_score))
        assert wrong == 0 and len(hits) == k, f"{wrong} looked-up rows differ from pypaimon's"
        us = stock(users_path)
        want = {(r.user, r.best, r.events) for r in users.collect()}
        assert {(u, b, e) for u, b, e in zip(*(us.column(c).to_pylist()
                                                for c in ("user", "best", "events")))} == want
        print("\nstock pypaimon reads the same rows as Spark: the table, the aggregate, the "
              "upserts and every looked-up row")
    finally:
        spark.stop()
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)
    timer.print()
    print("\nall checks passed")


if __name__ == "__main__":
    main()
