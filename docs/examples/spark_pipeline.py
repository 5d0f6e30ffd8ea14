"""End-to-end rowformat pipeline on local Spark (no cluster needed).

    python examples/spark_pipeline.py [--rows 200000] [--lookups 20000] [--master 'local[*]']

Generates a dataset, writes it with Spark as a paimon-row dataset, looks
rows up by row number inside UDFs (mapInArrow and arrow_udf), applies a
deletion vector, reads the dataset back, and prints a timing table. Needs
``pip install 'rowformat[spark]'`` and Java 17+.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict

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
    ap.add_argument("--partitions", type=int, default=4, help="write tasks (= files)")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--dir", help="dataset directory (default: a temporary one, removed)")
    args = ap.parse_args()

    import rowformat.spark
    from rowformat.spark import dataset as ds
    from pyroaring import BitMap

    workdir = args.dir or tempfile.mkdtemp(prefix="rowformat-pipeline-")
    path = os.path.join(workdir, "events")
    n, k = args.rows, min(args.lookups, args.rows)
    timer = Timer()
    spark = timer.step("start local Spark", lambda: start_spark(args.master))
    try:
        # 1. Generate and write (one .row file per task, one atomic commit).
        events = spark.range(0, n, 1, args.partitions).selectExpr(
            "id",
            "concat('user-', cast(id % 9973 as string)) as user",
            "cast(rand(7) * 1000 as double) as score",
            "array(id % 3, id % 5) as buckets",
            "timestamp_seconds(1700000000 + id) as ts",
            "case when id % 11 = 0 then null else named_struct('ok', id % 2 = 0, "
            "'note', repeat('x', cast(id % 20 as int))) end as extra")
        timer.step("write dataset (Spark -> .row)",
                   lambda: events.write.format(FORMAT).mode("overwrite").save(path), n)
        d = ds.Dataset.open(path)
        print(f"dataset {path}: {len(d.files)} files, {d.num_rows:,} rows, "
              f"{sum(os.path.getsize(d.file_path(e.name)) for e in d.files) / 1e6:.1f} MB, "
              f"schema [{d.schema}]")

        # 2. Full scan back through the data source.
        def scan():
            return spark.read.format(FORMAT).option("rowsPerPartition", 50_000).load(path) \
                .selectExpr("count(*) as n", "sum(id) as s", "count(extra) as e").first()
        got = timer.step("read + aggregate (full scan)", scan, n)
        assert got.n == n and got.s == n * (n - 1) // 2, got

        # 3. Keys to look up: (file, row number) of a random sample of rows.
        keyed = spark.read.format(FORMAT).option("rowNumbers", "true").load(path)
        sample = timer.step("pick keys (read with _file/_row)",
                            lambda: keyed.select("_file", "_row", "id")
                            .orderBy("ts").sample(fraction=k / n, seed=3).limit(k).cache(),
                            None)
        k = timer.step("  materialize keys", sample.count)

        # 4. Row lookups inside a UDF: mapInArrow, readers cached per worker.
        looked = rowformat.spark.lookup(sample, "_file", "_row", ["id", "user", "score"],
                                        prefix="hit_")
        bad = timer.step("lookup by row number (mapInArrow)",
                         lambda: looked.where("hit_id != id or hit_user is null").count(), k)
        assert bad == 0, f"{bad} lookups returned the wrong row"

        fetch = rowformat.spark.lookup_udf(["id", "buckets"], schema=path)
        bad = timer.step("lookup by row number (arrow_udf)",
                         lambda: sample.select("id", fetch("_file", "_row").alias("hit"))
                         .where("hit.id != id").count(), k)
        assert bad == 0

        # 5. Deletion vector: drop every row with id % 10 == 0, one bitmap per file.
        def delete():
            doomed = defaultdict(BitMap)
            for r in keyed.where("id % 10 = 0").select("_file", "_row").toLocalIterator():
                doomed[r._file].add(r._row)
            ds.set_deletion_vectors(path, dict(doomed))
            return sum(len(b) for b in doomed.values())
        deleted = timer.step("apply deletion vectors", delete, n // 10)
        assert deleted == (n + 9) // 10

        # 6. Read back: deleted rows are gone, projection through a user schema.
        def reread():
            return spark.read.format(FORMAT).schema("id bigint, score double").load(path) \
                .selectExpr("count(*) as n", "sum(case when id % 10 = 0 then 1 else 0 end) as z") \
                .first()
        got = timer.step("read back (projection, DVs applied)", reread, n - deleted)
        assert got.n == n - deleted and got.z == 0, got
    finally:
        spark.stop()
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)
    timer.print()
    print("\nall checks passed")


if __name__ == "__main__":
    main()
