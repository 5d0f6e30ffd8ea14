"""Object storage: the benchmark dataset in an S3 bucket, every request a
round trip away; what each format's reads cost in requests, bytes and time.

    .venv/bin/python benchmarks/object_store.py [--rows 1000000] [--latency-ms 20]
        [--repeats 5] [--stock-repeats 1] [--seed 7] [--no-paimon]
        [--out benchmarks/results-object-store.md]
    .venv/bin/python benchmarks/object_store.py --smoke     # = --rows 2000 --repeats 1, ~15 s

The default run takes about 5 minutes on 2 cores (2.5 of them stock
pypaimon's one table scan).

The store is moto's S3 server (``tests/_s3server.py``) in a child process,
its requests logged, with its ``fast_ranges`` on (a ranged GET reads only its
range, as S3 does; moto alone reads the whole object each time). Readers reach
it through a ``LatencyProxy`` that holds each request ``--latency-ms`` before
forwarding it; writes go to the server directly and are not measured.

The data is ``dataset.py``'s ``generate(rows)`` (10 columns), written once as
a ``.row`` file (``RowFileWriter`` defaults: 64 KiB blocks, zstd), a Parquet
file (zstd level 1, row groups of 10,000 rows, page index: ``peers.Parquet``'s
settings), a Lance dataset (``lance.write_dataset`` defaults; left out, saying
why, when ``lance`` does not import or cannot reach the server) and a Paimon
table (pypaimon, ``file.format=row``, warehouse in the bucket, written by
``rowformat.paimon.accelerated()``).

For each format: open; ``get`` of one row; ``take`` of 100 and of 1,000
random rows (seeded, distinct, in random order); a full scan; a scan of two
columns (``id``, ``name``). Every operation but open runs on a reader just
opened (opening not counted), so it pays what the format loads lazily (Lance:
its data file's metadata), and no cache of an earlier run helps it
(rowformat's block cache is off, ``cache_bytes=0``). Requests and bytes (the
response bodies) are what the server logged for the operation; times are the
median of ``--repeats`` runs, requests and bytes their medians too (the same
rows each run). Parquet's ``get``/``take``: ``ParquetFile(pre_buffer=True)``
reading the row groups that hold the rows (then slicing), and
``pyarrow.dataset``'s ``take``; its scans: ``ParquetFile.read()`` (all columns in
one coalesced read) and ``pq.read_table(columns=...)`` (row groups read in
parallel), the faster pyarrow way for each. For rowformat's ``get``/``take`` the touched
blocks' compressed sizes (``read_metadata()``'s block index) are shown, and
bytes read / touched.

The Paimon table: ``catalog.get_table`` + plan + ``to_arrow`` of every split,
stock pypaimon (``--stock-repeats`` runs: it is slow), ``accelerated()``, and
stock pypaimon with ``read.native.enabled`` (pypaimon-rust's reader; reported
as not reached when the read fell back to Python or failed).
"""
from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import statistics
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# tests/_s3server.py, appended: tests/ holds packages (paimon, spark, ...) that must not shadow others
sys.path.append(str(HERE.parent / "tests"))

from _s3server import ACCESS_KEY, REGION, SECRET_KEY, LatencyProxy, S3ServerProcess  # noqa: E402
from dataset import SCHEMA_TEXT, generate  # noqa: E402
from peers import CHUNK_ROWS  # noqa: E402

import rowformat  # noqa: E402

BUCKET = "bench"
KEYS = {"row": "data.row", "parquet": "data.parquet", "lance": "data.lance", "warehouse": "wh"}
PROJECTION = ["id", "name"]
TAKES = (100, 1000)
OBJECTS = {"row": "`.row` file", "parquet": "Parquet file", "lance": "Lance dataset",
           "warehouse": "the Paimon table's data files"}


def lance_options(endpoint: str) -> dict:
    """Lance's (object_store's) storage options for the S3 server at ``endpoint``."""
    return {"aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY,
            "aws_region": REGION, "aws_endpoint": endpoint, "allow_http": "true"}


@dataclass
class Cell:
    """One operation's medians: wall time, requests, response bytes."""
    seconds: float
    requests: float
    bytes: float
    methods: dict = field(default_factory=dict)     # requests by method, of the first run
    touched: int | None = None                      # compressed bytes of the touched blocks
    touched_blocks: int | None = None


class Meter:
    """Runs an operation ``repeats`` times against the logged server."""

    def __init__(self, server, repeats: int):
        self.server = server
        self.repeats = repeats

    def run(self, fn, setup=None, check=None, repeats=None) -> Cell:
        """``fn(setup())`` timed (``fn()`` without ``setup``), the server's log
        of it counted; then, untimed, ``check(result, arg, first)`` (which checks
        the first run's result and closes the reader)."""
        times, reqs, sent, methods = [], [], [], None
        for k in range(repeats or self.repeats):
            arg = setup() if setup else None
            self.server.clear_log()
            t0 = time.perf_counter()
            out = fn(arg) if setup else fn()
            times.append(time.perf_counter() - t0)
            log = self.server.log()
            reqs.append(len(log))
            sent.append(sum(r.sent for r in log))
            if methods is None:
                methods = dict(Counter(r.method for r in log))
            if check is not None:
                check(out, arg, first=k == 0)
            del out
        return Cell(statistics.median(times), statistics.median(reqs), statistics.median(sent), methods)


def _close(obj) -> None:
    close = getattr(obj, "close", None)
    if close is not None:
        close()


# ---------------------------------------------------------------- the formats

class RowFormat:
    name = "rowformat `.row`"

    def __init__(self, url, options):
        self.url, self.options = url, options
        self.schema = rowformat.schema(SCHEMA_TEXT)

    def open(self):
        return rowformat.RowFileReader(self.url, self.schema, storage_options=self.options, cache_bytes=0)

    def get(self, r, i):
        return r.get(i)

    def got_id(self, out):
        return out[0]

    def take(self, r, rows):
        return r.take(rows)

    def scan(self, r, columns=None):
        return r.read(columns=columns) if columns else r.read()


class Parquet:
    """``ParquetFile(pre_buffer=True)``: the row groups holding the rows."""
    name = "Parquet (row groups)"

    def __init__(self, fs, path):
        self.fs, self.path = fs, path

    def open(self):
        pf = pq.ParquetFile(self.fs.open_input_file(self.path), pre_buffer=True)
        md = pf.metadata
        pf.starts = np.cumsum([0] + [md.row_group(g).num_rows for g in range(md.num_row_groups)])
        return pf

    def get(self, pf, i):
        g = int(np.searchsorted(pf.starts, i, side="right")) - 1
        return pf.read_row_group(g).slice(int(i - pf.starts[g]), 1)

    def got_id(self, out):
        return out.column("id")[0].as_py()

    def take(self, pf, rows):
        starts = pf.starts
        groups = np.searchsorted(starts, rows, side="right") - 1
        needed = np.unique(groups)
        t = pf.read_row_groups(needed.tolist())
        base = np.cumsum(np.concatenate(([0], starts[needed + 1] - starts[needed])))[:-1]
        return t.take(pa.array(rows - starts[groups] + base[np.searchsorted(needed, groups)]))

    def scan(self, pf, columns=None):
        # the faster pyarrow way for each (measured): all columns in one coalesced read
        # (pre_buffer); a few columns through pyarrow.dataset, row groups in parallel
        if columns:
            return pq.read_table(self.path, filesystem=self.fs, columns=columns)
        return pf.read()


class ParquetDataset(Parquet):
    """``pyarrow.dataset``'s ``take`` (get and take only)."""
    name = "Parquet (`pyarrow.dataset` take)"

    def open(self):
        import pyarrow.dataset as pads
        return pads.dataset(self.path, filesystem=self.fs, format="parquet")

    def get(self, ds, i):
        return ds.take(pa.array([i]))

    def take(self, ds, rows):
        return ds.take(pa.array(rows))

    scan = None


class Lance:
    name = "Lance"

    def __init__(self, url, options):
        import lance
        self.lance, self.url, self.options = lance, url, options

    def open(self):
        return self.lance.dataset(self.url, storage_options=self.options)

    def get(self, ds, i):
        return ds.take([int(i)])

    def got_id(self, out):
        return out.column("id")[0].as_py()

    def take(self, ds, rows):
        return ds.take(rows.tolist())

    def scan(self, ds, columns=None):
        return ds.to_table(columns=columns) if columns else ds.to_table()


# ---------------------------------------------------------------- the run

def write_all(table: pa.Table, server, res: dict) -> None:
    """The dataset into the bucket, straight to the server (not measured)."""
    direct = server.storage_options()
    fs = pafs.S3FileSystem(**direct)
    url = f"s3://{BUCKET}/{KEYS['row']}"
    with rowformat.RowFileWriter(url, rowformat.schema(SCHEMA_TEXT), storage_options=direct) as w:
        w.write(table)
    pq.write_table(table, f"{BUCKET}/{KEYS['parquet']}", filesystem=fs, compression="zstd",
                   compression_level=1, row_group_size=CHUNK_ROWS, write_page_index=True)
    try:
        import lance
        lance.write_dataset(table, f"s3://{BUCKET}/{KEYS['lance']}", mode="create",
                            storage_options=lance_options(server.endpoint))
    except Exception as e:          # noqa: BLE001 - reported, and the run goes on
        res["lance_why"] = f"{type(e).__name__}: {str(e)[:300]}"
    res["sizes"] = {name: fs.get_file_info(f"{BUCKET}/{KEYS[name]}").size for name in ("row", "parquet")}
    if not res.get("lance_why"):
        res["sizes"]["lance"] = _tree_size(fs, KEYS["lance"])


def _tree_size(fs, prefix: str, suffix: str = "") -> int:
    """Bytes of the objects under ``prefix`` (whose names end in ``suffix``)."""
    return sum(i.size for i in fs.get_file_info(pafs.FileSelector(f"{BUCKET}/{prefix}", recursive=True))
               if i.type == pafs.FileType.File and i.path.endswith(suffix))


def _check_rows(ids, rows, what):
    if not np.array_equal(np.asarray(ids), np.asarray(rows)):
        raise AssertionError(f"{what}: wrong rows")


def measure_formats(meter: Meter, formats: list, n: int, seed: int, index) -> dict:
    rng = np.random.default_rng(seed)
    row = int(rng.integers(n))
    takes = {k: rng.choice(n, min(k, n), replace=False).astype(np.int64) for k in TAKES}
    out = {}

    def touched(rows):
        blocks = np.unique(np.searchsorted(index.row_starts, rows, side="right") - 1)
        return len(blocks), int(np.asarray(index.compressed_sizes)[blocks].sum())

    for f in formats:
        cells = out[f.name] = {}
        print(f"  {f.name}", file=sys.stderr, flush=True)
        try:
            if f.scan is not None:
                cells["open"] = meter.run(f.open, check=lambda r, _, first: _close(r))

            def done(check):
                def run(result, reader, first):
                    if first:
                        check(result)
                    _close(reader)
                return run
            cells["get"] = meter.run(lambda r: f.get(r, row), f.open, done(
                lambda o: _check_rows([f.got_id(o)], [row], f"{f.name} get")))
            for k, rows in takes.items():
                cells[f"take({k})"] = meter.run(lambda r, rows=rows: f.take(r, rows), f.open, done(
                    lambda o, rows=rows, k=k: _check_rows(o.column("id"), rows, f"{f.name} take({k})")))
            if f.scan is not None:
                cells["scan"] = meter.run(lambda r: f.scan(r), f.open, done(
                    lambda o: _check_rows(o.column("id"), np.arange(n), f"{f.name} scan")))
                cells["scan 2 columns"] = meter.run(lambda r: f.scan(r, PROJECTION), f.open, done(
                    lambda o: _check_rows(o.column("id") if o.column_names == PROJECTION else [],
                                          np.arange(n), f"{f.name} scan 2 columns")))
        except Exception as e:      # noqa: BLE001 - reported, the other formats go on
            traceback.print_exc()
            cells["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        if isinstance(f, RowFormat) and index is not None:
            for op, rows in [("get", np.array([row]))] + [(f"take({k})", r) for k, r in takes.items()]:
                if op in cells:
                    cells[op].touched_blocks, cells[op].touched = touched(rows)
    return out


def measure_paimon(meter: Meter, server, proxy, table: pa.Table, stock_repeats: int) -> dict:
    """The Paimon table: written through the server (accelerated), scanned through the proxy."""
    from pypaimon import CatalogFactory, Schema

    import rowformat.paimon as rp
    warehouse = f"s3://{BUCKET}/{KEYS['warehouse']}"
    writer = CatalogFactory.create({"warehouse": warehouse, **server.catalog_options()})
    writer.create_database("db", True)
    writer.create_table("db.t", Schema.from_pyarrow_schema(table.schema, options={"file.format": "row"}),
                        True)
    with rp.accelerated():
        wb = writer.get_table("db.t").new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(table)
        c.commit(w.prepare_commit())
        w.close()
        c.close()
    reader = CatalogFactory.create({"warehouse": warehouse, **proxy.catalog_options()})
    n = table.num_rows

    def scan(options=None):
        t = reader.get_table("db.t")
        if options:
            t = t.copy(options)
        rb = t.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    def check(out, _arg, first):
        if first:
            _check_rows(np.sort(out.column("id").to_numpy()), np.arange(n), "Paimon scan")

    res = {}
    for name, run in [
            ("stock pypaimon", lambda: meter.run(scan, check=check, repeats=stock_repeats)),
            ("`accelerated()`", lambda: _accelerated(meter, rp, scan, check)),
            ("stock pypaimon, `read.native.enabled` (pypaimon-rust)", lambda: _native(meter, scan, check))]:
        print(f"  Paimon: {name}", file=sys.stderr, flush=True)
        try:
            res[name] = run()
        except Exception as e:      # noqa: BLE001 - reported, the others go on
            traceback.print_exc()
            res[name] = f"{type(e).__name__}: {str(e)[:300]}"
    return res


def _accelerated(meter, rp, scan, check):
    with rp.accelerated():
        return meter.run(scan, check=check)


def _native(meter, scan, check):
    from paimon_tables import NativeCalls
    native = NativeCalls()
    try:
        cell = meter.run(lambda: scan({"read.native.enabled": "true"}), check=check)
    finally:
        native.close()
    if not native.calls:
        return "not reached: pypaimon read the files in Python (read.native.enabled fell back)"
    return cell


# ---------------------------------------------------------------- the report

def _mb(x):
    return f"{x / 1e6:,.2f}" if x >= 1e5 else f"{x / 1e6:,.4f}"


def _row(op, name, c):
    if isinstance(c, str):
        return f"| {op} | {name} | | | | {c} |"
    touched = (f"{c.touched_blocks:,} blocks, {_mb(c.touched)} MB; read / touched "
               f"{c.bytes / c.touched:.2f}x" if c.touched else "")
    methods = ", ".join(f"{m} {k:,}" for m, k in sorted(c.methods.items()))
    return (f"| {op} | {name} | {c.requests:,.0f} ({methods}) | {_mb(c.bytes)} | "
            f"{c.seconds * 1e3:,.1f} | {touched} |")


def markdown(res: dict, a, machine: dict, load_after) -> str:
    from compare import library_commit, machine_line, package_version
    from paimon_tables import versions
    sizes = res["sizes"]
    lines = [f"{a.rows:,} rows of `benchmarks/dataset.py` (10 columns); every request held "
             f"{a.latency_ms:g} ms by the proxy; medians of {a.repeats} run(s) (stock pypaimon: "
             f"{min(a.stock_repeats, a.repeats)}); each operation on a reader just opened; MB = 10^6 "
             f"bytes of response bodies.", "",
             "Objects: " + ", ".join(f"{OBJECTS[k]} {sizes[k] / 1e6:,.1f} MB" for k in OBJECTS
                                     if sizes.get(k)) + ".", ""]
    if res.get("lance_why"):
        lines += [f"Lance: not measured ({res['lance_why']}).", ""]
    lines += ["| operation | format | requests (first run's by method) | MB read | ms | "
              "`.row`: touched blocks (compressed) |", "|---|---|---:|---:|---:|---|"]
    ops = ["open", "get", *(f"take({k})" for k in TAKES), "scan", "scan 2 columns"]
    for op in ops:
        for name, cells in res["formats"].items():
            if op in cells:
                lines.append(_row(op, name, cells[op]))
    for name, cells in res["formats"].items():
        if "error" in cells:
            lines.append(f"| (failed) | {name} | | | | {cells['error']} |")
    if res.get("paimon"):
        lines += ["", f"Paimon table (`file.format=row`, written by `accelerated()`): "
                  "`catalog.get_table` + plan + `to_arrow` of every split.", "",
                  "| operation | reader | requests (first run's by method) | MB read | ms | |",
                  "|---|---|---:|---:|---:|---|"]
        for name, c in res["paimon"].items():
            lines.append(_row("table scan", name, c))
    lines += ["", f"{machine_line(machine, load_after)} rowformat at {library_commit()}. "
              f"Versions: {versions()}, lance {package_version('pylance')}, moto {package_version('moto')}."]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--latency-ms", type=float, default=20.0, help="held per request by the proxy")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--stock-repeats", type=int, default=1, help="runs of stock pypaimon's table scan")
    ap.add_argument("--seed", type=int, default=7, help="of the rows get and take ask for")
    ap.add_argument("--no-paimon", action="store_true", help="skip the Paimon table")
    ap.add_argument("--smoke", action="store_true",
                    help="a quick check of the script: --rows 2000 --repeats 1")
    ap.add_argument("--out", help="also write the Markdown to this file")
    a = ap.parse_args(argv)
    if a.smoke:
        a.rows, a.repeats = 2000, 1
    from compare import machine_info
    machine = machine_info()
    res = {}
    server = S3ServerProcess(fast_ranges=True).start()
    proxy = LatencyProxy(server.port, a.latency_ms / 1e3).start()
    os.environ.update(proxy.env())      # a client that reads the environment goes through the proxy
    try:
        server.make_bucket(BUCKET)
        t0 = time.perf_counter()
        table = generate(a.rows)
        write_all(table, server, res)
        print(f"written in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        slow = proxy.storage_options()
        fs = pafs.S3FileSystem(**slow)
        url = f"s3://{BUCKET}/{KEYS['row']}"
        index = rowformat.read_metadata(url, storage_options=server.storage_options()).block_index
        formats = [RowFormat(url, slow), Parquet(fs, f"{BUCKET}/{KEYS['parquet']}"),
                   ParquetDataset(fs, f"{BUCKET}/{KEYS['parquet']}")]
        if not res.get("lance_why"):
            formats.append(Lance(f"s3://{BUCKET}/{KEYS['lance']}", lance_options(proxy.endpoint)))
        meter = Meter(server, a.repeats)
        res["formats"] = measure_formats(meter, formats, a.rows, a.seed, index)
        if not a.no_paimon:
            res["paimon"] = measure_paimon(meter, server, proxy, table, min(a.stock_repeats, a.repeats))
            res["sizes"]["warehouse"] = _tree_size(pafs.S3FileSystem(**server.storage_options()),
                                                   KEYS["warehouse"], ".row")
    finally:
        proxy.stop()
        server.stop()
    md = markdown(res, a, machine, os.getloadavg())
    print(md)
    if a.out:
        pathlib.Path(a.out).write_text(
            "# Object storage: requests, bytes and time per read\n\n"
            f"`.venv/bin/python benchmarks/object_store.py --rows {a.rows} --latency-ms {a.latency_ms:g} "
            f"--repeats {a.repeats} --stock-repeats {a.stock_repeats} --seed {a.seed}"
            f"{' --no-paimon' if a.no_paimon else ''}` on {os.cpu_count()} cores "
            f"({datetime.date.today()}).\n\n" + md + "\n")


if __name__ == "__main__":
    main()
