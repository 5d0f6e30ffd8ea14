"""``ROWFORMAT_ACCELERATE=1``: ``rowformat.paimon.accelerate()`` in every
process that imports pypaimon, including processes started by others
(DataLoader workers, Ray tasks, Spark executors).

``rowformat-accelerate.pth`` (beside this module in site-packages) imports
this module at interpreter start-up only when the variable is set; this
module imports nothing but ``sys`` and waits, as an import hook, for the
first import of ``pypaimon``, then turns acceleration on once that package
has loaded. A pypaimon that cannot be accelerated is left stock, with one
``rowformat.paimon.AccelerationWarning``.
"""
import sys


class _AccelerateAfter:
    """The loader of pypaimon's package, then ``accelerate_or_warn()``."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        from rowformat.paimon import accelerate_or_warn
        accelerate_or_warn()


class _Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "pypaimon":
            return None
        uninstall()                       # once: the finders below find the real package
        import importlib.util
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _AccelerateAfter(spec.loader)
        return spec


def install():
    """Waits for pypaimon's first import (at once if it is already imported)."""
    if "pypaimon" in sys.modules:
        from rowformat.paimon import accelerate_or_warn
        accelerate_or_warn()
    elif _Finder not in sys.meta_path:
        sys.meta_path.insert(0, _Finder)


def uninstall():
    if _Finder in sys.meta_path:
        sys.meta_path.remove(_Finder)
