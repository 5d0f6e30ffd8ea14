"""pypaimon tables with their ``.row`` data files and ``.blob`` files read and
written by rowformat.

::

    import rowformat.paimon

    rowformat.paimon.accelerate()          # every table of this process, until restore()
    ...
    rowformat.paimon.restore()

    with rowformat.paimon.accelerated():   # only inside the block (nests; thread-safe)
        table.new_read_builder().new_read().to_arrow(splits)

    rowformat.paimon.status()              # what is patched, and why anything is not

Processes that nobody tells (DataLoader workers, Ray tasks, Spark
executors) turn acceleration on by themselves when started with
``ROWFORMAT_ACCELERATE=1`` in their environment: the first import of pypaimon
then calls :func:`accelerate` (without it, nothing of rowformat is imported).

The patched attributes are listed, with what each does, in
``rowformat.paimon._patches.POINTS``; ``status().patched`` names them. Only
pypaimon releases rowformat was tested with (:data:`TESTED_VERSIONS`) are
accelerated, and only when each patched attribute is pypaimon's own with a
tested signature; anything else raises :class:`PaimonIntegrationError` from
:func:`accelerate` and leaves pypaimon untouched. Where rowformat turns
acceleration on by itself (the table functions of
:mod:`rowformat.paimon.tables`, the Spark source, the ``rowformat`` command,
``ROWFORMAT_ACCELERATE``), a pypaimon that cannot be accelerated is read
stock, with one :class:`AccelerationWarning` per process that says why.

A malformed data or ``.blob`` file raises :class:`rowformat.CorruptFileError`
naming the file.

Patches are process-wide (every thread sees them). ``accelerate()`` and
``restore()`` are idempotent; ``accelerate()`` stays on until ``restore()``.
``accelerated()`` turns acceleration on for the outermost block of nested
uses (in any threads) and off when the last one exits, unless
``accelerate()`` turned it on for good; ``restore()`` turns it off at once,
whatever blocks are open. pypaimon writes a table's data files in
``prepare_commit()`` (and reads lazily, batch by batch): both must run
inside the block.
"""
from __future__ import annotations

import contextlib
import dataclasses
import threading
import warnings
from typing import Iterator, Optional

from ..errors import PaimonIntegrationError, UnsafeCommitError
from ._after_commit import MaintenanceWarning
from ._patches import TESTED_VERSIONS

__all__ = ["accelerate", "restore", "accelerated", "is_accelerated", "status",
           "allow_unsafe_commits", "AccelerationStatus", "AccelerationWarning",
           "MaintenanceWarning", "PaimonIntegrationError", "UnsafeCommitError", "TESTED_VERSIONS", "ENV_VAR"]


def allow_unsafe_commits(allow: bool = True) -> None:
    """Lets accelerated commits to a store without an atomic "create if
    absent" go through pypaimon's own, non-atomic path, for a job that is
    the table's only writer (by default they raise UnsafeCommitError; in
    worker processes ``ROWFORMAT_ALLOW_UNSAFE_COMMITS=1``)."""
    from ._commit import allow_unsafe_commits as allow_
    allow_(allow)

ENV_VAR = "ROWFORMAT_ACCELERATE"


class AccelerationWarning(UserWarning):
    """rowformat turned acceleration on by itself and could not: pypaimon
    reads and writes ``.row`` files stock (correct, about 100x slower)."""


@dataclasses.dataclass(frozen=True)
class AccelerationStatus:
    """What :func:`status` reports."""
    accelerated: bool           # pypaimon's .row and .blob files go through rowformat now
    pypaimon: Optional[str]     # the installed version, None when not installed
    patched: tuple              # the attributes replaced (when accelerated) or to replace
    skipped: dict               # optional attributes this pypaimon lacks -> why
    reason: Optional[str]       # why acceleration cannot apply, None when it can
    files_opened: int           # .row and .blob files rowformat opened for pypaimon here
    commits: dict = dataclasses.field(default_factory=dict)
                                # store -> how accelerated commits were made there
                                # (an atomic create, or refused and why: _commit)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


_LOCK = threading.RLock()
_explicit = False               # accelerate() turned it on
_depth = 0                      # open accelerated() blocks
_applied = None                 # the Plan in place, when on
_warned = False


def _apply() -> None:
    global _applied
    if _applied is not None:
        return
    from . import _patches
    plan = _patches.plan()
    _patches.apply(plan)
    _applied = plan


def _undo() -> None:
    global _applied
    plan, _applied = _applied, None
    if plan is not None:
        from . import _patches
        _patches.undo(plan)


def accelerate() -> None:
    """Reads and writes the ``.row`` data files and ``.blob`` files of every
    pypaimon table in this process through rowformat, until :func:`restore`. Idempotent.
    Raises :class:`PaimonIntegrationError` (and patches nothing) for a
    pypaimon that cannot be accelerated."""
    global _explicit
    with _LOCK:
        _apply()
        _explicit = True


def restore() -> None:
    """Puts pypaimon's own reader and writers back, at once (also inside
    open :func:`accelerated` blocks). Idempotent."""
    global _explicit, _depth
    with _LOCK:
        _explicit = False
        _depth = 0
        _undo()


def is_accelerated() -> bool:
    """Whether pypaimon's ``.row`` and ``.blob`` files currently go through rowformat."""
    with _LOCK:
        return _applied is not None


@contextlib.contextmanager
def accelerated() -> Iterator[None]:
    """Acceleration inside the ``with`` block. Blocks nest and may be
    open in several threads at once: acceleration stays on until the last
    one exits (and beyond, if :func:`accelerate` was called)."""
    global _depth
    with _LOCK:
        _apply()
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            if _depth > 0:
                _depth -= 1
                if _depth == 0 and not _explicit:
                    _undo()


def warn_once(reason: Exception) -> None:
    """One :class:`AccelerationWarning` per process, saying why acceleration
    cannot apply; for the places where rowformat turns it on by itself."""
    global _warned
    with _LOCK:
        warned, _warned = _warned, True
    if not warned:
        warnings.warn(f"rowformat cannot accelerate pypaimon, which reads and writes .row "
                      f"files itself (about 100x slower): {reason}", AccelerationWarning,
                      stacklevel=3)


def accelerate_or_warn() -> bool:
    """:func:`accelerate`, or, when this pypaimon cannot be accelerated,
    :func:`warn_once` (pypaimon then stays stock)."""
    try:
        accelerate()
        return True
    except PaimonIntegrationError as e:
        warn_once(e)
        return False


def status() -> AccelerationStatus:
    """Whether acceleration is on, the pypaimon version, what is (or would
    be) patched, and why anything is not. Imports pypaimon."""
    from . import _commit, _patches, _reader
    with _LOCK:
        plan = _applied
        reason = None
        if plan is None:
            try:
                plan = _patches.plan()
            except PaimonIntegrationError as e:
                reason = str(e)
        return AccelerationStatus(
            accelerated=_applied is not None, pypaimon=_patches.pypaimon_version(),
            patched=tuple(p.point.name for p in plan.patches) if plan is not None else (),
            skipped=dict(plan.skipped) if plan is not None else {},
            reason=reason, files_opened=_reader.files_opened(), commits=_commit.commit_modes())


