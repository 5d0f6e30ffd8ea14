"""Selective Spark queries on a paimon-row table against the same rows in
Spark's Parquet source (issue 42): pushed filters prune files by the
manifests' statistics, ``_ROW_ID`` predicates read only their blocks.

    .venv/bin/python benchmarks/spark_selective.py --rows 20000000 --files 200

Data: ``spark.range(rows)`` in ``--files`` tasks (so each file holds a run
of ids), columns ``id``, ``name`` (``'user'`` + the id zero-padded to 10
digits: names sort as ids do), ``day`` (``id * 10 // rows``: 10 partitions),
``score`` (a double); written once by the paimon-row source (a row-tracking
table, ``metadata.stats-mode=full``) and once by Spark's Parquet source
(``partitionBy("day")``): one file per task either way, give or take the
tasks that straddle a day.

Queries (each on a freshly loaded DataFrame: PySpark 4.3.0 reuses a
DataFrame's pruned plan): ``id = x``, ``id BETWEEN x AND x+999``,
``name = '...'`` (their rows collected), ``day = 3`` (a count and a sum),
and ``_ROW_ID IN (ids)`` of ``--ids`` random ids against
``rowformat.spark.lookup_row_ids`` of the same ids. The Python-source floor:
a Python source whose reader plans one split and yields no row, queried the
same way (what Spark costs any Python source: planning in a Python worker,
the task, the Arrow hand-off). Files: the data files paimon-row's planner
keeps (counted by planning in this process); Parquet's are those of the
partitions it keeps (it opens each one's footer, then skips row groups).
Medians of ``--repeats`` interleaved rounds, results to
``benchmarks/results-spark-selective.md``.
"""
from __future__ import annotations

import argparse
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pyspark.sql.datasource import (  # noqa: E402
    CaseInsensitiveDict, DataSource, DataSourceReader, EqualTo, GreaterThanOrEqual, In,
    InputPartition, LessThanOrEqual,
)

from spark_tables import ArrowFilesSource, Runs, start_spark  # noqa: E402

FORMAT = "paimon-row"
SCHEMA = "id bigint, name string, day int, score double"


class EmptySource(DataSource):
    """The floor: plans one split, reads no row."""

    @classmethod
    def name(cls):
        return "empty-floor"

    def schema(self):
        return SCHEMA

    def reader(self, schema):
        return EmptyReader()


class EmptyReader(DataSourceReader):
    def pushFilters(self, filters):
        return []

    def partitions(self):
        return [InputPartition(0)]

    def read(self, partition):
        return iter(())


def build(spark, rows: int, files: int, base: str) -> tuple[str, str, float, float]:
    df = spark.range(0, rows, numPartitions=files).selectExpr(
        "id", "concat('user', lpad(CAST(id AS STRING), 10, '0')) AS name",
        f"CAST(id * 10 DIV {rows} AS INT) AS day", "CAST(id % 1000 AS DOUBLE) / 7 AS score")
    table, parquet = os.path.join(base, "t"), os.path.join(base, "p")
    t0 = time.perf_counter()
    df.write.format(FORMAT).mode("overwrite").option("partitionKeys", "day") \
        .option("paimon.metadata.stats-mode", "full") \
        .option("paimon.row-tracking.enabled", "true").save(table)
    t_table = time.perf_counter() - t0
    t0 = time.perf_counter()
    df.write.mode("overwrite").partitionBy("day").parquet(parquet)
    return table, parquet, t_table, time.perf_counter() - t0


def data_files(path: str, suffix: str) -> int:
    return sum(1 for _, _, names in os.walk(path) for x in names
               if x.endswith(suffix) and not x.startswith("."))


def write_matching_arrow(table_path: str, out: str, filters) -> tuple[int, str]:
    """The rows of the splits the planner keeps for ``filters``, as Arrow IPC
    files of Spark's types (one a split, as paimon-row reads them): the
    input of the Arrow hand-off floor. (files, the Spark schema)"""
    import pyarrow as pa
    from rowformat.arrow_cast import cast_batch
    from rowformat.paimon import tables as tb
    from rowformat.spark.filters import planner_predicate
    from rowformat.spark.spark_types import spark_arrow_schema, to_spark_schema
    table = tb.open_table(table_path)
    schema = to_spark_schema(tb.row_type(table))
    target = spark_arrow_schema(schema)
    roots = {f.name: f.type.root for f in tb.row_type(table).fields}
    predicate = planner_predicate(filters, roots, table.new_read_builder().new_predicate_builder())
    splits = tb.plan_splits(table, predicate=predicate)
    for i, split in enumerate(splits):
        with pa.OSFile(f"{out}.{i}", "wb") as f, pa.ipc.new_file(f, target) as w:
            for batch in tb.read_batches(table, [split], schema.names):
                w.write_batch(cast_batch(batch, target, truncate=True))
    return len(splits), schema


def planned_files(table: str, filters, row_ids: bool = False) -> int:
    from rowformat.spark.datasource import RowDataSource
    from rowformat.spark.table_source import SplitGroup
    opts = {"path": table, **({"rowIds": "true"} if row_ids else {})}
    source = type("S", (RowDataSource,), {"pushdown": True})(CaseInsensitiveDict(opts))
    reader = source.reader(source.schema())
    reader.pushFilters(list(filters))
    n = 0
    for p in reader.partitions():
        n += sum(len(s.files) for s in pickle.loads(p.splits)) if isinstance(p, SplitGroup) \
            else len(p.files)
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--ids", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__),
                                                  "results-spark-selective.md"))
    a = ap.parse_args(argv)
    import rowformat.spark
    # the workers unpickle ArrowFilesSource from spark_tables by reference
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (here, os.environ.get("PYTHONPATH")) if p)
    spark = start_spark(a.master, a.driver_memory)
    rowformat.spark.register(spark)
    # (register() leaves it off on Spark 4.3; every query here loads a new DataFrame)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(EmptySource)
    spark.dataSource.register(ArrowFilesSource)
    base = tempfile.mkdtemp(prefix="spark-selective-")
    load_before = os.getloadavg()
    try:
        table, parquet, t_table, t_parquet = build(spark, a.rows, a.files, base)
        rng = random.Random(42)
        x = rng.randrange(a.rows - 1000)
        name = f"user{rng.randrange(a.rows):010d}"
        ids = sorted(rng.sample(range(a.rows), a.ids))

        def paimon():
            return spark.read.format(FORMAT).load(table)

        def pq():
            return spark.read.parquet(parquet)

        def floor():
            return spark.read.format("empty-floor").load()

        queries = {
            "id = x": (f"id = {x}", [EqualTo(("id",), x)], None),
            "id BETWEEN x AND x+999": (f"id BETWEEN {x} AND {x + 999}",
                                       [GreaterThanOrEqual(("id",), x),
                                        LessThanOrEqual(("id",), x + 999)], None),
            "name = '...'": (f"name = '{name}'", [EqualTo(("name",), name)], None),
            "day = 3 (count, sum)": ("day = 3", [EqualTo(("day",), 3)], 3),
        }
        arrow_files, arrow_schema = write_matching_arrow(
            table, os.path.join(base, "day3.arrow"), queries["day = 3 (count, sum)"][1])

        def handoff():
            return spark.read.format("arrow-files").schema(arrow_schema) \
                .option("path", os.path.join(base, "day3.arrow")).option("files", arrow_files) \
                .load()
        runs = Runs(a.repeats, None)
        # first uses (JVM warm-up, Python workers, planner workers) outside the timings
        for load in (paimon, pq, floor):
            load().where(f"id = {x}").collect()
        results, files = {}, {}
        total_paimon, total_parquet = data_files(table, ".row"), data_files(parquet, ".parquet")
        for op, (cond, filters, day) in queries.items():
            if day is None:
                def q(load, cond=cond):
                    return sorted(tuple(r) for r in load().where(cond).select("id", "name", "day", "score").collect())
            else:
                def q(load, cond=cond):
                    return tuple(load().where(cond).selectExpr("count(*)", "sum(id)").first())
            sides = {"paimon-row": lambda q=q: q(paimon), "Parquet": lambda q=q: q(pq),
                     "floor": lambda q=q: q(floor)}
            if day is not None:
                sides["Arrow hand-off floor"] = lambda q=q: q(handoff)
            got = runs.run(op, sides)
            if day is not None:
                assert got["Arrow hand-off floor"] == got["paimon-row"]
            assert got["paimon-row"] == got["Parquet"], (op, got["paimon-row"], got["Parquet"])
            results[op] = got["paimon-row"]
            files[op] = (planned_files(table, filters),
                         data_files(os.path.join(parquet, f"day={day}"), ".parquet") if day is not None
                         else total_parquet)

        id_list = ", ".join(map(str, ids))
        ids_df = None

        def by_predicate():
            return sorted(tuple(r) for r in spark.read.format(FORMAT).option("rowIds", "true")
                          .load(table).where(f"_ROW_ID IN ({id_list})")
                          .select("_ROW_ID", "id", "name", "day", "score").collect())

        def by_lookup():
            nonlocal ids_df
            ids_df = spark.createDataFrame([(i,) for i in ids], "_ROW_ID bigint")
            return sorted(tuple(r) for r in rowformat.spark.lookup_row_ids(
                ids_df, table, ["id", "name", "day", "score"]).collect())
        op = f"_ROW_ID IN ({a.ids} random ids)"
        got = runs.run(op, {"paimon-row": by_predicate, "lookup_row_ids": by_lookup})
        assert got["paimon-row"] == got["lookup_row_ids"] and len(got["paimon-row"]) == a.ids
        files[op] = (planned_files(table, [In(("_ROW_ID",), tuple(ids))], row_ids=True), None)
    finally:
        spark.stop()
        shutil.rmtree(base, ignore_errors=True)
    md = report(a, runs, files, total_paimon, total_parquet, t_table, t_parquet, load_before,
                os.getloadavg())
    with open(a.out, "w") as f:
        f.write(md)
    print(md)
    return 0


def report(a, runs, files, total_paimon, total_parquet, t_table, t_parquet, load_before,
           load_after) -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=os.path.dirname(__file__)).stdout.strip()
    except OSError:
        commit = ""
    commit = commit or os.environ.get("ROWFORMAT_COMMIT", "?")
    lines = [
        "# Selective Spark queries: paimon-row against Parquet (issue 42)", "",
        f"`.venv/bin/python benchmarks/spark_selective.py --rows {a.rows} --files {a.files} "
        f"--ids {a.ids} --repeats {a.repeats}` at {commit}, {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} cores, `{a.master}`; medians of {a.repeats} interleaved rounds, each "
        f"query on a freshly loaded DataFrame. Data files: paimon-row {total_paimon}, Parquet "
        f"{total_parquet}; built in {t_table:.0f} s (paimon-row) and {t_parquet:.0f} s (Parquet).",
        "",
        "| query | paimon-row | Parquet | ratio | floor | ratio to floor | files read (paimon-row / Parquet) | target |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for op, (ours, theirs) in files.items():
        if op.startswith("_ROW_ID"):
            continue
        p, q, fl = (runs.median(op, s) for s in ("paimon-row", "Parquet", "floor"))
        handoff = "Arrow hand-off floor" in runs.wall[op]
        if handoff:      # the floor of a Python source handing Spark these rows
            fl = runs.median(op, "Arrow hand-off floor")
        met = p <= 1.2 * q or p <= 1.2 * fl
        lines.append(f"| `{op}` | {p:.2f} s | {q:.2f} s | {p / q:.2f}x | {fl:.2f} s"
                     f"{' (Arrow hand-off)' if handoff else ''} | "
                     f"{p / fl:.2f}x | {ours} / {theirs} of {total_paimon} / {total_parquet} | "
                     f"<= 1.2x Parquet or floor: {'met' if met else 'missed'} |")
    op = next(o for o in files if o.startswith("_ROW_ID"))
    p, q = runs.median(op, "paimon-row"), runs.median(op, "lookup_row_ids")
    lines += ["", "| query | paimon-row (`WHERE`) | `lookup_row_ids` | ratio | files read | target |",
              "|---|---:|---:|---:|---|---|",
              f"| `{op}` | {p:.2f} s | {q:.2f} s | {p / q:.2f}x | {files[op][0]} of "
              f"{total_paimon} (only the ids' rows: RowFileReader.take) | <= 1.5x: "
              f"{'met' if p <= 1.5 * q else 'missed'} |"]
    lines += ["", "Every wall time (s):", ""]
    for op, sides in runs.wall.items():
        for side, times in sides.items():
            lines.append(f"- {op}, {side}: {', '.join(f'{t:.2f}' for t in times)}")
    lines += ["", f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}"
              f"; after: {', '.join(f'{x:.2f}' for x in load_after)}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
