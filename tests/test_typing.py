"""mypy passes on the package as it is installed (stubs for the compiled
modules included), with the project's [tool.mypy] settings."""
import pathlib
import subprocess
import sys

import pytest

import rowformat

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_mypy_passes_on_the_installed_package(tmp_path):
    pytest.importorskip("mypy")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "mypy-cache"), "-p", "rowformat"],
        capture_output=True, text=True, cwd=tmp_path)   # cwd: find the installed package
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "site-packages" in rowformat.__file__
