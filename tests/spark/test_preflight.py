"""The driver says so, in one clear error, when Spark's Python workers
cannot import rowformat (no Spark session needed: a stand-in names the
workers' Python)."""
import os
import stat
import sys
import types

import pytest

import rowformat.spark
from rowformat.errors import WorkerPythonError
from rowformat.spark import preflight


def _session(python):
    return types.SimpleNamespace(sparkContext=types.SimpleNamespace(pythonExec=python))


def test_a_worker_python_without_rowformat_is_named_with_the_fix(tmp_path, monkeypatch):
    # a real Python that cannot see this venv's packages (-I -S: no site-packages)
    bare = tmp_path / "python3"
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")
    bare.chmod(bare.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(preflight, "_checked", {})
    with pytest.raises(WorkerPythonError) as e:
        rowformat.spark.check_workers(_session(str(bare)))
    text = str(e.value)
    assert str(bare) in text and "ModuleNotFoundError" in text
    assert "PYSPARK_PYTHON" in text and sys.executable in text
    with pytest.raises(WorkerPythonError, match="does not run"):
        preflight.check_workers(_session(os.fspath(tmp_path / "no-such-python")))
    # this Python, or another path to a Python that has rowformat, passes
    preflight.check_workers(_session(sys.executable))
    wrapper = tmp_path / "venv-python"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    preflight.check_workers(_session(str(wrapper)))
    assert preflight._checked[str(wrapper)] is None        # probed once, then remembered
