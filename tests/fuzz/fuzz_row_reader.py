#!/usr/bin/env python3
"""atheris fuzz target: see tests/fuzz/_targets.py (row_reader) and _run.py.

    python tests/fuzz/fuzz_row_reader.py [CORPUS_DIR ...] -max_total_time=60
    python tests/fuzz/fuzz_row_reader.py -atheris_runs=100000
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _run  # noqa: E402

if __name__ == "__main__":
    _run.main("row_reader")
