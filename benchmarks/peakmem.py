"""Peak-RSS measurement for one operation in the current process.

ru_maxrss survives fork + exec (a child started by a big parent inherits the
parent's high-water mark), so it cannot measure a child's operation alone. On
Linux, writing "5" to /proc/self/clear_refs resets VmHWM to the current RSS:
reset just before the operation, read VmHWM after it. Elsewhere, fall back to
ru_maxrss (an upper bound).
"""
from __future__ import annotations

import gc
import os
import re
import resource


def rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import psutil
        return psutil.Process().memory_info().rss


def _hwm() -> int | None:
    try:
        with open("/proc/self/status") as f:
            m = re.search(r"VmHWM:\s+(\d+) kB", f.read())
        return int(m.group(1)) * 1024 if m else None
    except OSError:
        return None


class Peak:
    """with Peak() as p: op()   ->  p.base (RSS before), p.peak (high-water during), p.extra."""

    def __enter__(self):
        gc.collect()
        self.reset = False
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.reset = _hwm() is not None
        except OSError:
            pass
        self.base = rss()
        return self

    def __exit__(self, *exc):
        hw = _hwm() if self.reset else None
        self.peak = hw if hw is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        self.extra = max(0, self.peak - self.base)
        self.method = "VmHWM reset via clear_refs" if hw is not None else "ru_maxrss"
