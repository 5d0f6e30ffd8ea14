"""Paimon tables by directory path, through pypaimon: :func:`is_table`,
:func:`open_table` (``FileStoreTable.from_path``, no catalog, with time
travel) and :func:`acceleration` (``accelerated()`` when this pypaimon can
be accelerated, else a no-op). Shared by ``rowformat.spark.tables`` and the
``rowformat`` command; importing this module does not import pypaimon.
"""
from __future__ import annotations

import contextlib
import os

from ..errors import DatasetError

SCHEMA_DIR = "schema"


# ---------------------------------------------------------------- the seam

def acceleration():
    """A context manager under which pypaimon reads and writes ``.row``
    data files with rowformat's reader and writer; a no-op when
    ``rowformat.paimon`` cannot accelerate this pypaimon."""
    try:
        from .. import paimon as rp
    except ImportError:
        return contextlib.nullcontext()
    try:
        rp._check_version()
    except rp.PaimonIntegrationError:
        return contextlib.nullcontext()
    return _Guarded(rp.accelerated())


class _Guarded:
    """``rowformat.paimon.accelerated()``, falling back to stock pypaimon
    when the patches cannot be applied (a pypaimon not shaped as expected)."""

    def __init__(self, cm):
        self.cm = cm
        self.entered = False

    def __enter__(self):
        from .. import paimon as rp
        try:
            self.cm.__enter__()
            self.entered = True
        except rp.PaimonIntegrationError:
            pass
        return self

    def __exit__(self, *exc):
        if self.entered:
            return self.cm.__exit__(*exc)
        return False


# ---------------------------------------------------------------- tables

def is_table(path: str) -> bool:
    """A Paimon table directory: it has ``schema/schema-<n>`` files."""
    schema_dir = os.path.join(path, SCHEMA_DIR)
    return os.path.isdir(schema_dir) and any(
        n.startswith("schema-") and n[7:].isdigit() for n in os.listdir(schema_dir))


def _import_pypaimon():
    try:
        from pypaimon.table.file_store_table import FileStoreTable
    except ImportError as e:
        raise ModuleNotFoundError(
            "reading and writing Paimon tables needs pypaimon: pip install 'rowformat[paimon]'",
            name="pypaimon") from e
    return FileStoreTable


def plan(table, columns: list[str] | None = None, partition_filter=None) -> list:
    """The table's splits (pypaimon's scan of the table's snapshot),
    reading ``columns`` (default all), of the partitions that
    ``partition_filter`` (a pypaimon ``Predicate`` on partition keys) keeps."""
    rb = table.new_read_builder()
    if columns is not None:
        rb = rb.with_projection(columns)
    if partition_filter is not None:
        rb = rb.with_partition_filter(partition_filter)
    return list(rb.new_scan().plan().splits())


def open_table(path: str, snapshot_id: int | None = None, tag: str | None = None):
    """The pypaimon ``FileStoreTable`` at ``path``; with ``snapshot_id`` or
    ``tag``, the table as of that snapshot (its schema and files)."""
    FileStoreTable = _import_pypaimon()
    if not is_table(path):
        raise DatasetError(f"{path} is not a Paimon table: no {SCHEMA_DIR}/schema-<n> files")
    table = FileStoreTable.from_path(path)
    if snapshot_id is not None and tag is not None:
        raise ValueError("give either a snapshot id or a tag, not both")
    if snapshot_id is not None:
        if table.snapshot_manager().get_snapshot_by_id(int(snapshot_id)) is None:
            raise DatasetError(f"{path}: there is no snapshot {snapshot_id}")
        table = table.copy({"scan.snapshot-id": str(int(snapshot_id))})
    elif tag is not None:
        if not table.tag_manager().tag_exists(tag):
            raise DatasetError(f"{path}: there is no tag {tag!r}")
        table = table.copy({"scan.tag-name": tag})
    return table
