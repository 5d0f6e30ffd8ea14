"""A table whose rows are big (issue 28, item 4): 80 rows of 16 MiB strings
in a 40 KB data file. Accelerated reads used to decode all of them in one
batch (at least 65,536 rows a batch), so ``rowformat head -n 1`` needed
1.3 GB and, under a cap, failed with "out of memory" reported as a damaged
file. Batches now end at the reader's byte budget (64 MiB: 3 of these rows)."""
import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from tests._deps import ASAN

from rowformat import RowFileWriter, schema
from rowformat.paimon import tables as tb

from ._tables import rewrite_manifests

ROWS = 80
BIG = 16 << 20
CAP = 768 << 20         # address space beyond the child's after its imports
# ASan (scripts/sanitize.sh preloads it) reserves terabytes of address space
# for its shadow memory: no address-space cap can hold it

CHILD = r"""
import json, os, resource, sys
os.cpu_count = lambda: 2        # readahead follows the core count: fixed here
from rowformat import cli
from rowformat.paimon import tables as tb
import pyarrow, pypaimon
vm = [int(l.split()[1]) << 10 for l in open("/proc/self/status") if l.startswith("VmSize")][0]
resource.setrlimit(resource.RLIMIT_AS, (vm + int(sys.argv[2]),) * 2)
out = open(sys.argv[3], "w")
sys.stdout = out
code = cli.main(["head", "-n", "1", sys.argv[1], "-f", "jsonl"])
out.close()
sys.stderr.write(json.dumps({"code": code}) + "\n")
"""


def big_table(path):
    """A table of ROWS rows whose data file holds BIG-character strings
    (written by pypaimon with small ones, then replaced: fast)."""
    t = tb.create_table(path, schema("id BIGINT, s STRING"))
    tb.commit(t, [tb.write_batches(t, [pa.record_batch(
        {"id": pa.array(range(ROWS), pa.int64()), "s": ["x"] * ROWS})], False)], False)
    [d] = tb.data_files(tb.open_table(path))
    s = "x" * BIG
    with RowFileWriter(d.path, tb.file_schema(t, d.meta)) as w:
        for i in range(ROWS):
            w.write(pa.table({"id": pa.array([i], pa.int64()), "s": [s]}))
    size = os.path.getsize(d.path)

    def fix(record):
        record["_FILE"]["_FILE_SIZE"] = size
    rewrite_manifests(path, fix)
    return size


@pytest.mark.skipif(ASAN, reason="an address-space cap cannot hold ASan's shadow memory")
def test_head_of_big_rows_under_a_memory_cap(tmp_path):
    path = str(tmp_path / "t")
    assert big_table(path) < 64 << 10
    out = tmp_path / "head.jsonl"
    r = subprocess.run([sys.executable, "-c", CHILD, path, str(CAP), str(out)],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "MALLOC_ARENA_MAX": "2"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stderr.strip().splitlines()[-1]) == {"code": 0}
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["id"] == 0 and row["s"] == "x" * BIG
    # 3 rows of 16 MiB (and their block overhead) a batch: 64 MiB holds no 4th
    t = tb.open_table(path)
    assert [b.num_rows for b in tb.read_batches(t, tb.plan(t), ["id", "s"])] == [3] * 26 + [2]
    assert [b.num_rows for b in tb.read_batches(t, tb.plan(t), ["id"])] == [3] * 26 + [2]
