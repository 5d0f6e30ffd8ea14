"""RowFileWriter(stats=...): null counts and the least and greatest value
of each column in Java's order, collected by the encoder over every batch
(several slices of 8,192 rows, sliced and null-free arrays alike)."""
import math
import struct

import numpy as np
import pyarrow as pa
import pytest

import rowformat


def _key(kind, v):
    if kind == "f":                               # Double.compare, as unsigned keys
        bits = struct.unpack("<Q", struct.pack("<d", v))[0]
        if math.isnan(v):
            bits = 0x7FF8000000000000
        return bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | 1 << 63
    return v.encode() if kind == "s" else v


def _min_max(kind, values):
    present = [v for v in values if v is not None]
    if not present:
        return None, None
    return (min(present, key=lambda v: _key(kind, v)), max(present, key=lambda v: _key(kind, v)))


def _write(tmp_path, table, schema, modes):
    with rowformat.RowFileWriter(tmp_path / "s.row", schema, stats=modes) as w:
        for batch in table.to_batches(max_chunksize=7000):
            w.write(batch)
    return w.statistics()


@pytest.mark.parametrize("nulls", [False, True])
def test_stats_over_many_batches_are_the_columns_least_and_greatest(tmp_path, nulls):
    rng = np.random.default_rng(7)
    n = 30_000
    ints = rng.integers(-2**62, 2**62, n).tolist()
    floats = rng.standard_normal(n).tolist()
    floats[20_000] = -0.0
    strs = ["".join(chr(c) for c in rng.integers(0x20, 0x3000, rng.integers(0, 12)))
            for _ in range(n)]
    if nulls:
        for col in (ints, floats, strs):
            for i in rng.integers(0, n, 3000):
                col[i] = None
    table = pa.table({"i": pa.array(ints, pa.int64()), "f": pa.array(floats, pa.float64()),
                      "s": pa.array(strs, pa.string())}).slice(5, n - 10)
    got = _write(tmp_path, table, "i BIGINT, f DOUBLE, s STRING", ["min-max"] * 3)
    for (kind, name), (count, lo, hi) in zip([("i", "i"), ("f", "f"), ("s", "s")], got):
        values = table.column(name).to_pylist()
        assert count == sum(v is None for v in values)
        want_lo, want_hi = _min_max(kind, values)
        if kind == "f":
            lo, hi = (struct.unpack("<d", struct.pack("<Q", b))[0] for b in (lo, hi))
        if kind == "s":
            lo, hi = lo.decode(), hi.decode()
        assert (lo, hi) == (want_lo, want_hi)


def test_the_greatest_double_is_the_first_nan_with_its_payload(tmp_path):
    payload = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000123))[0]
    values = [1.0] * 10_000 + [payload, float("nan"), float("inf")] + [-0.0, 0.0]
    table = pa.table({"f": pa.array(values, pa.float64())})
    [(count, lo, hi)] = _write(tmp_path, table, "f DOUBLE", ["min-max"])
    assert (count, lo, hi) == (0, 0x8000000000000000, 0x7FF0000000000123)


def test_counts_none_and_types_without_order(tmp_path):
    table = pa.table({"a": pa.array([[1], None, []], pa.list_(pa.int32())),
                      "b": pa.array([1, None, None], pa.int32()),
                      "c": pa.array([None, b"x", b""], pa.large_binary())})
    got = _write(tmp_path, table, "a ARRAY<INT>, b INT, c BLOB", ["min-max", "counts", "min-max"])
    assert got == [(1, None, None), (2, None, None), (1, None, None)]
    assert _write(tmp_path, table, "a ARRAY<INT>, b INT, c BLOB",
                  ["none", "min-max", "none"]) == [None, (2, 1, 1), None]


def test_a_stats_entry_per_field_is_required(tmp_path):
    with pytest.raises(ValueError, match="one of \\['counts', 'min-max', 'none'\\] for each"):
        rowformat.RowFileWriter(tmp_path / "x.row", "a INT", stats=["full"])


def test_null_counts_of_sliced_columns_over_word_edges(tmp_path):
    rng = np.random.default_rng(3)
    n = 20_000
    flags = [None if rng.random() < 0.3 else bool(rng.random() < 0.5) for _ in range(n)]
    ints = [None if rng.random() < 0.1 else int(v) for v in rng.integers(0, 9, n)]
    table = pa.table({"b": pa.array(flags, pa.bool_()),
                      "i": pa.array(ints, pa.int32())}).slice(13, n - 77)
    got = _write(tmp_path, table, "b BOOLEAN, i INT", ["min-max", "counts"])
    b, i = table.column("b").to_pylist(), table.column("i").to_pylist()
    assert got == [(b.count(None), 0, 1), (i.count(None), None, None)]
    only_true = pa.table({"b": pa.array([None, True, None, True] * 3000, pa.bool_())}).slice(3)
    assert _write(tmp_path, only_true, "b BOOLEAN", ["min-max"]) == [(5998, 1, 1)]
