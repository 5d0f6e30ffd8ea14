"""Fixtures for the pytest-benchmark suites in benchmarks/.

    pytest benchmarks/ [--benchmark-only] [-k rowformat]      # BENCH_ROWS=20000 by default

The suites use the same adapters (peers.py) and floor (floor.py) as compare.py,
at a smaller size: set BENCH_ROWS to change it. Slow peers are capped at their
max_rows (pypaimon, fastavro). Peers whose package is missing are skipped.
"""
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# `python -m pytest` puts the working directory on sys.path: from the repository root
# that would import the bare source tree (no compiled modules) instead of the
# installed package.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != ROOT]
sys.path.insert(0, HERE)

import dataset  # noqa: E402
import peers  # noqa: E402

BENCH_ROWS = int(os.environ.get("BENCH_ROWS", "20000"))
PEER_KEYS = list(peers.ALL)


@pytest.fixture(scope="session")
def table():
    return dataset.generate(BENCH_ROWS)


@pytest.fixture(scope="session")
def bench_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("bench")


def make_peer(key):
    try:
        return peers.RowFormat(threads=2) if key == "rowformat" else peers.make(key)
    except ImportError as e:
        if key == "rowformat":
            raise
        pytest.skip(f"{key}: {e}")


def rows_for(peer, table):
    caps = [c for c in (peer.max_rows_write, peer.max_rows_scan) if c]
    n = min([table.num_rows] + caps)
    return table if n == table.num_rows else table.slice(0, n)


@pytest.fixture(scope="session")
def written(table, bench_dir):
    """key -> (peer, path, table written), each file written once per session."""
    cache = {}

    def get(key):
        if key not in cache:
            peer = make_peer(key)
            t = rows_for(peer, table)
            path = str(bench_dir / (key + peer.ext))
            peer.write(t, path)
            cache[key] = (peer, path, t)
        return cache[key]
    return get


@pytest.fixture(scope="session")
def rng():
    return np.random.default_rng(7)
