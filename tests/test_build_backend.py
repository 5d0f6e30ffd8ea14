"""build_backend/rowformat_build.py: isolated builds (their tools in a throwaway
environment) get a temporary build directory and no rebuild on import; builds
whose tools stay installed (--no-build-isolation, run.sh) keep pyproject's."""
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.source_tree


@pytest.fixture
def backend(monkeypatch):
    pytest.importorskip("scikit_build_core", reason="the build backend wraps scikit-build-core, "
                        "installed only where the build tools are (run.sh's .venv)")
    monkeypatch.syspath_prepend(str(ROOT / "build_backend"))
    import rowformat_build
    return rowformat_build


def test_tools_installed_here_keep_the_persistent_build(backend):
    # this interpreter has scikit-build-core in its own site-packages
    assert backend.build_tools_persist()
    assert backend._settings(None) == {}


@pytest.mark.parametrize("case", ["pip overlay", "throwaway venv"])
def test_isolated_builds_use_a_temporary_dir_and_no_rebuild(backend, monkeypatch, case):
    if case == "pip overlay":    # pip: the tools on a path outside site-packages
        monkeypatch.setattr(backend.site, "getsitepackages", lambda: ["/nonexistent/site-packages"])
    else:                        # pypa/build: a venv named build-env-* that runs the build
        monkeypatch.setattr(sys, "prefix", "/tmp/build-env-abc123")
    assert not backend.build_tools_persist()
    assert backend._settings(None) == {"build-dir": "", "editable.rebuild": "false"}
    # what the caller chose with -C stands
    assert backend._settings({"build-dir": "build/mine"})["build-dir"] == "build/mine"
