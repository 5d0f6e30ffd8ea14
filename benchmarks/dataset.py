"""Seeded benchmark dataset: a pyarrow Table of N rows (1,000,000 by default).

Columns (Paimon types):
  id BIGINT (0..N-1), user_id INT, score DOUBLE, flag BOOLEAN,
  name STRING (8 to 24 chars), city STRING (200 distinct values),
  tags ARRAY<STRING> (0 to 4 items), ts TIMESTAMP(3), amount DECIMAL(10, 2),
  payload BYTES (16 to 64 random bytes).

Everything is built with numpy from one seed, so the same (rows, seed) gives
the same table bit for bit, in about a second for a million rows.

    python benchmarks/dataset.py --rows 1000000 [--seed 42] [--out data.arrow]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pyarrow as pa

SCHEMA_TEXT = ("id BIGINT, user_id INT, score DOUBLE, flag BOOLEAN, name STRING, city STRING, "
               "tags ARRAY<STRING>, ts TIMESTAMP(3), amount DECIMAL(10, 2), payload BYTES")

ARROW_SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("user_id", pa.int32()),
    ("score", pa.float64()),
    ("flag", pa.bool_()),
    ("name", pa.string()),
    ("city", pa.string()),
    ("tags", pa.list_(pa.field("element", pa.string()))),
    ("ts", pa.timestamp("ms")),
    ("amount", pa.decimal128(10, 2)),
    ("payload", pa.binary()),
])

DEFAULT_ROWS = 1_000_000
DEFAULT_SEED = 42
_LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", np.uint8)
_TS_START = 1_577_836_800_000       # 2020-01-01T00:00:00Z in ms
_TS_SPAN = 5 * 365 * 86_400_000     # five years


def _offsets(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(lengths, out=out[1:])
    return out


def _random_strings(rng: np.random.Generator, n: int, lo: int, hi: int) -> pa.Array:
    """n strings of lo..hi random ASCII letters."""
    lengths = rng.integers(lo, hi + 1, n, dtype=np.int32)
    offsets = _offsets(lengths)
    chars = _LETTERS[rng.integers(0, len(_LETTERS), int(offsets[-1]))]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes()))


def _vocabulary(rng: np.random.Generator, n: int, lo: int, hi: int) -> list[str]:
    words = set()
    while len(words) < n:
        k = int(rng.integers(lo, hi + 1))
        words.add(bytes(_LETTERS[rng.integers(0, len(_LETTERS), k)]).decode())
    return sorted(words)


def generate(rows: int = DEFAULT_ROWS, seed: int = DEFAULT_SEED) -> pa.Table:
    """The benchmark table: ``rows`` rows, deterministic for a given seed."""
    rng = np.random.default_rng(seed)
    n = int(rows)

    ids = pa.array(np.arange(n, dtype=np.int64))
    user_id = pa.array(rng.integers(0, 2_000_000_000, n, dtype=np.int32))
    score = pa.array(rng.standard_normal(n) * 100.0)
    flag = pa.array(rng.random(n) < 0.5)
    name = _random_strings(rng, n, 8, 24)

    cities = pa.array(_vocabulary(rng, 200, 5, 14), pa.string())
    city = cities.take(pa.array(rng.integers(0, 200, n, dtype=np.int32)))

    tag_words = pa.array(_vocabulary(rng, 1000, 3, 10), pa.string())
    tag_counts = rng.integers(0, 5, n, dtype=np.int32)            # 0..4 items
    tag_offsets = _offsets(tag_counts)
    tag_values = tag_words.take(pa.array(rng.integers(0, 1000, int(tag_offsets[-1]), dtype=np.int32)))
    tags = pa.ListArray.from_arrays(pa.array(tag_offsets), tag_values,
                                    type=ARROW_SCHEMA.field("tags").type)

    ts = pa.array(_TS_START + np.sort(rng.integers(0, _TS_SPAN, n, dtype=np.int64)),
                  pa.timestamp("ms"))

    # DECIMAL(10, 2): unscaled values in [-10^8, 10^8), as 16-byte little-endian two's complement.
    unscaled = rng.integers(-100_000_000, 100_000_000, n, dtype=np.int64)
    words = np.empty((n, 2), np.int64)
    words[:, 0] = unscaled
    words[:, 1] = np.where(unscaled < 0, -1, 0)
    amount = pa.Array.from_buffers(pa.decimal128(10, 2), n, [None, pa.py_buffer(words.tobytes())])

    pay_lengths = rng.integers(16, 65, n, dtype=np.int32)
    pay_offsets = _offsets(pay_lengths)
    pay_bytes = rng.integers(0, 256, int(pay_offsets[-1]), dtype=np.uint8)
    payload = pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(pay_offsets),
                                                            pa.py_buffer(pay_bytes.tobytes())])

    return pa.Table.from_arrays([ids, user_id, score, flag, name, city, tags, ts, amount, payload],
                                schema=ARROW_SCHEMA)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--out", help="write the table as an Arrow IPC file")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    table = generate(a.rows, a.seed)
    dt = time.perf_counter() - t0
    print(f"{table.num_rows} rows, {table.nbytes / 1e6:.1f} MB in Arrow, generated in {dt:.2f} s")
    print(table.schema)
    print(table.slice(0, 3).to_pylist())
    if a.out:
        with pa.OSFile(a.out, "wb") as f, pa.ipc.new_file(f, table.schema) as w:
            w.write_table(table)
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
