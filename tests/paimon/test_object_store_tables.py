"""Paimon tables in a warehouse on a real S3-protocol server (moto on
loopback: the ``s3`` fixture): accelerated reads and writes equal stock
pypaimon's, each data file read with large ranged requests (not a request
per block), the table helpers, RowDataset and the CLI on table URLs, and
a server that stops mid-scan."""
import datetime as dt
import os
import pickle
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema

import rowformat
import rowformat.paimon as rp
from rowformat.paimon import tables
from tests._s3server import S3Server

from ._tables import blob_accelerated, read, sort, write

N = 40_000


def _data(n=N, start=0):
    ids = np.arange(start, start + n)
    return pa.table({"id": pa.array(ids, pa.int64()), "part": pa.array(ids % 3, pa.int32()),
                     "name": pa.array([f"name-{i}" if i % 13 else None for i in ids.tolist()]),
                     "v": pa.array(ids * 0.5)})


class S3Warehouse:
    def __init__(self, s3):
        self.s3 = s3
        self.root = s3.url("wh")
        self.options = s3.catalog_options()
        self.catalog = CatalogFactory.create({"warehouse": self.root, **self.options})
        self.catalog.create_database("db", True)

    def create(self, name, schema, **kw):
        opts = {"file.format": "row", **kw.pop("options", {})}
        self.catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(schema, options=opts, **kw),
                                  True)
        return self.catalog.get_table(f"db.{name}")

    def url(self, name):
        return f"{self.root}/db.db/{name}"

    def row_files(self, name):
        return [r for r in self.s3.log() if r.key.endswith(".row") and r.method == "GET"]


@pytest.fixture
def s3wh(s3):
    return S3Warehouse(s3)


def _accelerated(fn, *args, **kw):
    with rp.accelerated():
        return fn(*args, **kw)


def test_append_table_reads_and_writes_equal_stock(s3wh):
    data = _data()
    t = s3wh.create("t", data.schema, partition_keys=["part"])
    _accelerated(write, t, data.slice(0, N // 2))
    write(t, data.slice(N // 2))                     # stock writes beside ours
    s3wh.s3.server.clear_log()
    fast = _accelerated(read, t)
    gets = s3wh.row_files("t")
    assert sort(fast).equals(sort(read(t)))
    assert sort(fast).select(["id", "part", "name", "v"]).equals(sort(data))
    # each accelerated file: its tail, then its blocks in a few large ranges
    files = {r.key for r in gets}
    assert len(files) == 6 and len(gets) <= 3 * len(files)
    # projection and a predicate
    got = _accelerated(read, t, projection=["id", "name"],
                       predicate=lambda pb: pb.greater_or_equal("id", N - 10))
    assert sort(got).equals(sort(data.select(["id", "name"]).slice(N - 10)))


def test_primary_key_table_merges_upserts(s3wh):
    data = _data(5000)
    t = s3wh.create("pk", data.schema, primary_keys=["id"], options={"bucket": "2"})
    _accelerated(write, t, data)
    upd = _data(100, 4950).set_column(3, "v", pa.array(np.full(100, -1.0)))
    _accelerated(write, t, upd)
    got = sort(_accelerated(read, t))
    assert got.num_rows == 5050 and got.equals(sort(read(t)))
    assert got.column("v").to_pylist()[4950:] == [-1.0] * 100


def test_expire_snapshots_on_s3(s3wh):
    """Three overwrites of an S3 table: expiry leaves the last one's data
    files (and nothing under a local path), stock pypaimon reads it."""
    data = _data(3000)
    t = s3wh.create("exp", data.schema, partition_keys=["part"])
    for k in range(3):
        write(t, data.slice(1000 * k, 1000), overwrite=True)
    url = s3wh.url("exp")
    keys = lambda: {k for k in s3wh.s3.keys("wh/db.db/exp/") if "/data-" in k}  # noqa: E731
    assert len(keys()) == 9
    out = tables.expire_snapshots(url, retain_last=1, storage_options=s3wh.options)
    assert out.snapshots == [1, 2] and out.earliest == 3 and out.bytes > 0
    live = {d.path.split("://", 1)[1].split("/", 1)[1] for d in tables.data_files(
        tables.open_table(url, storage_options=s3wh.options))}
    assert keys() == live and len(live) == 3
    assert sort(read(t)).select(["id", "part", "name", "v"]).equals(sort(data.slice(2000)))
    assert tables.expire_snapshots(url, retain_last=1, storage_options=s3wh.options).snapshots == []


def test_remove_orphan_files_on_s3(s3wh):
    """A stray data file and manifest in an S3 table go (the store's own
    modification times against the cutoff); every object the table uses, and
    a partition's _SUCCESS, stay."""
    import pyarrow.fs as pafs
    data = _data(2000)
    t = s3wh.create("orph", data.schema, partition_keys=["part"])
    write(t, data.slice(0, 1000))
    write(t, data.slice(1000), overwrite=True)
    url = s3wh.url("orph")
    used = s3wh.s3.keys("wh/db.db/orph/")
    fs = pafs.S3FileSystem(**s3wh.s3.storage_options())
    stray = ["wh/db.db/orph/part=1/bucket-0/data-lost.row", "wh/db.db/orph/manifest/manifest-lost"]
    used |= {"wh/db.db/orph/part=1/_SUCCESS"}           # not in a bucket directory: stays
    for key in stray + ["wh/db.db/orph/part=1/_SUCCESS"]:
        with fs.open_output_stream(f"{s3wh.s3.bucket}/{key}") as f:
            f.write(b"x" * 100)
    opts = s3wh.options
    assert tables.remove_orphan_files(url, storage_options=opts).files == []   # young
    time.sleep(0.2)         # the store's times, against the cutoff: no race within a millisecond
    out = tables.remove_orphan_files(url, older_than=dt.timedelta(0), storage_options=opts)
    assert out == tables.Orphans(sorted(f"s3://{s3wh.s3.bucket}/{k}" for k in stray), 200)
    assert s3wh.s3.keys("wh/db.db/orph/") == used
    assert sort(read(t)).select(["id", "part", "name", "v"]).equals(sort(data.slice(1000)))


def test_row_tracking_table_by_row_id_and_row_ranges(s3wh):
    data = _data(20_000)
    t = s3wh.create("rt", data.schema, options={"row-tracking.enabled": "true"})
    _accelerated(write, t, data.slice(0, 12_000))
    _accelerated(write, t, data.slice(12_000))
    url = s3wh.url("rt")
    table, snapshot = tables.pin(url, storage_options=s3wh.options)
    assert snapshot == 2
    files = tables.data_files(table)
    assert [f.rows for f in files] == [12_000, 8_000] or sorted(f.rows for f in files) == [8_000, 12_000]
    assert all(f.path.startswith(url + "/") for f in files)
    router = tables.RowIdRouter.from_table(table, url)
    assert router.storage_options["s3.endpoint"] == s3wh.options["s3.endpoint"]
    paths, rows = router.route(pa.array([0, 12_000, 19_999, 20_000]))
    assert rows.to_pylist() == [0, 0, 7999, None]
    with rowformat.RowFileReader(paths[2].as_py(), tables.file_schema(table, files[0].meta),
                                 storage_options=router.storage_options) as r:
        assert r.get(7999)[-4:] == (19_999, 1, "name-19999", 9999.5)
    # RowDataset over the table URL: a batch fetches its touched blocks, nothing more
    ds = rowformat.RowDataset(url, storage_options=s3wh.options)
    assert len(ds) == 20_000
    s3wh.s3.server.clear_log()
    want = np.random.default_rng(1).integers(0, 20_000, 256)
    got = ds.take(want)
    assert got.column("id").to_pylist() == want.tolist()
    body = [r for r in s3wh.s3.log() if r.method == "GET" and r.range and r.range[0] > 0]
    touched = sum(int(ds._files.store(f).table.compressed_sizes[
        np.unique(ds._files.store(f).block_of(np.asarray(local)))].sum())
        for f, local in _by_file(ds, want))
    tails = [r for r in s3wh.s3.log() if r.method in ("HEAD", "GET") and r not in body]
    assert sum(r.sent for r in body) <= 1.1 * touched + sum(r.sent for r in tails)


def _by_file(ds, rows):
    f = np.searchsorted(ds._starts, rows, side="right") - 1
    return [(k, rows[f == k] - ds._starts[k]) for k in np.unique(f)]


@blob_accelerated
def test_blob_table(s3wh):
    data = pa.table({"id": pa.array(range(50), pa.int64()),
                     "b": pa.array([bytes([i]) * (i * 1000) if i % 5 else None for i in range(50)],
                                   pa.large_binary())})
    t = s3wh.create("bl", data.schema, options={"row-tracking.enabled": "true",
                                                "data-evolution.enabled": "true"})
    _accelerated(write, t, data)
    assert sort(_accelerated(read, t)).equals(sort(read(t)))
    assert sort(read(t)).equals(data)


def test_cli_on_a_table_url(s3wh):
    t = s3wh.create("c", _data(100).schema)
    write(t, _data(100))
    url = s3wh.url("c")
    env = dict(s3wh.s3.server.env())
    opts = [a for k, v in s3wh.options.items() for a in ("--option", f"{k}={v}")]

    def cli(*args, environ=None):
        p = subprocess.run([sys.executable, "-m", "rowformat", *args], capture_output=True,
                           text=True, timeout=120, env=environ)
        return p.returncode, p.stdout, p.stderr

    code, out, err = cli("head", url, "-n", "2", "--format", "jsonl", *opts)
    assert code == 0, err
    assert out.splitlines()[0].startswith('{"id": 0, "part": 0')
    code, out, err = cli("verify", url, *opts)
    assert code == 0 and out.splitlines()[-1] == f"ok {url} (snapshot 1): 1 .row data file(s)"
    code, out, err = cli("inspect", url, environ={**os.environ, **env})   # the AWS_* variables
    assert code == 0 and "100" in out
    # a dead endpoint: exit 1 naming the URL, quickly (no retry storm)
    code, out, err = cli("cat", url, "--option", "s3.endpoint=http://127.0.0.1:9")
    assert code == 1 and url in err and "a bug" not in err


def test_server_stopping_mid_scan_is_a_named_storage_error():
    # a server of its own, so that stopping it leaves the session's running
    srv = S3Server().start()
    try:
        srv.make_bucket("dying")
        opts = srv.storage_options()
        url = "s3://dying/x.row"
        with rowformat.RowFileWriter(url, "id BIGINT NOT NULL, name STRING", block_size=4096,
                                     storage_options=opts) as w:
            w.write(pa.table({"id": pa.array(range(50_000), pa.int64()),
                              "name": [f"n{i}" for i in range(50_000)]}))
        r = rowformat.RowFileReader(url, "id BIGINT NOT NULL, name STRING", storage_options=opts,
                                    cache_bytes=0)
        it = r.iter_batches(batch_size=1000, readahead=0)
        next(it)
        srv.stop()
        with pytest.raises(rowformat.StorageError, match=url):
            for _ in it:
                pass
        r.close()
    finally:
        srv.stop()


def test_dataloader_workers_read_a_table_url(s3wh, tmp_path):
    """Two spawned DataLoader workers (processes that share nothing with this
    one: the storage options travel in the pickled dataset) return every row
    of an S3 table once, shuffled."""
    pytest.importorskip("torch")
    data = _data(6000)
    t = s3wh.create("dl", data.schema)
    _accelerated(write, t, data)
    code = textwrap.dedent(f"""
        import os, pickle, sys
        from torch.utils.data import DataLoader
        from rowformat import RowDataset
        ds = RowDataset({s3wh.url("dl")!r}, storage_options={s3wh.options!r})
        import probe
        loader = DataLoader(ds, batch_size=256, num_workers=2, shuffle=True, collate_fn=probe.ids,
                            multiprocessing_context="spawn")
        ids, pids = [], set()
        for batch, pid in loader:
            ids += batch
            pids.add(pid)
        pickle.dump((ids, len(pids - {{os.getpid()}})), sys.stdout.buffer)
    """)
    (tmp_path / "probe.py").write_text("import os\n"
                                       "def ids(b):\n"
                                       "    return b.column('id').to_pylist(), os.getpid()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["PYTHONPATH"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr.decode()
    ids, workers = pickle.loads(out.stdout)
    assert workers == 2 and sorted(ids) == list(range(6000)) and ids != sorted(ids)


def test_accelerated_to_torch_reads_an_s3_table(s3wh):
    """pypaimon's map-style to_torch() dataset of a row-tracking table on S3:
    accelerated, its batches come from rowformat's readers of the files' URLs
    (each file opened once, each batch its touched blocks), equal to stock's."""
    pytest.importorskip("torch")  # stock's dataset imports it; wheels' test runs have none
    from rowformat.paimon import _torch
    from pypaimon.read.table_read import TableRead
    if "pypaimon.read.table_read.TableRead.to_torch" not in rp.status().patched \
            or not hasattr(TableRead, "to_torch"):
        pytest.skip(f"pypaimon {rp.status().pypaimon} has no to_torch() to accelerate")
    data = _data(3000)
    t = s3wh.create("torch", data.schema, options={"row-tracking.enabled": "true",
                                                   "data-evolution.enabled": "true"})
    for k in range(2):
        _accelerated(write, t, data.slice(k * 1500, 1500))

    def dataset():
        rb = t.new_read_builder()
        return rb.new_read().to_torch(rb.new_scan().plan().splits())

    batch = np.random.default_rng(2).integers(0, 3000, 100).tolist()
    want = dataset().__getitems__(batch)
    rp.accelerate()
    fast = dataset()
    assert type(fast).__module__ == _torch.__name__ and _torch.accelerated_reason(fast) is None
    opened = rp.status().files_opened
    assert fast.__getitems__(batch) == want
    assert fast.__getitems__(batch[::-1]) == want[::-1]
    assert rp.status().files_opened - opened == 2


def _put(s3wh, key, data):
    import pyarrow.fs as pafs
    fs = pafs.S3FileSystem(**s3wh.s3.storage_options())
    with fs.open_output_stream(f"{s3wh.s3.bucket}/{key}") as f:
        f.write(data)


def _get(s3wh, key):
    import pyarrow.fs as pafs
    fs = pafs.S3FileSystem(**s3wh.s3.storage_options())
    with fs.open_input_stream(f"{s3wh.s3.bucket}/{key}") as f:
        return f.read()


def test_hostile_metadata_on_s3(s3wh):
    """On a store: a stray snapshot-03 is no second snapshot 3 (the latest
    stays), an object named like the snapshot directory where its objects
    are gone stops orphan removal with nothing deleted, and an expired
    manifest entry's external path in another bucket is not deleted."""
    import fastavro
    data = _data(900)
    t = s3wh.create("hostile", data.schema)
    for k in range(3):
        write(t, data.slice(300 * k, 300), overwrite=True)
    url, prefix = s3wh.url("hostile"), "wh/db.db/hostile/"
    opts = s3wh.options
    _put(s3wh, prefix + "snapshot/snapshot-03", _get(s3wh, prefix + "snapshot/snapshot-3"))
    # snapshot 1's entries (ADD and the overwrite's DELETE) name a file in another bucket
    s3wh.s3.server.make_bucket("precious")
    victim = "s3://precious/keep.row"
    import pyarrow.fs as pafs
    fs = pafs.S3FileSystem(**s3wh.s3.storage_options())
    with fs.open_output_stream("precious/keep.row") as f:
        f.write(b"not the table's")
    first = {e["_FILE"]["_FILE_NAME"] for e in _manifest_entries(s3wh, prefix, 1)}
    for key in s3wh.s3.keys(prefix + "manifest/"):
        if not key.rsplit("/", 1)[-1].startswith("manifest-") or "manifest-list-" in key:
            continue
        r = fastavro.reader(pa.BufferReader(_get(s3wh, key)))
        schema, entries = r.writer_schema, list(r)
        for e in entries:
            if e["_FILE"]["_FILE_NAME"] in first:
                e["_FILE"]["_EXTERNAL_PATH"] = victim
        out = pa.BufferOutputStream()
        fastavro.writer(out, schema, entries)
        _put(s3wh, key, out.getvalue().to_pybytes())
    with pytest.warns(UserWarning, match="names the external file 's3://precious/keep.row'"):
        got = tables.expire_snapshots(url, retain_last=1, storage_options=opts)
    assert got.snapshots == [1, 2] and got.earliest == 3
    assert {k.rsplit("/", 1)[-1] for k in s3wh.s3.keys(prefix + "snapshot/")} \
        == {"snapshot-3", "snapshot-03", "EARLIEST", "LATEST"}
    with fs.open_input_stream("precious/keep.row") as f:
        assert f.read() == b"not the table's"
    assert sort(read(t)).select(["id", "part", "name", "v"]).equals(sort(data.slice(600)))
    # the snapshot directory's objects gone, an object in its place
    for key in s3wh.s3.keys(prefix + "snapshot/"):
        fs.delete_file(f"{s3wh.s3.bucket}/{key}")
    _put(s3wh, prefix + "snapshot", b"")
    before = s3wh.s3.keys(prefix)
    from rowformat.errors import StorageError
    with pytest.raises(StorageError, match=f"{url}/snapshot: exists but cannot be listed"):
        tables.remove_orphan_files(url, older_than=dt.timedelta(0), storage_options=opts)
    assert s3wh.s3.keys(prefix) == before


def _manifest_entries(s3wh, prefix, snapshot_id):
    import json

    import fastavro
    snap = json.loads(_get(s3wh, f"{prefix}snapshot/snapshot-{snapshot_id}"))
    lists = fastavro.reader(pa.BufferReader(_get(s3wh, prefix + "manifest/" + snap["deltaManifestList"])))
    return [e for m in lists
            for e in fastavro.reader(pa.BufferReader(_get(s3wh, prefix + "manifest/" + m["_FILE_NAME"])))]
