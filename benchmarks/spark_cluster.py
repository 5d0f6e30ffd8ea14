"""paimon-row against Spark's Parquet on a standalone cluster on this
machine: a master and two workers (one core, 1.5 GiB each) on 127.0.0.1,
rowformat shipped as a venv-pack archive, exactly as tests/spark/test_cluster.py
starts them (needs root for the workers' mount namespaces). A write of one
DataFrame, then scans: an aggregate of 3 of its 6 columns (Parquet reads
only those; a Python source is given no column pruning, so paimon-row reads
all 6, unless ``.schema()`` projects), and one of every column. The formats
interleaved in each round, medians of ``--repeats`` after a warm-up round.
Beside the scans, their Python-source floor on the same cluster: a Python
source yielding the table's own batches, made beforehand (spark_tables.py's
``arrow-files``), which decodes nothing: what Spark costs any Python source.

    .venv/bin/python benchmarks/spark_cluster.py [--rows 3000000] [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.spark import _procs                                                # noqa: E402
from tests.spark.cluster_job import SCANS                                     # noqa: E402
from tests.spark.test_cluster import Cluster, _why_not, build_archive, driver_env  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    why = _why_not()
    if why:
        sys.exit(f"cannot start the cluster: {why}")
    with tempfile.TemporaryDirectory(prefix="rowformat-cluster-bench-") as tmp:
        with open(os.path.join(tmp, "archive.log"), "wb") as log:
            archive = build_archive(tmp, log)
        cluster = Cluster(tmp)
        try:
            cluster.start()
            cluster.wait()
            env = driver_env(PYSPARK_PYTHON="./environment/bin/python",
                             PYSPARK_DRIVER_PYTHON=sys.executable)
            conf = cluster.app_conf(**{"spark.archives": f"{archive}#environment"})
            work = os.path.join(tmp, "job")
            os.makedirs(work)
            t = time.perf_counter()
            rc, out = cluster.run_job({"mode": "bench", "workdir": work, "conf": conf,
                                       "rows": args.rows, "repeat": args.repeats,
                                       "floor": os.path.join(ROOT, "benchmarks")},
                                      env, "bench", timeout=3600)
            if rc != 0:
                sys.exit(out[-6000:])
            got = _procs.result_line(out, "CLUSTER-RESULT")
        finally:
            cluster.stop()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    b = got["bench"]
    print(f"`.venv/bin/python benchmarks/spark_cluster.py --rows {args.rows} --repeats "
          f"{args.repeats}` at {commit}, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores: "
          f"a standalone master and 2 workers (1 core, 1.5 GiB each), rowformat shipped as a "
          f"venv-pack archive; {time.perf_counter() - t:.0f} s; tasks by worker "
          f"{got['tasks']['by_worker']}.\n")
    print("| operation | paimon-row | Parquet | ratio | target | | Python-source floor "
          "| floor / Parquet |")
    print("|---|---:|---:|---:|---:|---|---:|---:|")
    ops = ["write"] + [name for name, _ in SCANS]
    for op in ops + ["3-column aggregate, .schema() projection"]:
        ours = b[f"paimon-row|{op}"]["median"]
        theirs = b[f"parquet|{op.split(',')[0]}"]["median"]
        ratio = ours / theirs
        floor = b.get(f"floor|{op}", {}).get("median")
        floor_cells = f"{floor:.2f} s | {floor / theirs:.2f}x" if floor else " | "
        print(f"| {op} | {ours:.2f} s | {theirs:.2f} s | {ratio:.2f}x | <= 1.1x | "
              f"{'met' if ratio <= 1.1 else '**missed**'} | {floor_cells} |")
    print("\nEvery wall time (s):\n")
    for key, v in b.items():
        print(f"- {key.replace('|', ', ')}: {', '.join(f'{x:.2f}' for x in v['all'])}")


if __name__ == "__main__":
    main()
