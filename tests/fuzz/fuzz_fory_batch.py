#!/usr/bin/env python3
"""atheris fuzz target: see tests/fuzz/_targets.py (fory_batch) and _run.py.

    python -m tests.fuzz.fuzz_fory_batch [CORPUS_DIR ...] -max_total_time=60
    python -m tests.fuzz.fuzz_fory_batch -atheris_runs=100000

Its seeds are the ``fory`` target's (scripts/fuzz.sh writes those) and the
inputs that build an array's buffers directly, added here to the corpus.
"""
import pathlib
import sys
import tempfile

from tests.fuzz import _run

if __name__ == "__main__":
    from tests.fuzz import _targets
    dirs = [a for a in sys.argv[1:] if not a.startswith("-")]
    if not dirs:
        dirs = [tempfile.mkdtemp(prefix="fuzz_fory_batch_")]
        sys.argv.append(dirs[0])
    for i, s in enumerate(_targets.fory_batch_seeds()):
        p = pathlib.Path(dirs[0], f"batch-seed{i:03d}")
        if not p.exists():
            p.write_bytes(s)
    _run.main("fory_batch")
