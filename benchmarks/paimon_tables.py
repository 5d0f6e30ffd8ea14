"""pypaimon tables with file.format=row: stock pypaimon 2.1.0 against
``rowformat.paimon.accelerate()``, side by side in one run.

    .venv/bin/python benchmarks/paimon_tables.py [--rows 1000000] [--stock-rows 200000]
        [--pk-rows 200000] [--repeats 3] [--out benchmarks/results-paimon.md]

The data is ``benchmarks/dataset.py``'s ``generate(n)``; pypaimon supports all
ten of its columns (BIGINT, INT, DOUBLE, BOOLEAN, STRING x2, ARRAY<STRING>,
TIMESTAMP(3), DECIMAL(10, 2), BYTES), so none is dropped or cast.

* Append table (``bucket=-1``): write+commit of ``--rows`` rows in one commit,
  and a full scan (``to_arrow`` of all splits). Stock pypaimon is slow, so
  its runs use ``--stock-rows`` rows and the times are scaled linearly to
  ``--rows`` (marked "scaled"). The same scan of a ``file.format=parquet``
  table (stock pypaimon, ``--rows`` rows) is the reference, and
  ``RowFileReader.read()`` over the accelerated table's data files is the floor.
* Primary-key table (``bucket=4``): a commit of ``--pk-rows`` rows, then one
  round of updates (a commit updating every 10th key), timed together; then the
  merged full scan (accelerated, ``rowformat.paimon._merge``; its result is
  checked equal to stock's, row for row and in order). pypaimon's key-value write path (per-row bucket hashing and
  merging in Python) dominates the write either way, so both modes run at
  ``--pk-rows`` rows.

Each cell is the median of ``--repeats`` runs (fresh table per write run).
"""
from __future__ import annotations

import argparse
import glob
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dataset import generate  # noqa: E402

import rowformat  # noqa: E402
import rowformat.paimon as rp  # noqa: E402
from rowformat.paimon import _types  # noqa: E402


def _catalog(root):
    from pypaimon import CatalogFactory
    cat = CatalogFactory.create({"warehouse": root})
    cat.create_database("db", True)
    return cat


class Bench:
    def __init__(self, root, repeats):
        self.root = root
        self.cat = _catalog(root)
        self.repeats = repeats
        self.count = 0

    def create(self, schema, fmt="row", pk=False):
        from pypaimon import Schema
        self.count += 1
        name = f"db.t{self.count}"
        opts = {"file.format": fmt}
        if pk:
            opts["bucket"] = "4"
        self.cat.create_table(name, Schema.from_pyarrow_schema(
            schema, primary_keys=["id"] if pk else None, options=opts), True)
        return name

    def table(self, name):
        return self.cat.get_table(name)

    def write(self, name, data):
        t = self.table(name)
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(data)
        c.commit(w.prepare_commit())
        w.close()
        c.close()

    def scan(self, name):
        t = self.table(name)
        rb = t.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    def files(self, name):
        d = os.path.join(self.root, "db.db", name.split(".")[1])
        return sorted(glob.glob(os.path.join(d, "**", "data-*.row"), recursive=True))

    def timed(self, fn, setup=None):
        times, result = [], None
        for _ in range(self.repeats):
            arg = setup() if setup else None
            t0 = time.perf_counter()
            result = fn(arg) if setup else fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times), result


def _updates(data):
    """Every 10th key again, with a negated score."""
    ids = data.column("id").to_numpy()
    upd = data.filter(pa.array(ids % 10 == 0))
    return upd.set_column(upd.schema.get_field_index("score"), "score",
                          pc.negate(upd.column("score")))


def run(rows, stock_rows, pk_rows, repeats):
    full = generate(rows)
    small = full.slice(0, stock_rows) if stock_rows < rows else full
    pk_data = full.slice(0, pk_rows) if pk_rows < rows else full
    scale = rows / stock_rows
    root = tempfile.mkdtemp(prefix="paimon-bench-")
    b = Bench(root, repeats)
    res = {}
    try:
        # -- append table ---------------------------------------------------------
        rp.restore()
        res["append_write_stock"], _ = b.timed(lambda n: b.write(n, small),
                                               lambda: b.create(full.schema))
        stock_tbl = b.create(full.schema)
        b.write(stock_tbl, small)
        res["append_scan_stock"], got_stock = b.timed(lambda: b.scan(stock_tbl))
        assert got_stock.num_rows == stock_rows
        with rp.accelerated():
            res["append_write_fast"], _ = b.timed(lambda n: b.write(n, full),
                                                  lambda: b.create(full.schema))
            fast_tbl = b.create(full.schema)
            b.write(fast_tbl, full)
            res["append_scan_fast"], got = b.timed(lambda: b.scan(fast_tbl))
            assert got.num_rows == rows
        # the floor: RowFileReader.read() over the same files, with their schema
        schema = _types.row_type(b.table(fast_tbl).fields)
        files = b.files(fast_tbl)

        def raw():
            return sum(rowformat.RowFileReader(f, schema).read().num_rows for f in files)
        res["append_scan_raw"], n = b.timed(raw)
        assert n == rows
        # the Parquet reference, stock pypaimon
        res["parquet_write"], _ = b.timed(lambda n: b.write(n, full),
                                          lambda: b.create(full.schema, fmt="parquet"))
        pq_tbl = b.create(full.schema, fmt="parquet")
        b.write(pq_tbl, full)
        res["parquet_scan"], got = b.timed(lambda: b.scan(pq_tbl))
        assert got.num_rows == rows

        # -- primary-key table, 4 buckets, one round of updates ----------------------
        upd = _updates(pk_data)

        def pk_write(name):
            b.write(name, pk_data)
            b.write(name, upd)
        res["pk_write_stock"], _ = b.timed(pk_write, lambda: b.create(full.schema, pk=True))
        pk_stock = b.create(full.schema, pk=True)
        pk_write(pk_stock)
        res["pk_scan_stock"], ref = b.timed(lambda: b.scan(pk_stock))
        with rp.accelerated():
            res["pk_write_fast"], _ = b.timed(pk_write, lambda: b.create(full.schema, pk=True))
            pk_fast = b.create(full.schema, pk=True)
            pk_write(pk_fast)
            res["pk_scan_fast"], got = b.timed(lambda: b.scan(pk_fast))
            got_stock_files = b.scan(pk_stock)
        assert got.num_rows == ref.num_rows == pk_rows
        assert got.equals(ref)          # the vectorized merge: stock's rows, in its order
        assert got_stock_files.equals(ref)
    finally:
        rp.restore()
        shutil.rmtree(root, ignore_errors=True)
    res["scale"] = scale
    return res


def table_md(res, rows, stock_rows, pk_rows, repeats):
    s = res["scale"]

    def ms(x):
        return f"{x * 1000:,.0f} ms" if x < 10 else f"{x:,.1f} s"
    aw_s, as_s = res["append_write_stock"] * s, res["append_scan_stock"] * s
    scaled = " (scaled)" if s != 1 else ""
    lines = [
        f"pypaimon 2.1.0, `file.format=row`, `benchmarks/dataset.py` rows (10 columns); "
        f"medians of {repeats} runs; stock append runs at {stock_rows:,} rows scaled x{s:g} "
        f"to {rows:,}; primary-key table at {pk_rows:,} rows in both modes.",
        "",
        "| table | operation | stock pypaimon | `accelerate()` | speed-up | reference |",
        "|---|---|---:|---:|---:|---|",
        f"| append, {rows:,} rows | write+commit | {ms(aw_s)}{scaled} | "
        f"{ms(res['append_write_fast'])} | {aw_s / res['append_write_fast']:.0f}x | "
        f"Parquet table (stock): {ms(res['parquet_write'])} |",
        f"| append, {rows:,} rows | full scan | {ms(as_s)}{scaled} | "
        f"{ms(res['append_scan_fast'])} | {as_s / res['append_scan_fast']:.0f}x | "
        f"Parquet table (stock): {ms(res['parquet_scan'])}; `RowFileReader.read()` of the same "
        f"files: {ms(res['append_scan_raw'])} ({res['append_scan_fast'] / res['append_scan_raw']:.2f}x of it) |",
        f"| primary key, 4 buckets, {pk_rows:,} rows + updates of every 10th key | write+commit x2 | "
        f"{ms(res['pk_write_stock'])} | {ms(res['pk_write_fast'])} | "
        f"{res['pk_write_stock'] / res['pk_write_fast']:.1f}x | |",
        f"| primary key, 4 buckets, {pk_rows:,} rows | merged full scan | "
        f"{ms(res['pk_scan_stock'])} | {ms(res['pk_scan_fast'])} | "
        f"{res['pk_scan_stock'] / res['pk_scan_fast']:.0f}x | |",
    ]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--stock-rows", type=int, default=200_000)
    ap.add_argument("--pk-rows", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="also write the Markdown table to this file")
    a = ap.parse_args(argv)
    stock_rows = min(a.stock_rows, a.rows)
    pk_rows = min(a.pk_rows, a.rows)
    res = run(a.rows, stock_rows, pk_rows, a.repeats)
    md = table_md(res, a.rows, stock_rows, pk_rows, a.repeats)
    print(md)
    if a.out:
        pathlib.Path(a.out).write_text(
            "# pypaimon tables at rowformat speed\n\n"
            "`.venv/bin/python benchmarks/paimon_tables.py "
            f"--rows {a.rows} --stock-rows {stock_rows} --pk-rows {pk_rows} --repeats {a.repeats}`"
            f" on {os.cpu_count()} cores.\n\n" + md + "\n")


if __name__ == "__main__":
    main()
