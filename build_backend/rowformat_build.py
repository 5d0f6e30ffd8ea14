"""rowformat's build backend: scikit-build-core, deciding one thing itself.

pyproject.toml keeps a persistent build directory (build/{wheel_tag}) with
rebuild-on-import, which is what a contributor's non-isolated editable install
(`pip install --no-build-isolation -e .`, as run.sh does) wants: the compiled
modules rebuild on import when a .pyx changes. That is only sound while the
build tools (scikit-build-core, Cython, cython-cmake) stay installed next to
the package. An isolated build (plain `pip install .` or `pip install -e .`)
gets them in a temporary environment that the frontend deletes afterwards:
rebuilding on import would then fail, and reusing build/ would rewrite its
CMake cache to point into that deleted environment (breaking run.sh's .venv).
So an isolated build gets a temporary build directory and no rebuild on import,
unless the caller chose either setting with -C.
"""

from __future__ import annotations

import os
import site
import sys

import scikit_build_core.build as _skb
from scikit_build_core.build import build_sdist, get_requires_for_build_sdist  # noqa: F401


def _under(path: str, parent: str) -> bool:
    parent = os.path.realpath(parent)
    return os.path.realpath(path).startswith(parent.rstrip(os.sep) + os.sep)


def build_tools_persist() -> bool:
    """True when the build tools live in the environment being installed into.

    pip's isolated build puts them on an overlay outside the interpreter's own
    site-packages; pypa/build and uv make a throwaway virtualenv (build-env-*
    in the temp directory, .tmp* in uv's cache) and run the build there.
    """
    here = os.path.dirname(_skb.__file__)
    if not any(_under(here, p) for p in site.getsitepackages()):
        return False
    return not os.path.basename(os.path.realpath(sys.prefix)).startswith(("build-env-", ".tmp"))


def _settings(config_settings: dict | None) -> dict:
    settings = dict(config_settings or {})
    if not build_tools_persist():
        settings.setdefault("build-dir", "")  # "": a temporary directory
        settings.setdefault("editable.rebuild", "false")
    return settings


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _skb.build_wheel(wheel_directory, _settings(config_settings), metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _skb.build_editable(wheel_directory, _settings(config_settings), metadata_directory)


def get_requires_for_build_wheel(config_settings=None):
    return _skb.get_requires_for_build_wheel(_settings(config_settings))


def get_requires_for_build_editable(config_settings=None):
    return _skb.get_requires_for_build_editable(_settings(config_settings))


# scikit-build-core offers these two only where it can (its own condition)
if hasattr(_skb, "prepare_metadata_for_build_wheel"):

    def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
        return _skb.prepare_metadata_for_build_wheel(metadata_directory, _settings(config_settings))

    def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
        return _skb.prepare_metadata_for_build_editable(metadata_directory, _settings(config_settings))
