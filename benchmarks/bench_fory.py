"""rowformat.fory vs pyfory 1.7.7 (and pickle) on the 10-field record.

Run: ``python benchmarks/bench_fory.py [--rounds N]``. Each round times every
implementation of an operation back to back (timeit, fixed loop counts), so
the reported ratio is the median over rounds of per-round ratios, which keeps
a noisy shared machine from favouring either side.
"""
import argparse
import os
import pickle
import statistics
import sys
import time
import timeit
import warnings

import pyarrow as pa

from rowformat.fory import RowEncoder, RowView

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import pyfory.format as pf
    from pyfory.format.columnar import ArrowWriter

SCHEMA = pa.schema([
    ("id", pa.int64()), ("age", pa.int32()), ("score", pa.float64()), ("ratio", pa.float64()),
    ("name", pa.string()), ("city", pa.string()), ("email", pa.string()), ("active", pa.bool_()),
    ("count", pa.int64()), ("tags", pa.list_(pa.string())),
])
REC = {"id": 123456789, "age": 42, "score": 98.5, "ratio": 0.25, "name": "Alice Smith",
       "city": "Berlin", "email": "alice@example.com", "active": True, "count": 17,
       "tags": ["red", "green", "blue"]}


def per_op(fn, number):
    return timeit.Timer(fn).timeit(number) / number


def cpu_per_op(fn, number):
    # CPU time of this process: rows per second "on one core" even when the
    # shared machine is oversubscribed (wall time then includes waiting).
    return timeit.Timer(fn, timer=time.process_time).timeit(number) / number


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--batch-rows", type=int, default=200_000)
    args = ap.parse_args(argv)

    enc = RowEncoder(SCHEMA)
    fs = pf.from_arrow_schema(SCHEMA)
    penc = pf.create_row_encoder(fs)
    data = enc.encode(REC)
    assert data == penc.to_row(REC).to_bytes()
    view = RowView(SCHEMA, data)
    rd = pf.RowData(fs, data)
    pick = pickle.dumps(REC)

    nb = args.batch_rows
    batch = pa.RecordBatch.from_pylist([REC] * nb, schema=SCHEMA)
    rows = enc.encode_batch(batch)
    small = 5_000
    small_rows = [penc.to_row(REC) for _ in range(small)]
    small_batch = batch.slice(0, small)

    def pyfory_batch_to_rows():
        for r in small_batch.to_pylist():
            penc.to_row(r).to_bytes()

    def pyfory_rows_to_batch():
        w = ArrowWriter(SCHEMA)
        for r in small_rows:
            w.write(r)
        w.finish()

    # (operation, ours, pyfory, pickle, loops, target ratio ours/pyfory, unit rows)
    ops = [
        ("encode 10-field record", lambda: enc.encode(REC), lambda: penc.to_row(REC),
         lambda: pickle.dumps(REC), 20_000, 0.5),
        ("encode -> bytes", lambda: enc.encode(REC), lambda: penc.to_row(REC).to_bytes(),
         lambda: pickle.dumps(REC), 20_000, 0.5),
        ("full decode (bytes -> record)", lambda: enc.decode(data),
         lambda: penc.from_row(pf.RowData(fs, data)), lambda: pickle.loads(pick), 5_000, 0.1),
        ("typed read get_int64(0)", lambda: view.get_int64(0), lambda: rd.get_int64(0),
         None, 200_000, 1.0),
        ("typed read get_str(4)", lambda: view.get_str(4), lambda: rd.get_str(4),
         None, 200_000, 1.0),
        ("wrap + read name", lambda: RowView(SCHEMA, data)["name"],
         lambda: pf.RowData(fs, data).get_str(4), None, 50_000, None),
    ]
    results = {name: {"ours": [], "pyfory": [], "pickle": [], "ratio": []} for name, *_ in ops}
    batch_res = {"encode_batch": [], "decode_batch": [], "pyfory_enc": [], "pyfory_dec": [],
                 "encode_cpu": [], "decode_cpu": []}
    for _ in range(args.rounds):
        for name, ours, theirs, pk, n, _t in ops:
            a = per_op(ours, n)
            b = per_op(theirs, n)
            results[name]["ours"].append(a)
            results[name]["pyfory"].append(b)
            results[name]["ratio"].append(a / b)
            if pk:
                results[name]["pickle"].append(per_op(pk, n))
        batch_res["encode_batch"].append(nb / per_op(lambda: enc.encode_batch(batch), 1))
        batch_res["decode_batch"].append(nb / per_op(lambda: enc.decode_batch(rows), 1))
        batch_res["encode_cpu"].append(nb / cpu_per_op(lambda: enc.encode_batch(batch), 1))
        batch_res["decode_cpu"].append(nb / cpu_per_op(lambda: enc.decode_batch(rows), 1))
        batch_res["pyfory_enc"].append(small / per_op(pyfory_batch_to_rows, 1))
        batch_res["pyfory_dec"].append(small / per_op(pyfory_rows_to_batch, 1))

    med = statistics.median
    print(f"rowformat.fory vs pyfory 1.7.7 / pickle — {args.rounds} rounds, "
          f"Python {sys.version.split()[0]}, pyarrow {pa.__version__}, "
          f"{os.cpu_count()} CPUs, loadavg {os.getloadavg()[0]:.1f}")
    print(f"{'operation':34} {'ours µs':>9} {'pyfory µs':>10} {'pickle µs':>10} "
          f"{'ours/pyfory':>12} {'target':>8}  ok")
    ok_all = True
    for name, *_r, target in ops:
        r = results[name]
        ratio = med(r["ratio"])
        ok = target is None or ratio <= target
        ok_all &= ok
        pk = f"{med(r['pickle']) * 1e6:10.3f}" if r["pickle"] else f"{'-':>10}"
        print(f"{name:34} {med(r['ours']) * 1e6:9.3f} {med(r['pyfory']) * 1e6:10.3f} {pk} "
              f"{ratio:12.3f} {('<= ' + str(target)) if target else '-':>8}  {'yes' if ok else 'NO'}")
    enc_rate, dec_rate = med(batch_res["encode_batch"]), med(batch_res["decode_batch"])
    print(f"{'Arrow batch -> rows (rows/s)':34} {enc_rate / 1e6:8.2f}M {med(batch_res['pyfory_enc']) / 1e6:9.3f}M"
          f" {'-':>10} {'':>12} {'>= 2M':>8}  {'yes' if enc_rate >= 2e6 else 'NO'}")
    print(f"{'rows -> Arrow batch (rows/s)':34} {dec_rate / 1e6:8.2f}M {med(batch_res['pyfory_dec']) / 1e6:9.3f}M"
          f" {'-':>10} {'':>12} {'>= 2M':>8}  {'yes' if dec_rate >= 2e6 else 'NO'}")
    print(f"{'  same, CPU time (rows/s)':34} {med(batch_res['encode_cpu']) / 1e6:8.2f}M encode,"
          f" {med(batch_res['decode_cpu']) / 1e6:.2f}M decode")
    print("(pyfory batch columns: to_pylist + to_row per row / ArrowWriter per row, on 5,000 rows)")
    return 0 if ok_all and enc_rate >= 2e6 and dec_rate >= 2e6 else 1


def test_bench_encode(benchmark):
    """pytest-benchmark entry points (pytest benchmarks/bench_fory.py)."""
    enc = RowEncoder(SCHEMA)
    benchmark(enc.encode, REC)


def test_bench_decode(benchmark):
    enc = RowEncoder(SCHEMA)
    benchmark(enc.decode, enc.encode(REC))


if __name__ == "__main__":
    sys.exit(main())
