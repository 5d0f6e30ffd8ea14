"""The patches that route pypaimon's ``.blob`` files through rowformat, each
checked as ``_plan`` checks the ``.row`` ones: the value replaced is
pypaimon's own, with the signature rowformat was tested with.

* reads: the ``FormatBlobReader`` name in ``pypaimon.read.split_read`` (the
  only module that builds one) -- see ``_blob_reader``;
* writes: the ``BlobFormatWriter`` name in each module that writes ``.blob``
  files with it -- see ``_blob_writer``.
"""
from __future__ import annotations

import importlib
import inspect
from typing import Any

from . import _blob_reader, _blob_writer

READER_PARAMS = ["self", "file_io", "file_path", "read_fields", "full_fields",
                 "push_down_predicate", "blob_as_descriptor", "batch_size", "row_indices",
                 "blob_parallelism", "file_size", "index_cache"]
WRITER_PARAMS = ["self", "output_stream", "blob_consumer", "file_path", "copy_buffer_size"]
# (module, function whose source must build the writer by that name); a
# module whose dependencies are missing writes nothing and is skipped
WRITER_USERS = [
    ("pypaimon.write.writer.blob_file_writer", "BlobFileWriter.__init__"),
    ("pypaimon.filesystem.local_file_io", "LocalFileIO.write_blob"),
    ("pypaimon.filesystem.pyarrow_file_io", "PyArrowFileIO.write_blob"),
    ("pypaimon.filesystem.hdfs_native_file_io", "HdfsNativeFileIO.write_blob"),
]
_made: dict[type, type] = {}        # stock class -> our subclass, made once


def _ours(stock: type, make) -> type:
    cls = _made.get(stock)
    if cls is None:
        cls = _made[stock] = make(stock)
    return cls


def plan() -> list[tuple[Any, str, Any, Any]]:
    from . import _expect, _import, _params, _source, _stock_class

    split_read = _import("pypaimon.read.split_read")
    reader_mod = _import("pypaimon.read.reader.format_blob_reader")
    stock_reader = _stock_class(reader_mod, "FormatBlobReader", READER_PARAMS, split_read)
    _expect(_params(stock_reader.read_arrow_batch) == ["self", "start_idx", "end_idx"]
            and callable(getattr(stock_reader, "read_values_at", None))
            and isinstance(inspect.getattr_static(stock_reader, "record_count", None), property),
            "FormatBlobReader lacks read_arrow_batch(start_idx, end_idx), read_values_at() "
            "or record_count")
    patches = [(split_read, "FormatBlobReader", stock_reader,
                _ours(stock_reader, _blob_reader.make_blob_reader_class))]

    writer_mod = _import("pypaimon.write.blob_format_writer")
    stock_writer = _stock_class(writer_mod, "BlobFormatWriter", WRITER_PARAMS)
    _expect(_params(stock_writer.write_value) == ["self", "col_data", "fields",
                                                  "uri_reader_factory"]
            and all(callable(getattr(stock_writer, name, None))
                    for name in ("add_element", "close", "reach_target_size", "_map_entries")),
            "BlobFormatWriter lacks write_value(col_data, fields, uri_reader_factory), "
            "add_element(), close(), reach_target_size() or _map_entries()")
    ours = _ours(stock_writer, _blob_writer.make_blob_writer_class)
    for module_name, qualname in WRITER_USERS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        _expect(getattr(module, "BlobFormatWriter", None) is stock_writer,
                f"{module_name}.BlobFormatWriter is not pypaimon's (another patch?)")
        owner, name = qualname.split(".")
        fn = getattr(getattr(module, owner, None), name, None)
        _expect("BlobFormatWriter(" in _source(fn),
                f"{qualname} does not write through BlobFormatWriter")
        patches.append((module, "BlobFormatWriter", stock_writer, ours))
    return patches + _blob_writer.reference_patches()
