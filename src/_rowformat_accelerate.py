"""``ROWFORMAT_ACCELERATE=1``: ``rowformat.paimon.accelerate()`` in every
process that imports pypaimon, including processes started by others
(DataLoader workers, Ray tasks, Spark executors).

``rowformat-accelerate.pth`` (beside this module in site-packages) imports
this module at interpreter start-up only when the variable is set; this
module imports nothing but ``sys`` and waits, as an import hook, for the
first import of ``pypaimon``, then turns acceleration on once that package
has loaded. A pypaimon that cannot be accelerated is left stock, with one
``rowformat.paimon.AccelerationWarning``.

The hook stays until pypaimon has really loaded through it: a lookup alone
(``importlib.util.find_spec("pypaimon")``, an optional-dependency check) or
a first import that fails leaves it in place for the next import. A
pypaimon that loads some other way (a finder ahead of the hook) is stock:
the next import the hook sees says so, with the same warning.
"""
import sys

_loading = False        # pypaimon's package is executing through the hook


class _AccelerateAfter:
    """The loader of pypaimon's package, then ``accelerate_or_warn()``."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        global _loading
        _loading = True
        try:
            self._loader.exec_module(module)
        finally:
            _loading = False
        uninstall()                         # loaded: the hook's work is done
        from rowformat.paimon import accelerate_or_warn
        accelerate_or_warn()


class _Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "pypaimon":
            if not _loading and sys.modules.get("pypaimon") is not None:
                _loaded_without_hook()
            return None
        for finder in sys.meta_path:        # the real package, as the finders below find it
            find = getattr(finder, "find_spec", None) if finder is not _Finder else None
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _AccelerateAfter(spec.loader)
                return spec
        return None


def _loaded_without_hook():
    uninstall()
    from rowformat.paimon import PaimonIntegrationError, warn_once
    warn_once(PaimonIntegrationError(
        "ROWFORMAT_ACCELERATE is set, but pypaimon was imported without rowformat's import "
        "hook (another finder ahead of it on sys.meta_path?)"))


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
