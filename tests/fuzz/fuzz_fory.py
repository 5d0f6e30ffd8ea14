#!/usr/bin/env python3
"""atheris fuzz target: see tests/fuzz/_targets.py (fory) and _schemas.py.

    python tests/fuzz/fuzz_fory.py [CORPUS_DIR ...] -max_total_time=60
    python tests/fuzz/fuzz_fory.py -atheris_runs=100000

With no corpus directory the seeds are generated in memory (valid inputs).
Every input must decode or raise a rowformat.RowFormatError; anything else
(another exception, a crash, a hang past -timeout, memory past
-rss_limit_mb) is a finding: libFuzzer writes it to crash-*/timeout-*/oom-*
files, and it belongs in tests/fuzz/regressions/fory/.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atheris

with atheris.instrument_imports(include=["rowformat", "_targets", "_schemas"]):
    import rowformat  # noqa: F401  (instrumented: Python-level coverage of the package)
    import _targets


def main():
    args = list(sys.argv)
    if not any(not a.startswith("-") for a in args[1:]):
        # no corpus dir given: write the seeds to a temporary one
        import tempfile
        import _schemas
        seeds = _schemas.row_reader_seeds() if "fory" == "row_reader" else _schemas.fory_seeds(_schemas.fory_cases())
        d = tempfile.mkdtemp(prefix="fuzz_fory_")
        for i, s in enumerate(seeds):
            with open(os.path.join(d, f"seed{i:03d}"), "wb") as f:
                f.write(s)
        args.append(d)
    if not any(a.startswith("-rss_limit_mb") for a in args):
        args.append("-rss_limit_mb=2048")
    if not any(a.startswith("-timeout") for a in args):
        args.append("-timeout=20")
    atheris.Setup(args, _targets.fory)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
