"""A Paimon table's metadata files read as untrusted input.

pypaimon reads snapshots, schemas, manifest lists and manifests with
whatever their bytes say: a file that is not JSON (or JSON nested 5,000
deep), a truncated Avro file, a schema id the table does not have surface as
``JSONDecodeError``, ``RecursionError``, ``EOFError``, ``KeyError`` or
``AttributeError`` from deep inside it, naming no file; and it joins the
file names a manifest lists to the bucket directory as strings, so a data
file named ``../../outside/x.row`` is read from outside the table.

* :func:`reading` turns such a failure into :class:`TableMetadataError`
  naming the file;
* :func:`check_name` refuses a file name with a ``/`` (Paimon writes bare
  names; a data file elsewhere is an ``_EXTERNAL_PATH``, which is allowed);
* :func:`make_manifest_read` and :func:`make_manifest_list_read` wrap
  pypaimon's ``ManifestFileManager.read`` and ``ManifestListManager.read``
  with both, under acceleration (``_patches.POINTS``);
* :func:`make_new_input_stream` opens the local files pypaimon reads
  (``LATEST``, snapshots, schemas, manifest lists, manifests) without
  blocking and refuses any but a regular file: pypaimon's plain ``open()``
  of a named pipe blocked forever.
"""
from __future__ import annotations

import contextlib
import io
from typing import Any, Callable, Iterator

from ..errors import CorruptFileError, RowFormatError, TableMetadataError
from ..io.local import open_regular_file

# what a damaged file raises inside pypaimon; OSError (a missing or unreadable
# file, naming it) and MemoryError pass as they are
_PASS = (RowFormatError, OSError, MemoryError)


@contextlib.contextmanager
def reading(path: Any, what: str) -> Iterator[None]:
    """Runs the block that reads ``what`` (``"snapshot"``, ``"manifest"``,
    ...) at ``path`` (a string, or a callable giving it, asked on failure only)."""
    try:
        yield
    except _PASS:
        raise
    except Exception as e:
        first = _first(e)
        if isinstance(first, RowFormatError):   # ours, wrapped by pypaimon: as it is
            raise first from None
        where = path() if callable(path) else path
        raise TableMetadataError(f"{where}: damaged Paimon {what}: {_cause(e)}") from e


def _first(e: BaseException) -> BaseException:
    """What went wrong first: pypaimon wraps some errors in a RuntimeError
    that only repeats the path."""
    while e.__cause__ is not None:
        e = e.__cause__
    return e


def _cause(e: BaseException, limit: int = 200) -> str:
    """What went wrong first (:func:`_first`), as ``Type: message``, cut at ``limit``."""
    e = _first(e)
    text = str(e)
    text = text if len(text) <= limit else text[:limit] + "..."
    return f"{type(e).__name__}: {text}"


def check_name(name: Any, where: str, what: str) -> None:
    """``name`` as a manifest or manifest list gives it must be a bare file name."""
    if not isinstance(name, str) or not name or name in (".", "..") \
            or "/" in name or "\x00" in name:
        raise TableMetadataError(f"{where}: {what} name {name!r} is not a file name (Paimon "
                                 f"writes names without '/'); refusing to read it")


def make_manifest_read(stock: Callable) -> Callable:
    """``ManifestFileManager.read``: the manifest's entries, each naming a bare file."""

    def read(self, manifest_file_name, *args, **kwargs):
        where = f"{self.manifest_path}/{manifest_file_name}"
        try:
            with reading(where, "manifest"):
                entries = stock(self, manifest_file_name, *args, **kwargs)
        except TableMetadataError as e:
            missing = _missing_schema(self, where)
            if missing is None:
                raise
            raise TableMetadataError(
                f"{where}: an entry names schema {missing}, but the table has no "
                f"{self.table.table_path.rstrip('/')}/schema/schema-{missing}") from e.__cause__
        for entry in entries:
            check_name(entry.file.file_name, where, "data file")
        return entries
    read._rowformat_stock = stock  # type: ignore[attr-defined]
    return read


def _missing_schema(manager: Any, where: str) -> Any:
    """The first schema id the entries of the manifest at ``where`` name that
    the table lacks (pypaimon fails on it with an ``AttributeError``), or None."""
    import fastavro
    try:
        with manager.file_io.new_input_stream(where) as stream:
            records: Any = fastavro.reader(io.BytesIO(stream.read()))
            for record in records:
                schema_id = record["_FILE"]["_SCHEMA_ID"]
                if manager.table.schema_manager.get_schema(schema_id) is None:
                    return schema_id
    except Exception:       # damaged otherwise: the first message stands
        return None
    return None


def make_manifest_list_read(stock: Callable) -> Callable:
    """``ManifestListManager.read``: the manifests a list names, each a bare file."""

    def read(self, manifest_list_name, *args, **kwargs):
        check_name(manifest_list_name, f"{self.manifest_path}", "manifest list")
        where = f"{self.manifest_path}/{manifest_list_name}"
        with reading(where, "manifest list"):
            metas = stock(self, manifest_list_name, *args, **kwargs)
        for meta in metas:
            check_name(meta.file_name, where, "manifest")
        return metas

    read._rowformat_stock = stock  # type: ignore[attr-defined]
    return read


def make_new_input_stream(stock: Callable) -> Callable:
    """``LocalFileIO.new_input_stream``: the file opened without blocking,
    :class:`TableMetadataError` (``<path>: is a named pipe, not a regular
    file``) unless it is a regular file; a missing one as pypaimon says it."""

    def new_input_stream(self, path):
        try:
            return open_regular_file(self._to_file(path))
        except FileNotFoundError:
            return stock(self, path)
        except CorruptFileError as e:
            raise TableMetadataError(str(e)) from None

    new_input_stream._rowformat_stock = stock  # type: ignore[attr-defined]
    return new_input_stream
