"""consumer.expiration-time after each accelerated commit
(rowformat.paimon._after_commit, _expire.expire_consumers): a consumer whose
file is older than the duration is deleted before snapshot expiry, which then
goes past the snapshots it held; a fresh consumer stays and still holds its
snapshots; nothing without the option or under write-only; a bad duration,
and any consumer-* entry whose age or name is unclear, is a warning with no
consumer deleted; names that are not consumers are never touched."""
import os
import time
import warnings

import pyarrow as pa
import pytest

import rowformat.paimon as rp
from rowformat.errors import StorageError, TableMetadataError
from rowformat.io import fileio
from rowformat.io.output import write_atomically
from rowformat.paimon import _expire
from rowformat.paimon.streaming import consumer_next_snapshot, record_consumer

from ._tables import needs_pypaimon_2_1, write

pytestmark = needs_pypaimon_2_1

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])
# no compaction; every snapshot but the latest goes unless a consumer holds it
OPTIONS = {"bucket": "1", "bucket-key": "id", "compaction.min.file-num": "100",
           "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}
HOURS_AGO = time.time() - 2 * 3600


def _commit(t, k):
    write(t, pa.table({"id": [k]}, schema=SCHEMA))


def _snapshots(root):
    return sorted(int(n[len("snapshot-"):]) for n in os.listdir(os.path.join(root, "snapshot"))
                  if n.startswith("snapshot-"))


def _consumers(root):
    return sorted(os.listdir(os.path.join(root, "consumer")))


def _table(wh, name, **options):
    """A table with snapshots 1-3 kept by the consumer ``stale`` (at 1),
    whose file is two hours old, and ``live`` (at 3), just recorded."""
    t = wh.create(name, SCHEMA, options={**OPTIONS, **options})
    root = str(t.table_path)
    rp.accelerate()
    _commit(t, 1)
    record_consumer(root, "stale", 1)
    _commit(t, 2)
    _commit(t, 3)
    record_consumer(root, "live", 3)
    assert _snapshots(root) == [1, 2, 3]
    os.utime(os.path.join(root, "consumer", "consumer-stale"), (HOURS_AGO, HOURS_AGO))
    return t, root


def _maintenance_warnings(commit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        commit()
    return [str(w.message) for w in caught if issubclass(w.category, rp.MaintenanceWarning)]


def test_an_idle_consumer_expires_and_snapshot_expiry_goes_past_it(wh):
    t, root = _table(wh, "ce", **{"consumer.expiration-time": "1 h"})
    assert _maintenance_warnings(lambda: _commit(t, 4)) == []
    # stale (2 h idle) deleted first, then expiry stops at live's snapshot 3
    assert _consumers(root) == ["consumer-live"]
    assert consumer_next_snapshot(root, "live") == 3
    assert _snapshots(root) == [3, 4]
    with open(os.path.join(root, "snapshot", "EARLIEST")) as f:
        assert f.read() == "3"
    # live goes idle too: the next commit expires it, and with it the hold on 3
    os.utime(os.path.join(root, "consumer", "consumer-live"), (HOURS_AGO, HOURS_AGO))
    _commit(t, 5)
    assert _consumers(root) == [] and _snapshots(root) == [5]


def test_without_the_option_consumers_never_expire(wh):
    t, root = _table(wh, "none")
    _commit(t, 4)
    assert _consumers(root) == ["consumer-live", "consumer-stale"]
    assert _snapshots(root) == [1, 2, 3, 4]


def test_write_only_expires_no_consumer(wh):
    t, root = _table(wh, "wo", **{"consumer.expiration-time": "1 ms", "write-only": "true"})
    _commit(t, 4)
    assert _consumers(root) == ["consumer-live", "consumer-stale"]
    assert _snapshots(root) == [1, 2, 3, 4]


def test_a_bad_duration_is_a_warning_naming_the_option(wh):
    with pytest.warns(rp.MaintenanceWarning, match="'consumer.expiration-time' = 'soon'"):
        t, root = _table(wh, "bad", **{"consumer.expiration-time": "soon"})
    [message] = _maintenance_warnings(lambda: _commit(t, 4))
    assert "automatic consumer expiry failed" in message
    assert "'consumer.expiration-time' = 'soon'" in message and root in message
    # snapshot expiry still ran, held by the consumers left: stale at 1
    assert _consumers(root) == ["consumer-live", "consumer-stale"]
    assert _snapshots(root) == [1, 2, 3, 4]


def test_names_that_are_not_consumers_are_left_alone(wh):
    t, root = _table(wh, "other", **{"consumer.expiration-time": "1 h"})
    others = ["notes.txt", ".consumer-x.123.tmp", "consumerx"]
    for name in others:
        p = os.path.join(root, "consumer", name)
        with open(p, "w") as f:
            f.write("{}")
        os.utime(p, (HOURS_AGO, HOURS_AGO))
    _commit(t, 4)
    assert _consumers(root) == sorted(others + ["consumer-live"])
    assert _snapshots(root) == [3, 4]


@pytest.mark.parametrize("make, why", [
    (lambda p: os.mkdir(p + "-dir"), "'consumer-dir' (not a file)"),
    (lambda p: os.symlink(p + "-stale", p + "-link"), "'consumer-link' (not a file)"),
    (lambda p: open(p + "-", "w").write('{"nextSnapshot": 3}'),
     "'consumer-' (not consumer-<consumer id>)"),
])
def test_an_unclear_entry_stops_it_with_nothing_deleted(wh, make, why):
    t, root = _table(wh, "unclear", **{"consumer.expiration-time": "1 h"})
    make(os.path.join(root, "consumer", "consumer"))
    before = _consumers(root)
    messages = _maintenance_warnings(lambda: _commit(t, 4))
    assert "automatic consumer expiry failed" in messages[0] and why in messages[0]
    assert "no consumer deleted" in messages[0]
    assert _consumers(root) == before and "consumer-stale" in before


def test_an_unlistable_consumer_directory_deletes_nothing(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    (root / "consumer").write_text("not a directory")
    with pytest.raises(StorageError, match="consumer"):
        _expire.expire_consumers(str(root), None, int(time.time() * 1000))
    assert (root / "consumer").read_text() == "not a directory"


def test_expire_consumers_returns_what_it_deleted(tmp_path):
    root = str(tmp_path / "t")
    for cid in ("a", "b"):
        record_consumer(root, cid, 7)
    os.utime(os.path.join(root, "consumer", "consumer-a"), (HOURS_AGO, HOURS_AGO))
    cutoff = int((HOURS_AGO + 1) * 1000)
    assert _expire.expire_consumers(root, None, cutoff) == [
        os.path.join(root, "consumer", "consumer-a")]
    assert _consumers(root) == ["consumer-b"]
    # modified exactly at the cutoff: not before it, kept (Java's isAfter)
    os.utime(os.path.join(root, "consumer", "consumer-b"), ns=(cutoff * 10 ** 6,) * 2)
    assert _expire.expire_consumers(root, None, cutoff) == []
    assert _expire.expire_consumers(str(tmp_path / "none"), None, cutoff) == []
    fileio.make_dirs(os.path.join(root, "consumer", "consumer-d"))
    os.utime(os.path.join(root, "consumer", "consumer-b"), (HOURS_AGO, HOURS_AGO))
    with pytest.raises(TableMetadataError, match="'consumer-d' \\(not a file\\)"):
        _expire.expire_consumers(root, None, cutoff)
    assert _consumers(root) == ["consumer-b", "consumer-d"]


def test_whole_milliseconds_truncate_as_java_s(tmp_path):
    """A file modified 0.4 ms before the cutoff is before it in Java's whole
    milliseconds (``FileStatus.getModificationTime`` truncates)."""
    root = str(tmp_path / "t")
    record_consumer(root, "a", 7)
    cutoff = int((HOURS_AGO + 1) * 1000)
    os.utime(os.path.join(root, "consumer", "consumer-a"), ns=(cutoff * 10 ** 6 - 400_000,) * 2)
    assert _expire.expire_consumers(root, None, cutoff) == [
        os.path.join(root, "consumer", "consumer-a")]


def test_on_s3_the_listing_s_last_modified_expires_a_consumer(s3):
    # LastModified cannot be set: a short duration, and a bounded wait for it
    # to pass the listed (whole-second) time of the consumer's object
    from pypaimon import CatalogFactory, Schema
    store = s3.server.catalog_options()
    catalog = CatalogFactory.create({"warehouse": f"s3://{s3.bucket}/wh", **store})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, options={
        "file.format": "row", **OPTIONS, "consumer.expiration-time": "300 ms"}), True)
    t = catalog.get_table("db.t")
    root = f"s3://{s3.bucket}/wh/db.db/t"
    rp.accelerate()
    _commit(t, 1)
    record_consumer(root, "stale", 1, store)
    write_atomically(f"{root}/consumer/notes.txt", b"{}", store)
    [(_, _, listed)] = [w for w in fileio.walk(f"{root}/consumer", store)
                        if w[0].endswith("/consumer-stale")]
    deadline = time.time() + 5
    while time.time() < listed + 0.5 and time.time() < deadline:
        time.sleep(0.05)
    assert _maintenance_warnings(lambda: _commit(t, 2)) == []
    assert s3.keys("wh/db.db/t/consumer") == {"wh/db.db/t/consumer/notes.txt"}
    assert sorted(k.rsplit("/", 1)[1] for k in s3.keys("wh/db.db/t/snapshot")) == [
        "EARLIEST", "LATEST", "snapshot-2"]
