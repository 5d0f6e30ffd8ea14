"""The compiled modules are the ones in use: there is no pure-Python fallback."""
import importlib.machinery

import rowformat
from rowformat import _blockindex, _rowcodec


def test_codec_modules_are_extensions():
    for mod in (_rowcodec, _blockindex):
        assert mod.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), mod.__file__
        assert isinstance(mod.__loader__, importlib.machinery.ExtensionFileLoader)


def test_package_is_the_installed_one():
    # tests must exercise the built package, never the source tree
    assert "site-packages" in rowformat.__file__, rowformat.__file__
