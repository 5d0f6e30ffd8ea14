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


# A user's script: the public names, a reader and a writer in `with` blocks, an
# error class. Strict checkers must see the names as exported and the types as known.
USER_SCRIPT = '''
from rowformat import CorruptFileError, RowFileReader, RowFileWriter, schema


def main(path: str) -> int:
    with RowFileWriter(path, schema("a INT")) as w:
        w.write_rows([(1,)])
    with RowFileReader(path, "a INT") as r:
        n: int = r.num_rows
    try:
        r.get(0)
    except CorruptFileError:
        return -1
    return n
'''


def test_a_users_script_passes_strict_type_checkers(tmp_path):
    pytest.importorskip("mypy")
    pyright = pathlib.Path(sys.executable).with_name("basedpyright")
    if not pyright.exists():
        pytest.skip("basedpyright is not installed (pip install -e .[test])")
    (tmp_path / "use.py").write_text(USER_SCRIPT)
    (tmp_path / "pyrightconfig.json").write_text('{"typeCheckingMode": "strict"}')
    proc = subprocess.run([str(pyright), "--pythonpath", sys.executable, "use.py"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), "use.py"],
        capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_top_level_lists_its_public_api():
    assert "RowFileReader" in rowformat.__all__ and "ColumnNotFoundError" in rowformat.__all__
    missing = [n for n in rowformat.__all__ if not hasattr(rowformat, n)]
    assert missing == []
    public = {n for n in vars(rowformat) if not n.startswith("_")
              and not isinstance(getattr(rowformat, n), type(rowformat))}
    assert public - set(rowformat.__all__) == set()
