"""Data-evolution tables with a BLOB column: stock pypaimon 2.1.0 against
``rowformat.paimon.accelerate()``, side by side in one run.

    .venv/bin/python benchmarks/paimon_blob_tables.py [--blob-mib 256] [--small 20000]
        [--small-kib 16] [--repeats 3] [--out FILE]

Two tables (``row-tracking.enabled``, ``data-evolution.enabled``; ``id
BIGINT, b BLOB``), each written (write + commit) and read back whole
(``to_arrow`` of all splits), stock and accelerated:

* one blob of ``--blob-mib`` MiB (the issue's large-blob case);
* ``--small`` blobs of ``--small-kib`` KiB each.

Each cell is the median of ``--repeats`` runs (a fresh table per write) as
MB/s of blob bytes, and the peak RSS growth during the operation (VmHWM
after clear_refs, see ``peakmem.py``). Reads are of the accelerated write's
table (the files are byte-identical either way).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

import pyarrow as pa

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from peakmem import Peak  # noqa: E402

import rowformat.paimon as rp  # noqa: E402

OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "file.format": "row"}
SCHEMA = pa.schema([("id", pa.int64()), ("b", pa.large_binary())])
MIB = 1 << 20


def _data(count: int, size: int) -> pa.Table:
    chunk = os.urandom(min(size, MIB))
    blob = (chunk * (size // len(chunk) + 1))[:size]
    return pa.table({"id": pa.array(range(count), pa.int64()),
                     "b": pa.array([blob] * count, pa.large_binary())}, schema=SCHEMA)


class Tables:
    def __init__(self, root: str):
        from pypaimon import CatalogFactory, Schema
        self._schema = Schema
        self.catalog = CatalogFactory.create({"warehouse": root})
        self.catalog.create_database("db", True)
        self.n = 0

    def write(self, data: pa.Table) -> str:
        self.n += 1
        name = f"db.t{self.n}"
        self.catalog.create_table(name, self._schema.from_pyarrow_schema(SCHEMA, options=OPTIONS), True)
        wb = self.catalog.get_table(name).new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        try:
            w.write_arrow(data)
            c.commit(w.prepare_commit())
        finally:
            w.close()
            c.close()
        return name

    def read(self, name: str) -> pa.Table:
        rb = self.catalog.get_table(name).new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def _measure(fn, repeats: int):
    """(median seconds, median peak RSS growth in bytes, last result)."""
    times, peaks, out = [], [], None
    for _ in range(repeats):
        out = None
        with Peak() as p:
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
        peaks.append(p.extra)
    return statistics.median(times), statistics.median(peaks), out


def run(cases, repeats: int, root: str) -> list[dict]:
    tables = Tables(root)
    rows = []
    for label, count, size in cases:
        data = _data(count, size)
        total = count * size
        row = {"case": label, "bytes": total}
        for mode in ("stock", "fast"):
            if mode == "fast":
                rp.accelerate()
            try:
                t, peak, name = _measure(lambda: tables.write(data), repeats)
                row[f"write_{mode}"] = (total / t / 1e6, peak)
                t, peak, got = _measure(lambda: tables.read(name), repeats)
                assert got.num_rows == count and got.column("b").equals(data.column("b"))
                row[f"read_{mode}"] = (total / t / 1e6, peak)
            finally:
                rp.restore()
        rows.append(row)
        del data
    return rows


def table_md(rows, repeats: int) -> str:
    def cell(v):
        return f"{v[0]:,.0f} MB/s, {v[1] / MIB:,.0f} MiB"
    out = [f"Blob tables, stock pypaimon vs accelerate() (median of {repeats}; "
           "throughput of blob bytes, peak RSS growth)", "",
           "| case | write stock | write accelerated | read stock | read accelerated |",
           "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['case']} | {cell(r['write_stock'])} | {cell(r['write_fast'])} | "
                   f"{cell(r['read_stock'])} | {cell(r['read_fast'])} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blob-mib", type=int, default=256)
    ap.add_argument("--small", type=int, default=20_000)
    ap.add_argument("--small-kib", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="also write the Markdown table to this file")
    args = ap.parse_args(argv)
    cases = [(f"1 blob of {args.blob_mib} MiB", 1, args.blob_mib * MIB),
             (f"{args.small:,} blobs of {args.small_kib} KiB", args.small, args.small_kib * 1024)]
    root = tempfile.mkdtemp(prefix="rowformat-blob-bench-")
    try:
        md = table_md(run(cases, args.repeats, root), args.repeats)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(md)
    if args.out:
        pathlib.Path(args.out).write_text(md + "\n")


if __name__ == "__main__":
    main()
