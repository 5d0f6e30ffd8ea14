"""pypaimon tables with their ``.row`` data files and ``.blob`` files read and
written by rowformat.

::

    import rowformat.paimon

    rowformat.paimon.accelerate()          # every table of this process, until restore()
    ...
    rowformat.paimon.restore()

    with rowformat.paimon.accelerated():   # only inside the block (nests; thread-safe)
        table.new_read_builder().new_read().to_arrow(splits)

Acceleration replaces these things in pypaimon, at the narrowest points:

* reads: the ``FormatRowReader`` name in ``pypaimon.read.split_read`` (the only
  module that builds it) becomes a reader with pypaimon's contract --
  projection by name, missing fields as nulls, primary-key system fields,
  ``row_indices``, the Arrow push-down predicate, ``batch_size`` -- that
  decodes with rowformat (see ``_reader``);
* merged reads: ``MergeFileSplitRead.create_reader``, which sort-merges a
  primary-key split's rows in Python, computes the same rows with Arrow
  where that is provably pypaimon's result (the ``deduplicate`` engine) and
  calls pypaimon's own method otherwise (see ``_merge``);
* writes: ``LocalFileIO.write_row`` and the ``FormatRowWriter`` name the
  other FileIOs' ``write_row`` import (see ``_writer``). Data files get the
  bytes RowFileWriter writes (Paimon Java's ZSTD frames, without a content
  size: pypaimon's own writer adds one, so only the frames differ; the
  decompressed blocks are the same). Everything else pypaimon writes -- file
  metadata and statistics, manifests, snapshots -- is pypaimon's own;
* ``.blob`` files (BLOB, ARRAY<BLOB>, MAP<K, BLOB> columns of data-evolution
  tables): the ``FormatBlobReader`` name in ``split_read`` (streamed,
  CRC-checked reads; see ``_blob_reader``) and the ``BlobFormatWriter`` name
  in each module writing ``.blob`` files with it (Paimon Java's bytes,
  streamed to the FileIO's stream; see ``_blob_writer``). ``.video`` files
  stay pypaimon's.

A malformed data or ``.blob`` file raises :class:`rowformat.CorruptFileError`
naming the file.

Only the tested pypaimon versions (``TESTED_VERSIONS``) are accelerated, and
only when the patched attributes are pypaimon's own with the expected
signatures; anything else raises :class:`PaimonIntegrationError` and leaves
pypaimon untouched.

Patches are process-wide (every thread sees them). ``accelerate()`` and
``restore()`` are idempotent; ``accelerate()`` stays on until ``restore()``.
``accelerated()`` turns acceleration on for the outermost block of nested
uses (in any threads) and off when the last one exits, unless
``accelerate()`` turned it on for good; ``restore()`` turns it off at once,
whatever blocks are open.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import inspect
import threading
import weakref
from typing import Any, Iterator

from ..errors import PaimonIntegrationError

TESTED_VERSIONS = frozenset({"2.1.0"})

__all__ = ["accelerate", "restore", "accelerated", "is_accelerated", "PaimonIntegrationError",
           "TESTED_VERSIONS"]


_LOCK = threading.RLock()
_explicit = False               # accelerate() turned it on
_depth = 0                      # open accelerated() blocks
_patches: list[tuple[Any, str, Any, Any]] | None = None   # (owner, name, stock, ours) when on
_reader_class: Any = None

_READER_PARAMS = ["self", "file_io", "file_path", "read_fields", "full_fields",
                  "push_down_predicate", "batch_size", "row_indices"]
_WRITE_ROW_PARAMS = ["self", "path", "data", "fields", "zstd_level", "kwargs"]
_WRITER_PARAMS = ["self", "output_stream", "fields", "block_size", "zstd_level"]
_WRITER_IMPORT = "from pypaimon.write.writer.format_row_writer import FormatRowWriter"
_SUPPLIER_PARAMS = ["self", "file", "for_merge_read", "read_fields", "row_tracking_enabled",
                    "row_ranges", "physical_row_ranges", "shard_range"]
_MERGE_READ_METHODS = ("_get_final_read_data_fields", "_needs_blob_inline_convert",
                       "_outer_reapplies_predicate_after_projection")
_STREAM_FILE_IOS = [("pypaimon.filesystem.pyarrow_file_io", "PyArrowFileIO"),
                    ("pypaimon.filesystem.hdfs_native_file_io", "HdfsNativeFileIO")]


def _params(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise PaimonIntegrationError(f"cannot import {name}: {e}") from e


# (lookup function, its answer for "pypaimon"): importlib.metadata.version
# parses the distribution's METADATA on every call (10-20 ms), and every
# accelerated() block asks twice, e.g. once per Spark task. The answer is
# kept per lookup function, so a replaced importlib.metadata.version is asked again.
_version_seen: tuple[Any, str] | None = None


def _installed_version() -> str:
    global _version_seen
    lookup = importlib.metadata.version
    seen = _version_seen
    if seen is None or seen[0] is not lookup:
        seen = _version_seen = (lookup, lookup("pypaimon"))
    return seen[1]


def _check_version() -> str:
    try:
        version = _installed_version()
    except importlib.metadata.PackageNotFoundError:
        raise PaimonIntegrationError(
            "pypaimon is not installed: pip install 'rowformat[paimon]' "
            f"(tested with pypaimon {', '.join(sorted(TESTED_VERSIONS))})") from None
    if version not in TESTED_VERSIONS:
        raise PaimonIntegrationError(
            f"pypaimon {version} is not a version rowformat.paimon was tested with "
            f"({', '.join(sorted(TESTED_VERSIONS))}); pypaimon is left as it is")
    return version


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise PaimonIntegrationError(f"pypaimon {_installed_version()} "
                                     f"is not as rowformat.paimon expects: {what}; "
                                     f"pypaimon is left as it is")


# function -> its source text: tokenizing a module's source to find a
# function's takes ~5 ms, and every accelerated() block (each Spark task) plans anew.
_sources: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


def _source(fn: Any) -> str:
    """The source text of ``fn`` ("" when there is none), as first read."""
    try:
        return _sources[fn]
    except (KeyError, TypeError):
        pass
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        text = ""
    try:
        _sources[fn] = text
    except TypeError:          # not weakly referenceable: not kept
        pass
    return text


def _stock_class(module: Any, name: str, params: list[str], user: Any = None) -> Any:
    """pypaimon's class ``name`` of ``module``, checked to be defined there,
    to be what ``user`` (the module that builds it, if any) looks up, and
    to take ``params``."""
    cls: Any = getattr(module, name, None)
    _expect(isinstance(cls, type) and cls.__module__ == module.__name__,
            f"{module.__name__}.{name} is not pypaimon's class (another patch?)")
    if user is not None:
        _expect(getattr(user, name, None) is cls,
                f"{user.__name__}.{name} is not pypaimon's {name} (another patch?)")
    _expect(_params(cls.__init__) == params, f"{name}{inspect.signature(cls.__init__)}")
    return cls


def _plan() -> list[tuple[Any, str, Any, Any]]:
    """The (owner, name, stock value, replacement) patches, after checking
    that each stock value is pypaimon's own with the expected signature."""
    global _reader_class
    from . import _blob_patches, _merge, _reader, _writer

    _check_version()
    split_read = _import("pypaimon.read.split_read")
    row_reader = _import("pypaimon.read.reader.format_row_reader")
    row_writer = _import("pypaimon.write.writer.format_row_writer")
    local = _import("pypaimon.filesystem.local_file_io")

    stock_reader = _stock_class(row_reader, "FormatRowReader", _READER_PARAMS, split_read)
    _expect(callable(getattr(stock_reader, "read_arrow_batch", None))
            and callable(getattr(stock_reader, "close", None)),
            "FormatRowReader lacks read_arrow_batch()/close()")

    stock_writer = _stock_class(row_writer, "FormatRowWriter", _WRITER_PARAMS)
    _expect(callable(getattr(stock_writer, "write_table", None)),
            "FormatRowWriter lacks write_table()")

    file_io_cls = local.LocalFileIO
    stock_write_row: Any = file_io_cls.__dict__.get("write_row")
    _expect(inspect.isfunction(stock_write_row)
            and stock_write_row.__module__ == local.__name__,
            "LocalFileIO.write_row is not pypaimon's (another patch?)")
    _expect(_params(stock_write_row) == _WRITE_ROW_PARAMS,
            f"LocalFileIO.write_row{inspect.signature(stock_write_row)}")
    _expect(callable(getattr(file_io_cls, "_to_file", None)),
            "LocalFileIO has no _to_file()")
    for module_name, cls_name in _STREAM_FILE_IOS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue          # a FileIO whose dependencies are missing writes nothing
        fn: Any = getattr(getattr(module, cls_name, None), "write_row", None)
        _expect(fn is not None and _params(fn) == _WRITE_ROW_PARAMS,
                f"{cls_name}.write_row has another signature")
        _expect(_WRITER_IMPORT in _source(fn),
                f"{cls_name}.write_row does not write through FormatRowWriter")

    merge_read: Any = getattr(split_read, "MergeFileSplitRead", None)
    _expect(isinstance(merge_read, type), "no MergeFileSplitRead class in pypaimon.read.split_read")
    stock_create: Any = merge_read.__dict__.get("create_reader")
    _expect(inspect.isfunction(stock_create) and stock_create.__module__ == split_read.__name__,
            "MergeFileSplitRead.create_reader is not pypaimon's (another patch?)")
    _expect(_params(stock_create) == ["self"],
            f"MergeFileSplitRead.create_reader{inspect.signature(stock_create)}")
    supplier: Any = getattr(merge_read, "file_reader_supplier", None)
    _expect(callable(supplier) and _params(supplier) == _SUPPLIER_PARAMS,
            "MergeFileSplitRead.file_reader_supplier has another signature")
    for name in _MERGE_READ_METHODS:
        _expect(callable(getattr(merge_read, name, None)), f"MergeFileSplitRead lacks {name}()")

    if _reader_class is None or _reader_class._rowformat_stock is not stock_reader:
        _reader_class = _reader.make_reader_class(stock_reader)
    return [
        (split_read, "FormatRowReader", stock_reader, _reader_class),
        (merge_read, "create_reader", stock_create, _merge.make_create_reader(stock_create)),
        (row_writer, "FormatRowWriter", stock_writer, _writer.StreamRowWriter),
        (file_io_cls, "write_row", stock_write_row, _writer.local_write_row),
    ] + _blob_patches.plan()


def _apply() -> None:
    global _patches
    if _patches is not None:
        return
    patches = _plan()
    for owner, name, _stock, ours in patches:
        setattr(owner, name, ours)
    _patches = patches


def _undo() -> None:
    global _patches
    patches, _patches = _patches, None
    if patches is None:
        return
    for owner, name, stock, ours in reversed(patches):
        if owner.__dict__.get(name) is ours:
            setattr(owner, name, stock)


def accelerate() -> None:
    """Reads and writes the ``.row`` data files and ``.blob`` files of every
    pypaimon table in this process through rowformat, until :func:`restore`. Idempotent.
    Raises :class:`PaimonIntegrationError` (and patches nothing) for an
    untested pypaimon."""
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
        return _patches is not None


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
