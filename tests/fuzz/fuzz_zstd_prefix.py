#!/usr/bin/env python3
"""atheris fuzz target: see tests/fuzz/_targets.py (zstd_prefix) and _run.py.

    python -m tests.fuzz.fuzz_zstd_prefix [CORPUS_DIR ...] -max_total_time=60
    python -m tests.fuzz.fuzz_zstd_prefix -atheris_runs=100000
"""
from tests.fuzz import _run

if __name__ == "__main__":
    _run.main("zstd_prefix")
