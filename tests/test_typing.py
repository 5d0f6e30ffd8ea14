"""mypy passes on the package as it is imported (stubs for the compiled
modules included), with the project's [tool.mypy] settings."""
import pathlib
import subprocess
import sys

import pytest

import rowformat

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_mypy_passes_on_the_package(tmp_path):
    pytest.importorskip("mypy")
    # From the source tree for an editable install (whose import hook mypy
    # does not see); for a wheel, from elsewhere: mypy finds it in
    # site-packages through its py.typed.
    home = pathlib.Path(rowformat.__file__).resolve().parents[1]
    cwd = home if (home / "pyproject.toml").exists() else tmp_path
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(CONFIG),
         "--cache-dir", str(tmp_path / "mypy-cache"), "-p", "rowformat"],
        capture_output=True, text=True, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
