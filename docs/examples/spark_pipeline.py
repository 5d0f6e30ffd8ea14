"""End-to-end rowformat pipeline on local Spark (no cluster needed).

    python docs/examples/spark_pipeline.py [--rows 200000] [--lookups 20000] [--master 'local[*]']

Spark writes a partitioned, row-tracking Paimon table (``file.format=row``),
reads it back with an aggregate, updates rows through a primary-key table,
fetches rows by ``_ROW_ID`` inside a UDF, and finally reads both tables
with stock pypaimon and checks that they agree with Spark. Prints a timing
table. Needs ``pip install 'rowformat[spark]'`` and Java 17+.
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
    def __init__(self):
        self.rows = []

    def step(self, name, fn, rows=None):
        t = time.perf_counter()
        result = fn()
        self.rows.append((name, time.perf_counter() - t, rows))
        return result

    def print(self):
        width = max(len(n) for n, _, _ in self.rows)
        print(f"\n{'step':<{width}}  {'seconds':>8}  {'rows':>9}  {'rows/s':>10}")
        print(f"{'-' * width}  {'-' * 8}  {'-' * 9}  {'-' * 10}")
        for name, secs, rows in self.rows:
            rate = f"{rows / secs:>10,.0f}" if rows else " " * 10
            rows_s = f"{rows:>9,}" if rows else " " * 9
            print(f"{name:<{width}}  {secs:>8.2f}  {rows_s}  {rate}")
        print(f"{'total':<{width}}  {sum(s for _, s, _ in self.rows):>8.2f}")


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
    from rowformat.paimon import tables as tb

    workdir = args.dir or tempfile.mkdtemp(prefix="rowformat-pipeline-")
    path = os.path.join(workdir, "demo.db", "events")       # a filesystem catalog's layout
    users_path = os.path.join(workdir, "demo.db", "users")
    n, k = args.rows, min(args.lookups, args.rows)
    timer = Timer()
    spark = timer.step("start local Spark", lambda: start_spark(args.master))
    try:
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
        timer.step("write partitioned table (Spark -> Paimon)",
                   lambda: events.write.format(FORMAT).option("partitionKeys", "day")
                   .option("paimon.row-tracking.enabled", "true")
                   .mode("overwrite").save(path), n)
        t = tb.open_table(path)
        files = [f for s in tb.plan(t) for f in s.files]
        print(f"table {path}: snapshot {tb.latest_snapshot_id(t)}, {len(files)} data files, "
              f"{sum(f.row_count for f in files):,} rows, "
              f"{sum(f.file_size for f in files) / 1e6:.1f} MB, "
              f"partitioned by {t.partition_keys}, schema [{tb.row_type(t)}]")

        # 2. Read back with an aggregate.
        def scan():
            from pyspark.sql import functions as F
            return spark.read.format(FORMAT).load(path).groupBy("day").agg(
                F.count("*").alias("n"), F.sum("id").alias("s")).collect()
        got = timer.step("read + aggregate by partition", scan, n)
        assert sum(r.n for r in got) == n and sum(r.s for r in got) == n * (n - 1) // 2, got

        # 3. A primary-key table: the latest score per user, then an update.
        from pyspark.sql import functions as F
        latest = spark.read.format(FORMAT).load(path).groupBy("user").agg(
            F.max("score").alias("best"), F.count("id").alias("events"))
        timer.step("write primary-key table", lambda: latest.write.format(FORMAT)
                   .option("primaryKeys", "user").option("bucket", "2")
                   .mode("overwrite").save(users_path))
        updates = spark.read.format(FORMAT).load(users_path).where("events % 2 = 0") \
            .selectExpr("user", "cast(-1 as double) as best", "events")
        n_updates = timer.step("  update rows (upsert by key)",
                               lambda: (updates.write.format(FORMAT).mode("append")
                                        .save(users_path), updates.count())[1])
        users = spark.read.format(FORMAT).load(users_path)
        merged = timer.step("  read merged table", lambda: users.selectExpr(
            "count(*) as n", "sum(case when best = -1.0 then 1 else 0 end) as updated").first())
        assert merged.n == min(997, n) and merged.updated == n_updates, (merged, n_updates)

        # 4. Rows by _ROW_ID inside a UDF: routed to files, one block read each.
        ids = spark.read.format(FORMAT).option("rowIds", "true").load(path) \
            .select("_ROW_ID", "id").sample(fraction=min(1.0, 2 * k / n), seed=3).limit(k).cache()
        k = timer.step("  pick _ROW_IDs", ids.count)
        looked = rowformat.spark.lookup_row_ids(ids, path, ["id", "user", "score"],
                                                prefix="hit_")
        bad = timer.step("lookup by _ROW_ID (mapInArrow)",
                         lambda: looked.where("hit_id is null or hit_id != id").count(), k)
        assert bad == 0, f"{bad} lookups returned the wrong row"

        # 5. Stock pypaimon (no rowformat in the read path) agrees with Spark.
        def stock(table_path):
            from pypaimon.table.file_store_table import FileStoreTable
            table = FileStoreTable.from_path(table_path)
            rb = table.new_read_builder()
            return rb.new_read().to_arrow(rb.new_scan().plan().splits())
        ev = timer.step("read events with stock pypaimon", lambda: stock(path), n)
        assert ev.num_rows == n and sum(ev.column("id").to_pylist()) == n * (n - 1) // 2
        spark_sum = spark.read.format(FORMAT).load(path).selectExpr("sum(score)").first()[0]
        assert abs(sum(ev.column("score").to_pylist()) - spark_sum) < 1e-6 * max(1.0, spark_sum)
        us = stock(users_path)
        want = {(r.user, r.best, r.events) for r in users.collect()}
        assert {(u, b, e) for u, b, e in zip(*(us.column(c).to_pylist()
                                                for c in ("user", "best", "events")))} == want
        print("stock pypaimon reads the same rows as Spark")
    finally:
        spark.stop()
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)
    timer.print()
    print("\nall checks passed")


if __name__ == "__main__":
    main()
