"""Concurrent commits to one Paimon table on S3 (a moto server on loopback):
N writer processes x M rounds, each round's commits released together at a
barrier, each appending ROWS rows; then the rows and snapshot ids counted.
Stock pypaimon against accelerated (conditional creates, rowformat/paimon/_commit.py).

    .venv/bin/python benchmarks/concurrent_commits.py [--writers 4] [--rounds 25]
        [--runs 3] [--stock-runs 1] [--out benchmarks/results-commits.md]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests._s3server import S3Server                      # noqa: E402
from tests.paimon import _committer                        # noqa: E402
from tests.paimon.test_object_store_commits import _catalog, _rows, _snapshot_ids  # noqa: E402

ROWS = 50


def run(server, bucket: str, writers: int, rounds: int, accelerate: bool) -> dict:
    server.make_bucket(bucket)
    opts, catalog = _catalog(server, bucket)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Manager().Barrier(writers)
    t0 = time.perf_counter()
    with ctx.Pool(writers) as pool:
        results = [pool.apply_async(_committer.append_rounds,
                                    (server.env(), opts, w, rounds, ROWS, barrier, accelerate))
                   for w in range(writers)]
        errors = [e for r in results for e in r.get(timeout=1800)]
    seconds = time.perf_counter() - t0
    ids = _snapshot_ids(server, bucket)
    got = _rows(catalog).group_by(["writer", "round"]).aggregate([("i", "count")])
    present = {(w, r) for w, r in zip(got.column("writer").to_pylist(), got.column("round").to_pylist())}
    return {"mode": "accelerated" if accelerate else "stock pypaimon", "rows": _rows(catalog).num_rows,
            "expected": writers * rounds * ROWS, "lost": writers * rounds - len(present),
            "snapshots": len(ids), "contiguous": ids == list(range(1, len(ids) + 1)),
            "errors": len(errors), "seconds": seconds}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--rounds", type=int, default=25)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--stock-runs", type=int, default=1)
    p.add_argument("--out")
    args = p.parse_args()
    server = S3Server().start()
    os.environ.update(server.env())
    rows = []
    try:
        for k in range(args.stock_runs):
            rows.append(run(server, f"stock-{k}", args.writers, args.rounds, False))
            print(rows[-1], flush=True)
        for k in range(args.runs):
            rows.append(run(server, f"accel-{k}", args.writers, args.rounds, True))
            print(rows[-1], flush=True)
    finally:
        server.stop()
    lines = [f"# Concurrent commits on S3: {args.writers} processes x {args.rounds} rounds",
             "", "`benchmarks/concurrent_commits.py` against moto 5.2.5 on loopback, pypaimon 2.1.0; "
             f"each round's commits released together at a barrier, {ROWS} rows each.", "",
             "| mode | rows (expected) | commits lost | snapshots | ids contiguous | commit errors | seconds |",
             "|---|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['rows']:,} ({r['expected']:,}) | {r['lost']} | {r['snapshots']} "
                     f"| {'yes' if r['contiguous'] else 'no'} | {r['errors']} | {r['seconds']:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
