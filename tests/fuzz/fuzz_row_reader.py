#!/usr/bin/env python3
"""atheris fuzz target: see tests/fuzz/_targets.py (row_reader) and _run.py.

    python -m tests.fuzz.fuzz_row_reader [CORPUS_DIR ...] -max_total_time=60
    python -m tests.fuzz.fuzz_row_reader -atheris_runs=100000
"""
from tests.fuzz import _run

if __name__ == "__main__":
    _run.main("row_reader")
