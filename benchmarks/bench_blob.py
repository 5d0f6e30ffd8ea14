"""Benchmark of rowformat's .blob reader against pypaimon 2.1.0's.

    python benchmarks/bench_blob.py [--many N] [--size BYTES] [--big-gib G] [--dir DIR]

1. Random access: a file of N blobs; time per random row through
   ``BlobFileReader.get`` and through pypaimon's ``FormatBlobReader`` (opened
   once, ``read_values_at([row])``), and the reads our reader issues per row.
2. Streaming one huge blob (default 1 GiB): written from a generator through
   ``BlobFileWriter`` (chunked), then read end to end through ``open(0)`` in
   1 MiB pieces (CRC checked as it streams), through pypaimon's default path
   (``to_data()``) and pypaimon's descriptor path (``new_input_stream``).
   Each measurement runs in a fresh subprocess, so its peak RSS
   (``ru_maxrss``) is its own; tracemalloc peaks are reported alongside.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc

CHUNK = 1 << 20


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024     # Linux: KiB


class _Pattern:
    """A readable file object producing ``size`` bytes without holding them."""

    def __init__(self, size):
        self.left = size
        self.block = bytes(range(256)) * (CHUNK // 256)

    def read(self, n=-1):
        n = self.left if n is None or n < 0 else min(n, self.left)
        n = min(n, len(self.block))
        self.left -= n
        return self.block[:n]


def _paimon_reader(path, blob_as_descriptor=False):
    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.read.reader.format_blob_reader import FormatBlobReader
    from pypaimon.schema.data_types import AtomicType, DataField
    fields = [DataField(0, "b", AtomicType("BLOB"))]
    return FormatBlobReader(LocalFileIO(), str(path), ["b"], fields, None, blob_as_descriptor)


# -- cases, each run in its own process ---------------------------------------------------
def case_write_many(path, n, size):
    from rowformat.blob import BlobFileWriter
    rnd = random.Random(1)
    t = time.perf_counter()
    with BlobFileWriter(path, "BLOB") as w:
        for _ in range(n):
            w.write(rnd.randbytes(size))
    return {"seconds": time.perf_counter() - t}


def case_random_ours(path, rows):
    from rowformat.blob import BlobFileReader
    BlobFileReader(path, "BLOB").close()             # same warm-up as pypaimon's
    t = time.perf_counter()
    r = BlobFileReader(path, "BLOB")
    opened = time.perf_counter() - t
    reads = []
    real = r._source.read
    r._source.read = lambda o, n: reads.append(n) or real(o, n)
    r.get(rows[0])                                   # warm up
    reads.clear()
    t = time.perf_counter()
    total = sum(len(r.get(i)) for i in rows)
    dt = time.perf_counter() - t
    return {"open_s": opened, "us_per_row": dt / len(rows) * 1e6, "bytes": total,
            "reads_per_row": len(reads) / len(rows), "bytes_read_per_row": sum(reads) / len(rows)}


def case_random_paimon(path, rows):
    _paimon_reader(path).close()                     # imports and index cache outside the timing
    from pypaimon.read.reader import format_blob_reader
    format_blob_reader._BLOB_INDEX_CACHE._cache.clear()
    t = time.perf_counter()
    r = _paimon_reader(path)
    opened = time.perf_counter() - t
    r.read_values_at([rows[0]])
    t = time.perf_counter()
    total = sum(len(r.read_values_at([i])[0].to_data()) for i in rows)
    dt = time.perf_counter() - t
    r.close()
    return {"open_s": opened, "us_per_row": dt / len(rows) * 1e6, "bytes": total}


def case_write_big(path, size):
    from rowformat.blob import BlobFileWriter
    tracemalloc.start()
    t = time.perf_counter()
    with BlobFileWriter(path, "BLOB", chunk_size=CHUNK) as w:
        w.write(_Pattern(size))
    dt = time.perf_counter() - t
    return {"seconds": dt, "MiB_s": size / dt / 2**20,
            "tracemalloc_peak_MiB": tracemalloc.get_traced_memory()[1] / 2**20, "rss_MiB": _rss_mib()}


def _drain(f):
    n = 0
    while chunk := f.read(CHUNK):
        n += len(chunk)
    return n


def case_stream_ours(path, verify=True):
    from rowformat.blob import BlobFileReader
    BlobFileReader(path, "BLOB").close()
    base = _rss_mib()
    tracemalloc.start()
    t = time.perf_counter()
    with BlobFileReader(path, "BLOB", verify=verify) as r, r.open(0) as f:
        n = _drain(f)                           # CRC verified at the end unless verify=False
    dt = time.perf_counter() - t
    return {"bytes": n, "seconds": dt, "MiB_s": n / dt / 2**20, "rss_before_MiB": base,
            "tracemalloc_peak_MiB": tracemalloc.get_traced_memory()[1] / 2**20, "rss_MiB": _rss_mib()}


def case_stream_paimon(path, descriptor):
    _paimon_reader(path).close()
    from pypaimon.read.reader import format_blob_reader
    format_blob_reader._BLOB_INDEX_CACHE._cache.clear()
    base = _rss_mib()
    tracemalloc.start()
    t = time.perf_counter()
    r = _paimon_reader(path, blob_as_descriptor=descriptor)
    blob = r.read_values_at([0])[0]
    if descriptor:
        with blob.new_input_stream() as f:
            n = _drain(f)
    else:
        n = len(blob.to_data())
    r.close()
    dt = time.perf_counter() - t
    return {"bytes": n, "seconds": dt, "MiB_s": n / dt / 2**20, "rss_before_MiB": base,
            "tracemalloc_peak_MiB": tracemalloc.get_traced_memory()[1] / 2**20, "rss_MiB": _rss_mib()}


CASES = {"write_many": case_write_many, "random_ours": case_random_ours,
         "random_paimon": case_random_paimon, "write_big": case_write_big,
         "stream_ours": case_stream_ours, "stream_paimon": case_stream_paimon}


def _run(name, *args):
    out = subprocess.run([sys.executable, __file__, "--case", name, json.dumps(args)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _fmt(d):
    return ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in d.items())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--many", type=int, default=20_000, help="blobs in the random-access file")
    ap.add_argument("--size", type=int, default=16 << 10, help="bytes per blob in that file")
    ap.add_argument("--lookups", type=int, default=2000)
    ap.add_argument("--big-gib", type=float, default=1.0)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("args", nargs="?", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.case:
        print(json.dumps(CASES[a.case](*json.loads(a.args))))
        return
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        many = os.path.join(d, "many.blob")
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
        print(f"write {a.many} x {a.size} B:", _fmt(_run("write_many", many, a.many, a.size)))
        rows = random.Random(2).sample(range(a.many), min(a.lookups, a.many))
        print("random get, rowformat:", _fmt(_run("random_ours", many, rows)))
        print("random get, pypaimon: ", _fmt(_run("random_paimon", many, rows)))
        os.unlink(many)
        big = os.path.join(d, "big.blob")
        size = int(a.big_gib * 2**30)
        print(f"write one {size} B blob from a stream:", _fmt(_run("write_big", big, size)))
        print("stream open(0), rowformat:        ", _fmt(_run("stream_ours", big)))
        print("same, verify=False, rowformat:     ", _fmt(_run("stream_ours", big, False)))
        print("to_data(), pypaimon:               ", _fmt(_run("stream_paimon", big, False)))
        print("descriptor stream, pypaimon:       ", _fmt(_run("stream_paimon", big, True)))


if __name__ == "__main__":
    main()
