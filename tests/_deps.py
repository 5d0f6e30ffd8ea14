"""Optional test dependencies that some interpreters cannot install, skipped
with a reason that says why."""
import os
import sys

import pytest

# scripts/sanitize.sh preloads libasan: tests whose memory limits or
# measurements ASan's shadow memory breaks skip under it
ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")


def importorskip_pypaimon():
    """pypaimon, or a skip saying why it is missing."""
    if sys.version_info >= (3, 14):
        reason = ("pypaimon==2.1.0 requires pyarrow<20, which publishes no wheel for "
                  f"CPython {sys.version_info[0]}.{sys.version_info[1]}: the [test] extra "
                  "leaves pypaimon out there")
    else:
        reason = "pypaimon is not installed (the [test] extra installs it)"
    return pytest.importorskip("pypaimon", reason=reason)
