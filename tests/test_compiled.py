"""The compiled modules are the ones in use: there is no pure-Python fallback."""
import importlib
import importlib.machinery

import pytest


@pytest.mark.parametrize("name", ["rowformat._rowcodec", "rowformat._blockindex", "rowformat._blob",
                                  "rowformat.fory._row", "rowformat._pyrows"])
def test_codec_modules_are_extensions(name):
    mod = importlib.import_module(name)
    assert mod.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), mod.__file__
    # an editable install wraps the loader (to rebuild on import); a wheel's is the plain one
    loader = getattr(mod.__loader__, "_skbuild_loader", mod.__loader__)
    assert isinstance(loader, importlib.machinery.ExtensionFileLoader), loader
