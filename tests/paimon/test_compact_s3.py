"""rowformat.paimon.tables.compact on the loopback S3 server: the COMPACT
snapshot created with the conditional PutObject, an append committed between
plan and commit kept, a concurrent overwrite making it give up with the
files it wrote deleted from the bucket."""
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from pypaimon import CatalogFactory, Schema

from rowformat.errors import CompactionConflictError
from rowformat.paimon import tables

from ._tables import read, sort, write
from .test_compact import SCHEMA, _rows
from ._tables import needs_pypaimon_2_1


def _table(s3, commits):
    opts = {"warehouse": f"s3://{s3.bucket}/wh", **s3.server.catalog_options()}
    catalog = CatalogFactory.create(opts)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(
        SCHEMA, options={"file.format": "row", "bucket": "1", "bucket-key": "id"}), True)
    for i in range(commits):
        write(catalog.get_table("db.t"), _rows(i))
    return catalog, f"s3://{s3.bucket}/wh/db.db/t"


def _data_files(s3):
    fs = pafs.S3FileSystem(**s3.server.storage_options())
    infos = fs.get_file_info(pafs.FileSelector(f"{s3.bucket}/wh/db.db/t/bucket-0"))
    return {i.base_name for i in infos if i.base_name.startswith("data-")}


def test_a_concurrent_append_is_kept(s3):
    catalog, path = _table(s3, 5)
    before = read(catalog.get_table("db.t"))

    def append(done, total):
        write(catalog.get_table("db.t"), _rows(9))

    got = tables.compact(path, storage_options=s3.server.catalog_options(), progress=append)
    assert (got.snapshot, got.rewritten, got.written) == (7, 5, 1)
    t = catalog.get_table("db.t")
    assert t.snapshot_manager().get_latest_snapshot().commit_kind == "COMPACT"
    assert sort(read(t)).equals(sort(pa.concat_tables([before, _rows(9)])))
    assert len(tables.data_files(tables.open_table(
        path, storage_options=s3.server.catalog_options()))) == 2


def test_a_concurrent_overwrite_leaves_nothing_in_the_bucket(s3):
    catalog, path = _table(s3, 5)
    on_store = _data_files(s3)

    def overwrite(done, total):
        write(catalog.get_table("db.t"), _rows(9), overwrite=True)

    with pytest.raises(CompactionConflictError):
        tables.compact(path, storage_options=s3.server.catalog_options(), progress=overwrite)
    t = catalog.get_table("db.t")
    assert sort(read(t)).equals(_rows(9))
    live = {d.meta.file_name for d in tables.data_files(tables.open_table(
        path, storage_options=s3.server.catalog_options()))}
    assert _data_files(s3) == on_store | live


pytestmark = needs_pypaimon_2_1
