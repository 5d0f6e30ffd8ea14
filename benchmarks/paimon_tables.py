"""pypaimon tables with file.format=row: stock pypaimon 2.1.0 against
``rowformat.paimon.accelerate()``, and against pypaimon-rust, side by side in one run.

    .venv/bin/python benchmarks/paimon_tables.py [--rows 1000000] [--stock-rows 200000]
        [--pk-rows 200000] [--repeats 3] [--rust-repeats N] [--lookups 1000] [--no-rust]
        [--out benchmarks/results-paimon.md]

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
* pypaimon-rust (when installed; ``--no-rust`` skips it), on the accelerated
  append table's files: a full scan and a scan of two columns (``id``,
  ``name``) through pypaimon-rust's own ``TableRead`` (its catalog on the same
  warehouse), its DataFusion SQL, and stock pypaimon with
  ``read.native.enabled=true`` (acceleration off: under ``accelerate()`` that
  option keeps ``.row`` files on rowformat), against ``accelerate()`` and
  ``RowFileReader.read()`` of the same files; ``--lookups`` random rows by
  ``_ROW_ID`` (sorted, distinct) of an append table with
  ``row-tracking.enabled`` and ``data-evolution.enabled`` (pypaimon's row
  ranges need both): pypaimon-rust's ``with_row_ranges`` and SQL
  ``WHERE "_ROW_ID" IN (...)``, stock pypaimon's row ranges with
  ``read.native.enabled``, against ``RowIdRouter`` + ``RowFileReader.take``
  (planned, routed and opened per call; and with the router and readers kept,
  as ``rowformat.spark.lookup_row_ids``' workers keep them, but without a
  block cache, as every round asks for the same rows) and accelerated
  pypaimon's row ranges; a write+commit of ``--rows`` rows through
  pypaimon-rust's ``BatchWriteBuilder`` (pypaimon's ``write.native.enabled``
  is for Parquet tables only) against ``accelerate()``'s. These operations run
  in ``--rust-repeats`` (default ``--repeats``) interleaved rounds (every
  reader once per round, the order rotating), timed in wall and CPU seconds;
  every reader's rows are checked equal to the data written before timing.

Each cell is the median of ``--repeats`` runs (fresh table per write run).
"""
from __future__ import annotations

import argparse
import datetime
import glob
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dataset import generate  # noqa: E402

import rowformat  # noqa: E402
import rowformat.paimon as rp  # noqa: E402
from rowformat.paimon import _field_types  # noqa: E402
from rowformat.paimon import tables as tb  # noqa: E402

PROJECTION = ["id", "name"]     # the two-column scan: a fixed-width and a string column
ROW_ID = "_ROW_ID"


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

    def create(self, schema, fmt="row", pk=False, options=None):
        from pypaimon import Schema
        self.count += 1
        name = f"db.t{self.count}"
        opts = {"file.format": fmt, **(options or {})}
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

    def rounds(self, fns, setups=None):
        """``fns`` (name -> function) interleaved: each round calls every
        one once, starting one further along the list each round, so that
        load that comes and goes falls on all of them alike. Returns
        {name: median seconds}, {name: median CPU seconds of this process
        (all its threads: pypaimon-rust's and rowformat's too)}."""
        setups = setups or {}
        names = list(fns)
        wall = {n: [] for n in names}
        cpu = {n: [] for n in names}
        for r in range(self.repeats):
            for n in names[r % len(names):] + names[:r % len(names)]:
                arg = setups[n]() if n in setups else None
                c0, t0 = time.process_time(), time.perf_counter()
                fns[n](arg) if n in setups else fns[n]()
                wall[n].append(time.perf_counter() - t0)
                cpu[n].append(time.process_time() - c0)
        return ({n: statistics.median(t) for n, t in wall.items()},
                {n: statistics.median(t) for n, t in cpu.items()})


# ---------------------------------------------------------------- pypaimon-rust

def rust_available() -> bool:
    try:
        from pypaimon_rust.datafusion import PaimonCatalog, SQLContext  # noqa: F401
    except ImportError:
        return False
    return True


class Rust:
    """pypaimon-rust on the benchmark's warehouse: its own catalog, tables,
    reads and writes (no pypaimon in between), and its DataFusion SQL."""

    def __init__(self, root):
        from pypaimon_rust.datafusion import PaimonCatalog, SQLContext
        self.cat = PaimonCatalog({"warehouse": root})
        self.sql_ctx = SQLContext()
        self.sql_ctx.register_catalog("paimon", {"warehouse": root}, "db")
        self.tables = {}

    def table(self, name):
        """The table, looked up once (as the pypaimon tables of the comparison)."""
        if name not in self.tables:
            self.tables[name] = self.cat.get_table(name)
        return self.tables[name]

    def scan(self, name, columns=None, row_ranges=None):
        """TableRead.read of the table's splits (planned by pypaimon-rust)."""
        rb = self.table(name).new_read_builder()
        if columns is not None:
            rb = rb.with_projection(columns)
        if row_ranges is not None:
            rb = rb.with_row_ranges(row_ranges)
        return pa.Table.from_batches(rb.new_read().read(rb.new_scan().plan().splits()))

    def sql(self, query):
        return pa.Table.from_batches(self.sql_ctx.sql(query))

    def write(self, name, data):
        wb = self.table(name).new_batch_write_builder()
        w = wb.new_write()
        for batch in data.to_batches():
            w.write_arrow(batch)
        c = wb.new_commit()
        c.commit(w.prepare_commit())
        w.close()
        c.close()


def _sql_columns(columns):
    return ", ".join(f'"{c}"' for c in columns)


class NativeCalls:
    """Counts pypaimon's reads that reach pypaimon-rust under
    ``read.native.enabled`` (an unsupported route falls back to the Python
    reader silently: the benchmark asserts it did not)."""

    def __init__(self):
        from pypaimon.read import native_plan
        self.module = native_plan
        self.stock = native_plan._prepare_native_read
        self.calls = 0

        def counted(*args, **kwargs):
            self.calls += 1
            return self.stock(*args, **kwargs)
        native_plan._prepare_native_read = counted

    def close(self):
        self.module._prepare_native_read = self.stock


def same_rows(got, want, key="id"):
    """``got`` holds ``want``'s rows: same columns, types (nullability and
    field metadata aside) and values, in the same order or, failing that,
    after sorting both by ``key``."""
    assert got.column_names == want.column_names, (got.column_names, want.column_names)
    assert got.schema.types == want.schema.types, (got.schema, want.schema)
    assert got.num_rows == want.num_rows, (got.num_rows, want.num_rows)
    got = got.cast(want.schema)
    if got.equals(want):
        return True
    if key in want.column_names:
        order = [(key, "ascending")]
        return got.sort_by(order).equals(want.sort_by(order))
    return False


def against_rust(b, full, fast_tbl, lookups, repeats):
    """pypaimon-rust's readers and writer against rowformat's, in
    ``repeats`` interleaved rounds; every reader's rows checked before any timing."""
    from pypaimon.utils.range import Range
    res = {}
    rust = Rust(b.root)
    native = NativeCalls()
    b.repeats, repeats = repeats, b.repeats
    try:
        table = b.table(fast_tbl)
        native_table = table.copy({"read.native.enabled": "true"})
        schema = _field_types.row_type(table.fields)
        files = b.files(fast_tbl)
        short = fast_tbl.split(".")[1]

        def py_scan(t, columns=None):
            rb = t.new_read_builder()
            if columns is not None:
                rb = rb.with_projection(columns)
            return rb.new_read().to_arrow(rb.new_scan().plan().splits())

        def fast(columns=None):
            with rp.accelerated():
                return py_scan(table, columns)

        def stock_native(t, read):
            def run(*args):
                assert not rp.is_accelerated()     # under accelerate() .row stays on rowformat
                before = native.calls
                out = read(t, *args)
                assert native.calls > before, "read.native.enabled fell back to Python"
                return out
            return run

        def raw(columns=None):
            return pa.concat_tables(rowformat.RowFileReader(f, schema).read(columns)
                                    for f in files)
        native_scan = stock_native(native_table, py_scan)
        for op, columns in (("scan", None), ("proj", PROJECTION)):
            want = full if columns is None else full.select(columns)
            cols = columns or full.column_names
            fns = {
                "fast": lambda c=columns: fast(c),
                "raw": lambda c=columns: raw(c),
                "rust": lambda c=columns: rust.scan(fast_tbl, c),
                "rust_sql": lambda c=cols: rust.sql(f"SELECT {_sql_columns(c)} FROM {short}"),
                "native": lambda c=columns: native_scan(c),
            }
            for name, fn in fns.items():
                assert same_rows(fn(), want), f"{op}: {name} returned other rows"
            medians, cpu = b.rounds(fns)
            res.update({f"{op}_{k}": v for k, v in medians.items()})
            res.update({f"cpu_{op}_{k}": v for k, v in cpu.items()})

        # -- rows by _ROW_ID ------------------------------------------------------------
        rid_opts = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
        rid_tbl = b.create(full.schema, options=rid_opts)
        with rp.accelerated():
            b.write(rid_tbl, full)
        rid_table = b.table(rid_tbl)
        rid_native = rid_table.copy({"read.native.enabled": "true"})
        rid_path = os.path.join(b.root, "db.db", rid_tbl.split(".")[1])
        rows = full.num_rows
        ids = np.sort(np.random.default_rng(7).choice(rows, min(lookups, rows), replace=False))
        id_list = [int(i) for i in ids]
        ranges = Range.to_ranges(id_list)
        cols = full.column_names + [ROW_ID]
        want = full.take(pa.array(ids)).append_column(ROW_ID, pa.array(ids, pa.int64()))

        def py_rows(t):
            rb = t.new_read_builder().with_projection(cols)
            splits = rb.new_scan().with_row_ranges(ranges).plan().splits()
            return rb.new_read().to_arrow(splits)

        def fast_rows():
            with rp.accelerated():
                return py_rows(rid_table)

        def router_rows(router, open_reader):
            paths, numbers = router.route(pa.array(ids, pa.int64()))
            paths = paths.to_pylist()
            numbers = numbers.to_numpy()
            parts, start = [], 0
            for i in range(1, len(paths) + 1):     # ids are sorted: one run per file
                if i == len(paths) or paths[i] != paths[start]:
                    parts.append(open_reader(paths[start]).take(numbers[start:i]))
                    start = i
            return pa.concat_tables(parts).append_column(ROW_ID, pa.array(ids, pa.int64()))

        def router_cold():
            router = tb.RowIdRouter.from_table(rid_table, rid_path)
            readers = []

            def open_reader(path):
                readers.append(rowformat.RowFileReader(path, schema))
                return readers[-1]
            try:
                return router_rows(router, open_reader)
            finally:
                for r in readers:
                    r.close()

        # kept: planned and opened once; without a block cache, as every round
        # asks for the same rows
        kept_router = tb.RowIdRouter.from_table(rid_table, rid_path)
        kept_readers = {}

        def router_warm():
            def open_reader(path):
                if path not in kept_readers:
                    kept_readers[path] = rowformat.RowFileReader(path, schema, cache_bytes=0)
                return kept_readers[path]
            return router_rows(kept_router, open_reader)

        in_list = ", ".join(map(str, id_list))
        rid_short = rid_tbl.split(".")[1]
        fns = {
            "router": router_cold,
            "router_warm": router_warm,
            "fast": fast_rows,
            "rust": lambda: rust.scan(rid_tbl, cols, [(r.from_, r.to) for r in ranges]),
            "rust_sql": lambda: rust.sql(f'SELECT {_sql_columns(cols)} FROM {rid_short} '
                                         f'WHERE "{ROW_ID}" IN ({in_list})'),
            "native": lambda: stock_native(rid_native, py_rows)(),
        }
        for name, fn in fns.items():
            assert same_rows(fn(), want, ROW_ID), f"rows by {ROW_ID}: {name} returned other rows"
        medians, cpu = b.rounds(fns)
        res.update({f"rowid_{k}": v for k, v in medians.items()})
        res.update({f"cpu_rowid_{k}": v for k, v in cpu.items()})
        for r in kept_readers.values():
            r.close()

        # -- write+commit ---------------------------------------------------------------
        def fast_write(name):
            with rp.accelerated():
                b.write(name, full)
        new = {"fast": lambda: b.create(full.schema), "rust": lambda: b.create(full.schema)}
        medians, cpu = b.rounds({"fast": fast_write, "rust": lambda n: rust.write(n, full)}, new)
        res.update({f"write_{k}": v for k, v in medians.items()})
        res.update({f"cpu_write_{k}": v for k, v in cpu.items()})
        written = b.create(full.schema)
        rust.write(written, full)
        with rp.accelerated():
            assert same_rows(b.scan(written), full), "pypaimon-rust's write reads back other rows"
        res["rust_files"] = len(b.files(written))
    finally:
        native.close()
        b.repeats = repeats
    res["files"] = len(files)
    res["lookups"] = len(ids)
    return res


def _updates(data):
    """Every 10th key again, with a negated score."""
    ids = data.column("id").to_numpy()
    upd = data.filter(pa.array(ids % 10 == 0))
    return upd.set_column(upd.schema.get_field_index("score"), "score",
                          pc.negate(upd.column("score")))


def run(rows, stock_rows, pk_rows, repeats, rust=False, lookups=1000, rust_repeats=None):
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
        schema = _field_types.row_type(b.table(fast_tbl).fields)
        files = b.files(fast_tbl)

        def raw():
            return sum(rowformat.RowFileReader(f, schema).read().num_rows for f in files)
        res["append_scan_raw"], n = b.timed(raw)
        assert n == rows
        if rust:
            res["rust"] = against_rust(b, full, fast_tbl, lookups, rust_repeats or repeats)
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
        "",
        "| target (`accelerate()` against stock pypaimon) | measured | |",
        "|---|---:|---|",
    ]
    for what, ratio, bound in (("append write+commit >= 20x", aw_s / res["append_write_fast"], 20),
                               ("append full scan >= 50x", as_s / res["append_scan_fast"], 50),
                               ("primary-key merged scan >= 5x",
                                res["pk_scan_stock"] / res["pk_scan_fast"], 5)):
        lines.append(f"| {what} | {ratio:.0f}x | {_verdict(ratio >= bound)} |")
    return "\n".join(lines)


def _verdict(ok):
    return "met" if ok else "**missed**"


def rust_md(r, rows):
    """The pypaimon-rust tables (wall and CPU medians of interleaved rounds)
    and the targets of issue 23, judged on wall time."""
    def ms(x):
        return f"{x * 1000:,.1f} ms" if x < 0.1 else f"{x * 1000:,.0f} ms"

    def table(p):       # p: "" for wall times, "cpu_" for CPU times
        out = [
            "| operation | `accelerate()` | rowformat alone | pypaimon-rust `TableRead` | "
            "pypaimon-rust SQL | stock pypaimon, `read.native.enabled` | fastest "
            "pypaimon-rust / `accelerate()` | `accelerate()` / rowformat alone |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for op, what, alone in OPS:
            g = {k: r[f"{p}{op}_{k}"] for k in ("fast", "raw", "rust", "rust_sql", "native")}
            best = min(g["rust"], g["rust_sql"], g["native"])
            out.append(f"| {what} | {ms(g['fast'])} | {ms(g['raw'])} ({alone}) | "
                       f"{ms(g['rust'])} | {ms(g['rust_sql'])} | {ms(g['native'])} | "
                       f"{best / g['fast']:.1f}x | {g['fast'] / g['raw']:.2f}x |")
        g = {k: r[f"{p}rowid_{k}"] for k in ("fast", "router", "router_warm", "rust", "rust_sql",
                                             "native")}
        best = min(g["rust"], g["rust_sql"], g["native"])
        out.append(f"| {r['lookups']:,} random rows by `_ROW_ID` (all columns) | {ms(g['fast'])} "
                   f"(row ranges) | {ms(g['router'])} (`RowIdRouter` + `take`, per call); "
                   f"{ms(g['router_warm'])} (router and readers kept, no block cache) | "
                   f"{ms(g['rust'])} "
                   f"(`with_row_ranges`) | {ms(g['rust_sql'])} (`WHERE _ROW_ID IN`) | "
                   f"{ms(g['native'])} (row ranges) | {best / g['fast']:.1f}x; "
                   f"{best / g['router']:.1f}x of `RowIdRouter` + `take` | "
                   f"{g['fast'] / g['router']:.2f}x |")
        fast, rust = r[f"{p}write_fast"], r[f"{p}write_rust"]
        out.append(f"| write+commit, {rows:,} rows | {ms(fast)} | | {ms(rust)} "
                   f"(`BatchWriteBuilder`) | | | {rust / fast:.1f}x | |")
        return out

    OPS = (("scan", f"full scan, {rows:,} rows", "`RowFileReader.read()`"),
           ("proj", f"scan of 2 columns ({', '.join(PROJECTION)})",
            "`RowFileReader.read(columns)`"))
    checks = []
    for op, what, alone in OPS:
        best = {p: min(r[f"{p}{op}_rust"], r[f"{p}{op}_rust_sql"], r[f"{p}{op}_native"])
                for p in ("", "cpu_")}
        fast = {p: r[f"{p}{op}_fast"] for p in ("", "cpu_")}
        raw = {p: r[f"{p}{op}_raw"] for p in ("", "cpu_")}
        checks.append((f"{what}: >= 2x faster than pypaimon-rust's fastest path",
                       best[""] / fast[""], best["cpu_"] / fast["cpu_"], ">=", 2))
        checks.append((f"{what}: within 1.1x of {alone} of the same files",
                       fast[""] / raw[""], fast["cpu_"] / raw["cpu_"], "<=", 1.1))
    for key, what in (("router", "`RowIdRouter` + `take` (per call)"),
                      ("fast", "accelerated pypaimon's row ranges")):
        ratio = {p: min(r[f"{p}rowid_rust"], r[f"{p}rowid_rust_sql"], r[f"{p}rowid_native"])
                 / r[f"{p}rowid_{key}"] for p in ("", "cpu_")}
        checks.append((f"{r['lookups']:,} rows by `_ROW_ID`: {what} >= 2x faster than "
                       f"pypaimon-rust", ratio[""], ratio["cpu_"], ">=", 2))
    lines = ["Wall time:", ""] + table("") + [
        "", "CPU time of the process (all threads; medians of the same rounds):", ""] + \
        table("cpu_") + ["", "| target | wall | CPU | |", "|---|---:|---:|---|"]
    for what, wall, cpu, op, bound in checks:
        ok = wall >= bound if op == ">=" else wall <= bound
        lines.append(f"| {what} | {wall:.2f}x | {cpu:.2f}x | {_verdict(ok)} |")
    return "\n".join(lines)


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version
    out = []
    for pkg in ("pypaimon", "pypaimon-rust", "pyarrow", "rowformat"):
        try:
            out.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            out.append(f"{pkg} not installed")
    return ", ".join(out)


def commit() -> str:
    def git(*args):
        return subprocess.run(["git", "-C", str(HERE.parent), *args], capture_output=True,
                              text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" (uncommitted changes)" if git("status", "--porcelain", "--", "rowformat",
                                                   "src", "benchmarks") else "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--stock-rows", type=int, default=200_000)
    ap.add_argument("--pk-rows", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rust-repeats", type=int,
                    help="rounds of the pypaimon-rust comparison (default: --repeats)")
    ap.add_argument("--lookups", type=int, default=1000,
                    help="random rows by _ROW_ID in the pypaimon-rust comparison")
    ap.add_argument("--no-rust", action="store_true",
                    help="skip the pypaimon-rust comparison (also skipped when not installed)")
    ap.add_argument("--out", help="also write the Markdown table to this file")
    a = ap.parse_args(argv)
    stock_rows = min(a.stock_rows, a.rows)
    pk_rows = min(a.pk_rows, a.rows)
    rust = not a.no_rust and rust_available()
    load_before = os.getloadavg()
    rust_repeats = a.rust_repeats or a.repeats
    res = run(a.rows, stock_rows, pk_rows, a.repeats, rust, a.lookups, rust_repeats)
    load_after = os.getloadavg()
    md = table_md(res, a.rows, stock_rows, pk_rows, a.repeats)
    if rust:
        md += ("\n\n### Against pypaimon-rust\n\n"
               f"Medians of {rust_repeats} interleaved rounds on the append table `accelerate()` "
               f"wrote above ({res['rust']['files']} data file(s)), read by every reader; "
               f"`_ROW_ID` rows from a copy with `row-tracking.enabled` and "
               f"`data-evolution.enabled`. Every reader's rows were checked equal to the data "
               f"written. \"rowformat alone\": rowformat's own API on the table's files, "
               f"without pypaimon.\n\n" + rust_md(res["rust"], a.rows))
    md += (f"\n\nLoad average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; "
           f"after: {', '.join(f'{x:.2f}' for x in load_after)}. Versions: {versions()}.")
    print(md)
    if a.out:
        pathlib.Path(a.out).write_text(
            "# pypaimon tables at rowformat speed\n\n"
            "`.venv/bin/python benchmarks/paimon_tables.py "
            f"--rows {a.rows} --stock-rows {stock_rows} --pk-rows {pk_rows} --repeats {a.repeats}"
            f"{f' --rust-repeats {rust_repeats} --lookups {a.lookups}' if rust else ' --no-rust'}`"
            f" on {os.cpu_count()} cores, at {commit()} ({datetime.date.today()}).\n\n" + md + "\n")


if __name__ == "__main__":
    main()
