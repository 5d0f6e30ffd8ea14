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
    # run beside the package that is imported: the source tree in an editable
    # install, site-packages for a wheel
    home = pathlib.Path(rowformat.__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(CONFIG),
         "--cache-dir", str(tmp_path / "mypy-cache"), "-p", "rowformat"],
        capture_output=True, text=True, cwd=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
