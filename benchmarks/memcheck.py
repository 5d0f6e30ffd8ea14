"""Bounded-memory scan check (the issue's memory target).

Writes a .row file at least 10x larger than the reader's block cache, then, in a
fresh process, opens it and scans it with iter_batches(), dropping each batch.
Passes when the peak RSS growth over the RSS just before the scan (VmHWM
minus the baseline) stays below cache_bytes + 2 x the largest batch (Arrow
nbytes). Exit status 0 on pass, 1 on fail.

    python benchmarks/memcheck.py [--rows 1000000] [--cache-mib 8] [--batch-size 65536] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def scan_child(path: str, cache_bytes: int, batch_size: int) -> dict:
    import pyarrow as pa
    import rowformat
    from dataset import SCHEMA_TEXT
    from peakmem import Peak
    r = rowformat.RowFileReader(path, rowformat.schema(SCHEMA_TEXT), cache_bytes=cache_bytes)
    pool0 = pa.total_allocated_bytes()
    rows = batches = max_batch = 0
    with Peak() as pk:
        for b in r.iter_batches(batch_size=batch_size):
            rows += b.num_rows
            batches += 1
            max_batch = max(max_batch, b.nbytes)
            del b
    r.close()
    return {"rows": rows, "batches": batches, "max_batch_bytes": max_batch, "base_bytes": pk.base,
            "peak_extra_bytes": pk.extra, "peak_method": pk.method, "arrow_pool_max_bytes": pa.default_memory_pool().max_memory(),
            "arrow_pool_start_bytes": pool0, "arrow_backend": pa.default_memory_pool().backend_name}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--cache-mib", type=float, default=8)
    p.add_argument("--batch-size", type=int, default=65536)
    p.add_argument("--json", action="store_true")
    p.add_argument("--scan-child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    cache = int(a.cache_mib * 2**20)
    if a.scan_child:
        print(json.dumps(scan_child(a.scan_child, cache, a.batch_size)))
        return 0

    import rowformat
    import dataset
    work = tempfile.mkdtemp(prefix="rowformat-mem-")
    path = os.path.join(work, "big.row")
    try:
        table = dataset.generate(a.rows, a.seed)
        with rowformat.RowFileWriter(path, rowformat.schema(dataset.SCHEMA_TEXT)) as w:
            w.write(table)
        del table
        size = os.path.getsize(path)
        if size < 10 * cache:           # keep the file at least 10x the cache
            cache = max(1 << 20, size // 10)
        pr = subprocess.run([sys.executable, os.path.abspath(__file__), "--scan-child", path,
                             "--cache-mib", str(cache / 2**20), "--batch-size", str(a.batch_size)],
                            capture_output=True, text=True)
        if pr.returncode:
            raise RuntimeError(pr.stderr.strip().splitlines()[-1])
        res = json.loads(pr.stdout.strip().splitlines()[-1])
    finally:
        for f in os.listdir(work):
            os.remove(os.path.join(work, f))
        os.rmdir(work)
    res.update(file_bytes=size, cache_bytes=cache, batch_size=a.batch_size)
    res["limit_bytes"] = cache + 2 * res["max_batch_bytes"]
    res["ok"] = res["peak_extra_bytes"] < res["limit_bytes"]
    if a.json:
        print(json.dumps(res))
    else:
        print(f"file {size / 1e6:,.1f} MB ({size / cache:.1f}x the {cache / 2**20:.1f} MiB cache), "
              f"{res['rows']:,} rows in {res['batches']} batches of {a.batch_size:,}")
        print(f"peak RSS growth during the scan: {res['peak_extra_bytes'] / 1e6:,.1f} MB; limit "
              f"cache + 2 batches = {res['limit_bytes'] / 1e6:,.1f} MB "
              f"(largest batch {res['max_batch_bytes'] / 1e6:,.1f} MB); Arrow pool "
              f"({res['arrow_backend']}) peak {res['arrow_pool_max_bytes'] / 1e6:,.1f} MB")
        print("PASS" if res["ok"] else "FAIL")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
