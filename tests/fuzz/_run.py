"""The shared main of the atheris fuzz targets (fuzz_<target>.py).

With no corpus directory the seeds are generated in memory (valid inputs).
Every input must decode or raise a rowformat.RowFormatError; anything else
(another exception, a crash, a hang past -timeout, memory past
-rss_limit_mb) is a finding: libFuzzer writes it to crash-*/timeout-*/oom-*
files, and it belongs in tests/fuzz/regressions/<target>/.
"""
import os
import sys
import tempfile

import atheris

with atheris.instrument_imports(include=["rowformat", "tests.fuzz"]):
    import rowformat  # noqa: F401  (instrumented: Python-level coverage of the package)
    from tests.fuzz import _schemas, _targets


# The interpreter with pyarrow, atheris and the package loaded peaks at about
# 150 MB while fuzzing; what an input may legitimately add is bounded by the
# targets' LIMITS (_targets.py: under 100 MB). 384 MB flags any input that
# makes decoding allocate a few times more than those bounds allow.
RSS_LIMIT_MB = int(os.environ.get("FUZZ_RSS_MB", "384"))


def main(target: str):
    args = list(sys.argv)
    if not any(not a.startswith("-") for a in args[1:]):
        # no corpus dir given: write the seeds to a temporary one
        d = tempfile.mkdtemp(prefix=f"fuzz_{target}_")
        for i, s in enumerate(_schemas.seeds_for(target)):
            with open(os.path.join(d, f"seed{i:03d}"), "wb") as f:
                f.write(s)
        args.append(d)
    if not any(a.startswith("-rss_limit_mb") for a in args):
        args.append(f"-rss_limit_mb={RSS_LIMIT_MB}")
    if not any(a.startswith("-timeout") for a in args):
        args.append("-timeout=20")
    atheris.Setup(args, getattr(_targets, target))
    atheris.Fuzz()
