"""rowformat: Apache Paimon .row files and the Apache Fory row format."""
from .errors import (ColumnNotFoundError, CorruptFileError, LimitExceededError, RowFormatError,
                     RowIndexError, SchemaError, ValueConversionError)
from .types import schema, parse_type
from .types import (
    ArrayType, AtomicType, CharType, DataField, DataType, DecimalType, MapType, MultisetType,
    RowType, TimestampType, TimeType, VectorType,
)
from .arrow_types import from_arrow_schema, from_arrow_type, to_arrow_schema, to_arrow_type
from .footer import Footer
from .block_index import BlockIndex
from .reader import FileMetadata, RowFileReader, read_metadata
from .writer import RowFileWriter
from .verify import Problem, VerifyReport, verify
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
    "CorruptFileError", "LimitExceededError", "RowIndexError",
    "__version__",
]

# The one place the version is written: pyproject.toml reads it from here.
__version__ = "0.1.0"
