"""The exceptions rowformat raises about files, schemas, values, storage and
tables. Each is a RowFormatError, so callers can catch them with one except
clause; the compiled modules raise these same classes (they import them from
here). Wrong arguments (a negative batch_size, a closed reader, an unknown
format=) are Python's ValueError or TypeError instead, as in the standard
library and pyarrow; the replacements of pypaimon's blob writer raise
pypaimon's own ValueErrors (docs/errors.md)."""


class RowFormatError(Exception):
    """Base class of every rowformat error."""


# -- schemas and values ------------------------------------------------------------
class SchemaError(RowFormatError, ValueError):
    """A schema or type text is invalid, or a type has no mapping."""


class ColumnNotFoundError(SchemaError, KeyError, IndexError):
    """A column named or numbered that the schema does not have. Also a
    KeyError (by name) and an IndexError (by position), as it used to be."""

    __str__ = Exception.__str__     # not KeyError's, which quotes the message


class ValueConversionError(RowFormatError, ValueError):
    """A value does not fit its column: wrong type, out of range, overflow,
    or null in a NOT NULL column. The message names the column and row."""


# -- malformed input ---------------------------------------------------------------
class CorruptFileError(RowFormatError):
    """A file or buffer is malformed: bad footer, index, block or row bytes.
    The message names the file and, where known, the block, row and column."""


class LimitExceededError(CorruptFileError):
    """A file declares a block or row larger than the configured limit."""


class RowIndexError(RowFormatError, IndexError):
    """A row number outside the file."""


class RowDecodeError(CorruptFileError):
    """Carries the local row and top-level column of a .row decode failure,
    for the reader to turn into a message naming file, block, row and column."""

    block: int | None = None        # set by RowDecoder.decode_gather: the failing row's block

    def __init__(self, message, row, column):
        super().__init__(message)
        self.row = row
        self.column = column


class RowMemoryError(MemoryError):
    """An allocation failed while decoding a .row block's rows (not a file
    problem); carries the local row and top-level column, as RowDecodeError does."""

    block: int | None = None        # set by RowDecoder.decode_gather: the failing row's block

    def __init__(self, message, row, column):
        super().__init__(message)
        self.row = row
        self.column = column


class RowLimitError(RowDecodeError, LimitExceededError):
    """A row larger than the decoder's max_row_size, or whose nulls or Python
    values would take more than its bytes and the call's reserve allow
    (docs/errors.md, Limits)."""


class VarintError(CorruptFileError, ValueError):
    """Index bytes that are not a sequence of complete, in-range varints."""


# -- Fory rows ---------------------------------------------------------------------
class MalformedRowError(CorruptFileError):
    """Fory row bytes do not match the schema: an offset, size or count points
    outside the row, or a value is invalid (bad UTF-8, decimal too wide)."""


class SchemaHashMismatchError(MalformedRowError):
    """The 8-byte schema hash in front of a Fory row is not this schema's."""


# -- .blob files -------------------------------------------------------------------
class BlobDescriptorError(RowFormatError, ValueError):
    """Bytes that are not a valid blob descriptor."""


class PayloadError(CorruptFileError, ValueError):
    """A malformed nested ARRAY or MAP payload of a .blob entry."""


class KeyDecodeError(CorruptFileError, ValueError):
    """MAP key bytes of a .blob payload that do not decode to the key type."""


# -- storage ---------------------------------------------------------------------------
class StorageError(RowFormatError, OSError):
    """An object store or remote filesystem failed: unreachable, refused the
    credentials, timed out, or has no such bucket. Names the URL, what was
    being done and the store's cause."""

    def __init__(self, *args):
        # OSError(errno, message) would print "[Errno 5] ..."; the message alone reads better
        if len(args) == 2 and isinstance(args[0], int):
            super().__init__(args[1])
            self.errno = args[0]
        else:
            super().__init__(*args)


class StorageOptionError(RowFormatError, ValueError):
    """A store's setting rowformat does not know (``s3.endpiont``), or a
    setting given twice in two spellings: named, with the closest valid
    name. Never dropped in silence (docs/row-files.md#object-stores)."""


class StorageNotFoundError(StorageError, FileNotFoundError):
    """No object (or bucket) at a URL."""


# -- pypaimon and Spark ------------------------------------------------------------
class PaimonIntegrationError(RowFormatError):
    """pypaimon is missing, of an untested version, or not shaped as
    rowformat.paimon expects (a patched attribute is missing, has another
    signature, or was replaced by someone else)."""


class TableOptionError(RowFormatError, ValueError):
    """A Paimon table option has a value rowformat cannot write with (a
    ``file.block-size`` that is not a size from 1 byte to 2 GiB - 1)."""


class DatasetError(RowFormatError):
    """A path given to the Spark source is neither a Paimon table nor .row
    files, or an option names something that is not there."""


class TableMetadataError(CorruptFileError):
    """A Paimon table's snapshot, schema, manifest list or manifest file is
    damaged, or names a file it cannot name (a data file name with a '/')."""


class CompactionConflictError(RowFormatError):
    """A compaction's commit found a file it rewrote deleted or replaced by
    a concurrent commit (an overwrite, another compaction): given up, as
    Paimon Java gives up, with the files it wrote deleted."""


class CompactionOutcomeError(RowFormatError):
    """A compaction's commit whose outcome cannot be told (a snapshot it would
    have to look at is gone, e.g. expired by a concurrent writer): the files
    it wrote are kept, since a snapshot may name them (``remove_orphan_files``
    takes them if none does)."""


class UnsafeCommitError(RowFormatError):
    """A commit to a store without an atomic "create if absent" (or whose
    server ignores it), where a concurrent writer's snapshot could be
    silently replaced: refused unless ``rowformat.paimon.allow_unsafe_commits()``."""


class WorkerPythonError(RowFormatError):
    """The Python that Spark runs its workers with (``PYSPARK_PYTHON``,
    default ``python3`` from PATH) cannot import rowformat."""
