"""rowformat: Apache Paimon .row files and the Apache Fory row format."""
import importlib as _importlib
import sys as _sys

from .errors import (ColumnNotFoundError, CorruptFileError, LimitExceededError, RowFormatError,
                     RowIndexError, SchemaError, StorageError, StorageNotFoundError,
                     ValueConversionError)
from .datatypes import schema, parse_type
from .datatypes import (
    ArrayType, AtomicType, CharType, DataField, DataType, DecimalType, MapType, MultisetType,
    RowType, TimestampType, TimeType, VectorType,
)
from .arrow_types import from_arrow_schema, from_arrow_type, to_arrow_schema, to_arrow_type
from .row.footer import Footer
from .row.block_index import BlockIndex
from .row.reader import FileMetadata, RowFileReader, read_metadata
from .row.writer import RowFileWriter
from .row.verify import Problem, VerifyReport, verify
from .dataset import BlockShuffleSampler, RowDataset
from .blob import (BlobDescriptor, BlobDescriptorError, BlobFileReader, BlobFileWriter,
                   BlobPlaceholder, PLACEHOLDER, is_blob_descriptor)

__all__ = [
    # .row files
    "RowFileReader", "RowFileWriter", "read_metadata", "FileMetadata", "Footer", "BlockIndex", "verify", "VerifyReport", "Problem",
    # training and random access
    "RowDataset", "BlockShuffleSampler",
    # .blob files
    "BlobFileReader", "BlobFileWriter", "BlobDescriptor", "BlobDescriptorError", "BlobPlaceholder",
    "PLACEHOLDER", "is_blob_descriptor",
    # Paimon types and schemas, and their Arrow mapping
    "schema", "parse_type", "RowType", "DataField", "DataType", "AtomicType", "ArrayType", "MapType",
    "MultisetType", "DecimalType", "CharType", "TimestampType", "TimeType", "VectorType",
    "from_arrow_schema", "from_arrow_type", "to_arrow_schema", "to_arrow_type",
    # errors: every one is a RowFormatError (docs/errors.md)
    "RowFormatError", "SchemaError", "ColumnNotFoundError", "ValueConversionError",
    "CorruptFileError", "LimitExceededError", "RowIndexError", "StorageError", "StorageNotFoundError",
    "__version__",
]

# The .row codec's modules moved into rowformat.row; their old import paths
# (rowformat.reader, rowformat.writer, ...) keep working for code written before.
for _name in ("footer", "block_index", "block_cache", "reader", "writer", "verify", "java_frames"):
    _sys.modules.setdefault(f"{__name__}.{_name}", _importlib.import_module(f".row.{_name}", __name__))

# The one place the version is written: pyproject.toml reads it from here.
__version__ = "0.1.0"
