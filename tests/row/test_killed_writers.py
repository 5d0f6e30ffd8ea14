"""A writer killed with SIGKILL at any point leaves the target path holding
either nothing or the previous complete file, never a partial one.

A forked child rewrites the same path over and over (version 1, 2, ...),
reporting each version whose close() returned through a pipe; the parent
kills it after a random delay (seeded), then checks the path. Many rounds
land the kill in every phase: encoding, compressing, writing blocks, the
index and footer, fsync, rename."""
import os
import random
import select
import signal
import sys
import time

import pytest

from rowformat import RowFileReader, RowFileWriter, schema, verify

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32",
                                reason="needs fork and SIGKILL")

SCHEMA = schema("v BIGINT NOT NULL, i INT, s STRING, a ARRAY<INT>")
ROUNDS = 40


def rows_of(v: int):
    n = 300 + (v % 7) * 150
    return [(v, i, f"v{v}-row{i}-" + "x" * (i % 40), [i, v, None] if i % 3 else None) for i in range(n)]


def _child(path, first_version, threads, w):
    # In the forked child: write versions until killed; never return.
    try:
        v = first_version
        while True:
            with RowFileWriter(path, SCHEMA, block_size=2048, threads=threads) as writer:
                writer.write_rows(rows_of(v))
            os.write(w, v.to_bytes(8, "little"))
            v += 1
    finally:
        os._exit(1)


def _version_at(path):
    """The version held at path, checking that it is complete and exact."""
    if not os.path.exists(path):
        return None
    report = verify(path, SCHEMA)
    assert report.ok, f"partial or damaged file at the target path:\n{report}"
    with RowFileReader(path, SCHEMA, threads=1) as r:
        got = [tuple(row) for row in (r.get(i) for i in range(r.num_rows))]
    assert got, "empty file at the target path"
    v = got[0][0]
    want = [tuple(x) for x in rows_of(v)]
    assert got == want, f"the file at the target path is not exactly version {v}"
    return v


def test_sigkill_at_random_points_leaves_nothing_or_the_previous_file(tmp_path):
    rng = random.Random(20240607)
    path = str(tmp_path / "target.row")
    current = None          # version at path before the round
    next_version = 1
    outcomes = {"nothing": 0, "previous": 0, "new": 0}
    # warm up in the parent (first-use costs), so every forked child starts writing at once
    for _ in range(2):   # the second write is timed
        t0 = time.perf_counter()
        with RowFileWriter(tmp_path / "warmup.row", SCHEMA, block_size=2048, threads=1) as writer:
            writer.write_rows(rows_of(0))
        one_write = time.perf_counter() - t0
    os.unlink(tmp_path / "warmup.row")
    for round_ in range(ROUNDS):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                                    # pragma: no cover (child)
            os.close(r)
            _child(path, next_version, 1 + round_ % 2, w)
        os.close(w)
        # odd rounds: a kill within one write's time of the fork, before any write can
        # finish; even rounds: after tens of writes, at a random point of the loop. So
        # both outcomes occur however fast or loaded the machine is.
        time.sleep(rng.uniform(0, one_write) if round_ % 2 else rng.uniform(0.02, 0.2))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        done = []
        while select.select([r], [], [], 0)[0]:
            chunk = os.read(r, 8 * 1024)
            if not chunk:
                break
            done += [int.from_bytes(chunk[k:k + 8], "little") for k in range(0, len(chunk) - 7, 8)]
        os.close(r)
        last_done = done[-1] if done else current
        in_flight = (done[-1] + 1) if done else next_version
        got = _version_at(path)
        # the last completed version, or the one being renamed into place
        # when the kill came (rename done, report not yet written)
        assert got in (last_done, in_flight), (round_, got, last_done, in_flight)
        if got is None:
            outcomes["nothing"] += 1
        elif got == current:
            outcomes["previous"] += 1
        else:
            outcomes["new"] += 1
        current = got
        next_version = max(in_flight, (got or 0)) + 1
    # the seeded delays must have exercised both kinds of outcome
    assert outcomes["new"] > 0 and outcomes["previous"] + outcomes["nothing"] > 0, outcomes
    leftovers = [p for p in os.listdir(tmp_path) if p != "target.row"]
    # killed writers leave their temporary files (".target.row.*.tmp") behind, never the target
    assert all(p.startswith(".target.row.") and p.endswith(".tmp") for p in leftovers), leftovers
