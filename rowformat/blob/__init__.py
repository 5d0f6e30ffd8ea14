"""Paimon ``.blob`` files: the public API.

* :class:`BlobFileWriter` / :class:`BlobFileReader` for BLOB, ARRAY<BLOB> and
  MAP<K, BLOB> columns (``kind``, ``writer``, ``reader``);
* :data:`PLACEHOLDER`, the marker of a placeholder row;
* :class:`BlobDescriptor`, a serialized reference to a byte range of a file.

The byte layout is described in ``meta`` (file, entries, index) and
``payload`` (nested ARRAY and MAP payloads).
"""
from .descriptor import BlobDescriptor, BlobDescriptorError, is_blob_descriptor
from .kind import PLACEHOLDER, BlobPlaceholder
from .reader import BlobFileReader
from .stream import RangeStream
from .writer import BlobFileWriter

__all__ = ["BlobFileWriter", "BlobFileReader", "BlobDescriptor", "BlobDescriptorError",
           "is_blob_descriptor", "PLACEHOLDER", "BlobPlaceholder", "RangeStream"]
