"""The local end-to-end job: generate a dataset, write it as .row, look rows
up by row number, scan it, and print what happened and how long it took."""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

import rowformat

SCHEMA = ("id BIGINT NOT NULL, user_id INT, score DOUBLE, flag BOOLEAN, name STRING, "
          "city STRING, tags ARRAY<STRING>, ts TIMESTAMP(3), amount DECIMAL(10, 2), payload BYTES")


def generate(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    name_len = rng.integers(8, 25, n)
    names = letters[rng.integers(0, 26, int(name_len.sum()))].tobytes().decode()
    name_off = np.concatenate(([0], np.cumsum(name_len))).astype(np.int32)
    cities = np.array([f"city-{i:03d}" for i in range(200)], dtype=object)
    tag_counts = rng.integers(0, 5, n)
    tag_off = np.concatenate(([0], np.cumsum(tag_counts))).astype(np.int32)
    tag_values = pa.array(np.array(["red", "green", "blue", "hot", "new"], dtype=object)[
        rng.integers(0, 5, int(tag_counts.sum()))])
    pay_len = rng.integers(16, 65, n)
    pay_off = np.concatenate(([0], np.cumsum(pay_len))).astype(np.int32)
    payload = rng.integers(0, 256, int(pay_len.sum()), dtype=np.uint8).tobytes()
    schema = rowformat.to_arrow_schema(rowformat.schema(SCHEMA))
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "user_id": pa.array(rng.integers(0, 1_000_000, n, dtype=np.int32)),
        "score": pa.array(rng.random(n)),
        "flag": pa.array(rng.random(n) < 0.5),
        "name": pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(name_off), pa.py_buffer(names.encode())]),
        "city": pa.array(cities[rng.integers(0, 200, n)], pa.string()),
        "tags": pa.ListArray.from_arrays(pa.array(tag_off), tag_values),
        "ts": pa.array(1_700_000_000_000 + rng.integers(0, 10**9, n), pa.timestamp("ms")),
        "amount": _amounts(rng, n),
        "payload": pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(pay_off), pa.py_buffer(payload)]),
    }, schema=schema)


def _amounts(rng, n):
    """DECIMAL(10, 2) values built from unscaled int64s without Python objects."""
    unscaled = rng.integers(-99_999_999, 99_999_999, n, dtype=np.int64)
    words = np.zeros((n, 2), dtype=np.int64)
    words[:, 0] = unscaled
    words[:, 1] = np.where(unscaled < 0, -1, 0)
    return pa.Array.from_buffers(pa.decimal128(10, 2), n, [None, pa.py_buffer(words.tobytes())])


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--lookups", type=int, default=1000)
    args = ap.parse_args()
    schema = rowformat.schema(SCHEMA)
    table, t_gen = timed(lambda: generate(args.rows))
    print(f"generated {table.num_rows:,} rows ({table.nbytes / 2**20:.1f} MiB in Arrow) in {t_gen:.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "demo.row")

        def write():
            with rowformat.RowFileWriter(path, schema) as w:
                w.write(table)
        _, t_write = timed(write)
        size = os.path.getsize(path)
        with rowformat.RowFileReader(path, schema) as r:
            print(f"wrote {path}: {size / 2**20:.1f} MiB, {r.num_blocks} blocks, "
                  f"{table.nbytes / size:.2f}x smaller than Arrow, in {t_write:.2f} s "
                  f"({table.num_rows / t_write / 1e6:.2f} M rows/s)")
            rng = np.random.default_rng(1)
            rows = rng.integers(0, r.num_rows, args.lookups)
            lat = []
            for i in rows:
                t0 = time.perf_counter()
                row = r.get(int(i))
                lat.append(time.perf_counter() - t0)
                assert row[0] == i
            print(f"get(i) x {args.lookups}: median {statistics.median(lat) * 1e6:.1f} us, "
                  f"p99 {np.percentile(lat, 99) * 1e6:.1f} us (block cache warm after first touch)")
            sorted_rows = np.sort(rng.choice(r.num_rows, min(10_000, r.num_rows), replace=False))
            taken, t_take = timed(lambda: r.take(sorted_rows))
            assert taken.column("id").to_numpy().tolist() == sorted_rows.tolist()
            print(f"take({len(sorted_rows):,} sorted rows): {t_take * 1e3:.1f} ms")
            scanned, t_scan = timed(lambda: r.read())
            assert scanned.equals(table)
            print(f"read() full scan: {scanned.num_rows:,} rows in {t_scan:.2f} s "
                  f"({scanned.num_rows / t_scan / 1e6:.2f} M rows/s); equals the input: yes")


if __name__ == "__main__":
    main()
