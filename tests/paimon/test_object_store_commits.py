"""Commits on an object store lose nothing under acceleration: a snapshot
(or schema) is created with S3's conditional PutObject (If-None-Match: *),
so concurrent writers each get their own snapshot id; a store that ignores
the condition is refused with UnsafeCommitError unless the job says it is
the only writer. Against the loopback S3 server (moto)."""
import multiprocessing

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema

import rowformat.paimon as rp
from rowformat.paimon import _commit
from tests._s3server import S3Server

from . import _committer

SCHEMA = pa.schema([("writer", pa.int32()), ("round", pa.int32()), ("i", pa.int32())])


def _catalog(server, bucket):
    opts = {"warehouse": f"s3://{bucket}/wh", **server.catalog_options()}
    catalog = CatalogFactory.create(opts)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, options={"file.format": "row"}),
                         True)
    return opts, catalog


def _snapshot_ids(server, bucket):
    import pyarrow.fs as pafs
    fs = pafs.S3FileSystem(**server.storage_options())
    infos = fs.get_file_info(pafs.FileSelector(f"{bucket}/wh/db.db/t/snapshot",
                                               allow_not_found=True))
    return sorted(int(i.base_name[9:]) for i in infos if i.base_name.startswith("snapshot-"))


def _rows(catalog):
    t = catalog.get_table("db.t")
    rb = t.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def test_concurrent_writers_each_commit_once(s3):
    """4 processes x 5 rounds, each round's commits released together: every
    commit's rows present exactly once, snapshot ids 1..20, none lost."""
    writers, rounds, rows = 4, 5, 50
    opts, catalog = _catalog(s3.server, s3.bucket)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Manager().Barrier(writers)
    with ctx.Pool(writers) as pool:
        results = [pool.apply_async(_committer.append_rounds,
                                    (s3.server.env(), opts, w, rounds, rows, barrier, True))
                   for w in range(writers)]
        errors = [e for r in results for e in r.get(timeout=600)]
    assert errors == []
    assert _snapshot_ids(s3.server, s3.bucket) == list(range(1, writers * rounds + 1))
    got = _rows(catalog).group_by(["writer", "round"]).aggregate([("i", "count")])
    assert got.num_rows == writers * rounds
    assert set(got.column("i_count").to_pylist()) == {rows}


def test_a_commit_that_lands_first_is_not_replaced(s3, monkeypatch):
    """Writer B commits snapshot 1 between writer A's planning and its create:
    A's conditional create loses (412), pypaimon retries as snapshot 2, and
    both commits' rows are there."""
    opts, catalog = _catalog(s3.server, s3.bucket)
    ta, tb = catalog.get_table("db.t"), CatalogFactory.create(opts).get_table("db.t")
    rp.accelerate()

    def prepared(table, writer):
        wb = table.new_batch_write_builder()
        w = wb.new_write()
        w.write_arrow(pa.table({"writer": pa.array([writer] * 3, pa.int32()),
                                "round": pa.array([0] * 3, pa.int32()),
                                "i": pa.array(range(3), pa.int32())}))
        return w, wb.new_commit(), w.prepare_commit()

    wa, ca, ma = prepared(ta, 0)
    wb_, cb, mb = prepared(tb, 1)
    creates = []
    real = _commit._create

    def create(client, bucket, key, body):
        if key.endswith("snapshot-1") and "B first" not in creates:
            creates.append("B first")
            cb.commit(mb)                   # B's whole commit, inside A's create of snapshot-1
        created = real(client, bucket, key, body)
        creates.append((key.rsplit("/", 1)[-1], created))
        return created

    monkeypatch.setattr(_commit, "_create", create)
    ca.commit(ma)
    for x in (wa, ca, wb_, cb):
        x.close()
    assert ("snapshot-1", False) in creates and ("snapshot-2", True) in creates
    assert _snapshot_ids(s3.server, s3.bucket) == [1, 2]
    assert sorted(set(_rows(catalog).column("writer").to_pylist())) == [0, 1]
    assert rp.status().commits[f"s3://{s3.bucket}"] == "conditional create (If-None-Match: *)"


@pytest.fixture
def careless_store():
    """An S3 server of its own that ignores If-None-Match (as some
    S3-compatible stores do), with a bucket; the probe's cache forgotten."""
    server = S3Server().start()
    server.ignore_conditions = True
    server.make_bucket("careless")
    _commit._probed.clear()
    yield server
    _commit._probed.clear()
    rp.allow_unsafe_commits(False)
    server.stop()


def test_store_without_conditional_creates_is_refused(careless_store, monkeypatch):
    for k, v in careless_store.env().items():
        monkeypatch.setenv(k, v)
    opts, catalog = _catalog(careless_store, "careless")
    table = catalog.get_table("db.t")
    rp.accelerate()
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"writer": [1], "round": [0], "i": [0]}, schema=SCHEMA))
    messages = w.prepare_commit()
    with pytest.raises(rp.UnsafeCommitError, match="ignores If-None-Match.*allow_unsafe_commits"):
        c.commit(messages)
    assert rp.status().commits["s3://careless"].startswith("refused: the store at")
    assert _snapshot_ids(careless_store, "careless") == []
    rp.allow_unsafe_commits()           # a single-writer job says so: pypaimon's own path
    c.close()
    c = wb.new_commit()
    c.commit(messages)
    w.close()
    c.close()
    assert _snapshot_ids(careless_store, "careless") == [1]
    assert rp.status().commits["s3://careless"].startswith("unsafe (allowed)")
