"""The exit codes of the ``rowformat`` command and the two exceptions that
only the command raises: :class:`UsageError` (a command line that cannot be
carried out, exit code 2) and :class:`InputError` (a malformed line of a CSV
or JSON lines input, exit code 1). :func:`rowformat.cli.main` maps these,
the library's own errors and anything else to the codes below; nothing
outside the ``rowformat.cli`` package raises or catches them.
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_BAD_FILE = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A command line that cannot be carried out as given (exit code 2)."""


class InputError(Exception):
    """A malformed line of a CSV or JSON lines input (exit code 1)."""


def is_input_error(e: BaseException) -> bool:
    """True for an :class:`InputError` or pyarrow's complaint about a
    malformed Parquet, Arrow, CSV or JSON input."""
    if isinstance(e, InputError):
        return True
    import pyarrow as pa
    # pyarrow's readers raise ArrowInvalid (a ValueError) on malformed input.
    return isinstance(e, pa.ArrowInvalid) and not isinstance(e, pa.ArrowNotImplementedError)
