"""Whether Spark's Python workers can import rowformat.

Spark runs its Python workers (the ones that plan and read a data source,
and run UDFs) with ``PYSPARK_PYTHON``, ``python3`` from PATH when unset: a
job started as ``.venv/bin/python job.py`` without activating the venv gets
workers of another Python, and fails inside them with DATA_SOURCE_NOT_FOUND
or ModuleNotFoundError. :func:`check_workers` finds that out on the driver
first, and says how to fix it."""
from __future__ import annotations

import os
import subprocess
import sys

from ..errors import WorkerPythonError

_PROBE = "import rowformat._rowcodec, rowformat.spark, pyarrow"
_checked: dict[str, str | None] = {}    # python path -> the failure, or None


def _probe(python: str) -> str | None:
    """None when ``python`` imports rowformat, else why not."""
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True,
                              timeout=120, env=os.environ.copy())
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"it does not run: {e}"
    if done.returncode == 0:
        return None
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else f"it exited with status {done.returncode}"


def check_workers(spark) -> None:
    """Raises WorkerPythonError unless ``spark``'s worker Python imports
    rowformat (probed once per interpreter path and process)."""
    python = spark.sparkContext.pythonExec
    if python in (sys.executable, None):
        return
    if python not in _checked:
        _checked[python] = _probe(python)
    failure = _checked[python]
    if failure is not None:
        raise WorkerPythonError(
            f"Spark runs its Python workers with {python!r} (spark.sparkContext.pythonExec), "
            f"which cannot import rowformat ({failure}), so the paimon-row source and "
            f"rowformat's UDFs would fail in the workers (DATA_SOURCE_NOT_FOUND, "
            f"ModuleNotFoundError). Point PYSPARK_PYTHON at this Python before the "
            f"SparkSession starts: os.environ['PYSPARK_PYTHON'] = sys.executable "
            f"(here {sys.executable!r}), or export PYSPARK_PYTHON={sys.executable}, or set "
            f"spark.pyspark.python; or activate the virtualenv")


def check_active(session=None) -> None:
    """check_workers on ``session`` or the active session, if any."""
    if session is None:
        from pyspark.sql import SparkSession
        session = SparkSession.getActiveSession()
    if session is not None:
        check_workers(session)
