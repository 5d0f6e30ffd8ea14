"""The exceptions rowformat raises. Every one is a RowFormatError, so callers
can catch the package's errors with one except clause."""


class RowFormatError(Exception):
    """Base class of every rowformat error."""


class SchemaError(RowFormatError, ValueError):
    """A schema or type text is invalid, or a type has no mapping."""


class CorruptFileError(RowFormatError):
    """A file or buffer is malformed: bad footer, index, block or row bytes.
    The message names the file and, where known, the block, row and column."""


class ValueConversionError(RowFormatError, ValueError):
    """A value does not fit its column: wrong type, out of range, overflow,
    or null in a NOT NULL column. The message names the column and row."""


class LimitExceededError(CorruptFileError):
    """A file declares a block or row larger than the configured limit."""
