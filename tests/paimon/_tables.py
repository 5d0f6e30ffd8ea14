"""Helpers for the tests of rowformat.paimon on real pypaimon tables."""
import datetime as dt
import glob
import os
from decimal import Decimal

import pyarrow as pa
import pytest

from tests._deps import importorskip_pypaimon

importorskip_pypaimon()

from pypaimon import CatalogFactory, Schema  # noqa: E402

import rowformat.paimon as rp  # noqa: E402

# the .blob tests, where this pypaimon's .blob files are rowformat's to read and write
blob_accelerated = pytest.mark.skipif(
    "pypaimon.read.split_read.FormatBlobReader" not in rp.status().patched,
    reason=f"pypaimon {rp.status().pypaimon}'s .blob files are read and written stock: "
           f"{rp.status().skipped.get('pypaimon.read.split_read.FormatBlobReader')} "
           f"(its CRC32s leave out the length fields that Java's include)")


class Warehouse:
    def __init__(self, root):
        self.root = str(root)
        self.catalog = CatalogFactory.create({"warehouse": self.root})
        self.catalog.create_database("db", True)

    def create(self, name, arrow_schema, partition_keys=None, primary_keys=None, options=None):
        opts = {"file.format": "row"}
        opts.update({k: str(v) for k, v in (options or {}).items()})
        self.catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
            arrow_schema, partition_keys=partition_keys, primary_keys=primary_keys, options=opts), True)
        return self.table(name)

    def table(self, name):
        return self.catalog.get_table(f"db.{name}")

    def data_files(self, name, suffix=".row"):
        pattern = os.path.join(self.root, "db.db", name, "**", "*" + suffix)
        return sorted(p for p in glob.glob(pattern, recursive=True)
                      if os.path.basename(p).startswith("data-"))


def write(table, data, overwrite=False):
    """One commit of ``data``: an append, or with ``overwrite`` the whole table replaced."""
    wb = table.new_batch_write_builder()
    if overwrite:
        wb = wb.overwrite()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(data)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def read(table, projection=None, predicate=None, scan=None):
    rb = table.new_read_builder()
    if projection is not None:
        rb = rb.with_projection(projection)
    if predicate is not None:
        rb = rb.with_filter(predicate(rb.new_predicate_builder()))
    s = rb.new_scan()
    if scan is not None:
        s = scan(s)
    return rb.new_read().to_arrow(s.plan().splits())


def sort(t, *keys):
    keys = keys or ("id",)
    return t.sort_by([(k, "ascending") for k in keys])


# Every Arrow type pypaimon 2.1.0 maps to a Paimon type and reads back from .row files
# (MULTISET has no Arrow mapping in pypaimon; VARIANT and BLOB are not plain columns).
def typed_table(n, seed=0, whole_seconds=True):
    """``whole_seconds``: timestamps on whole seconds. pypaimon 2.1.0's own
    writer converts a datetime to microseconds through a float
    (``total_seconds() * 1e6``), which is off by one unit for many other
    values, and drops nanoseconds; rowformat's writer is exact."""
    import random
    rnd = random.Random(seed)

    def ts(unit_per_s, lo, hi):
        v = rnd.randint(lo, hi)
        return maybe(v - v % unit_per_s if whole_seconds else v)

    def maybe(v):
        return None if rnd.random() < 0.15 else v

    base = dt.datetime(2001, 2, 3, 4, 5, 6)
    cols = {
        "id": (pa.int64(), list(range(n))),
        "i8": (pa.int8(), [maybe(rnd.randint(-128, 127)) for _ in range(n)]),
        "i16": (pa.int16(), [maybe(rnd.randint(-2**15, 2**15 - 1)) for _ in range(n)]),
        "i32": (pa.int32(), [maybe(rnd.randint(-2**31, 2**31 - 1)) for _ in range(n)]),
        "i64": (pa.int64(), [maybe(rnd.randint(-2**63, 2**63 - 1)) for _ in range(n)]),
        "f32": (pa.float32(), [maybe(rnd.uniform(-1e6, 1e6)) for _ in range(n)]),
        "f64": (pa.float64(), [maybe(rnd.uniform(-1e300, 1e300)) for _ in range(n)]),
        "flag": (pa.bool_(), [maybe(rnd.random() < 0.5) for _ in range(n)]),
        "s": (pa.string(), [maybe("é" * rnd.randint(0, 5) + str(i)) for i in range(n)]),
        "ls": (pa.large_string(), [maybe("x" * rnd.randint(0, 40)) for _ in range(n)]),
        "bin": (pa.binary(), [maybe(rnd.randbytes(rnd.randint(0, 9))) for _ in range(n)]),
        "fbin": (pa.binary(4), [maybe(rnd.randbytes(4)) for _ in range(n)]),
        "d_small": (pa.decimal128(10, 2),
                    [maybe(Decimal(rnd.randint(-10**9, 10**9)) / 100) for _ in range(n)]),
        "d_big": (pa.decimal128(30, 5),
                  [maybe(Decimal(rnd.randint(-10**29, 10**29)).scaleb(-5)) for _ in range(n)]),
        "ts0": (pa.timestamp("s"), [maybe(base + dt.timedelta(seconds=rnd.randint(-10**9, 10**9)))
                                    for _ in range(n)]),
        "ts3": (pa.timestamp("ms"), [ts(10**3, -10**12, 10**12) for _ in range(n)]),
        "ts6": (pa.timestamp("us"), [ts(10**6, -10**15, 10**15) for _ in range(n)]),
        "ts9": (pa.timestamp("ns"), [ts(10**9, -10**17, 10**17) for _ in range(n)]),
        "ltz": (pa.timestamp("us", tz="UTC"), [ts(10**6, -10**15, 10**15) for _ in range(n)]),
        "day": (pa.date32(), [maybe(rnd.randint(-30000, 30000)) for _ in range(n)]),
        "tod": (pa.time32("ms"), [maybe(rnd.randint(0, 86_399_999)) for _ in range(n)]),
        "arr": (pa.list_(pa.int32()), [maybe([maybe(rnd.randint(0, 9)) for _ in range(rnd.randint(0, 4))])
                                       for _ in range(n)]),
        "mp": (pa.map_(pa.string(), pa.float64()),
               [maybe([(f"k{j}", maybe(rnd.random())) for j in range(rnd.randint(0, 3))])
                for _ in range(n)]),
        "st": (pa.struct([("x", pa.int32()), ("y", pa.string()), ("z", pa.list_(pa.string()))]),
               [maybe({"x": maybe(i), "y": maybe(str(i)), "z": maybe(["a", None])}) for i in range(n)]),
        "vec": (pa.list_(pa.float32(), 3), [maybe([rnd.random(), rnd.random(), rnd.random()])
                                            for _ in range(n)]),
    }
    return pa.table({k: pa.array(v, t) for k, (t, v) in cols.items() if supported(t)})


def supported(arrow_type) -> bool:
    """Whether this pypaimon makes a table column of ``arrow_type`` (2.0.0
    has no large_string) and its own readers read it back (see
    :data:`needs_stock_timestamps`)."""
    from pypaimon.schema.data_types import PyarrowFieldParser
    try:
        PyarrowFieldParser.to_paimon_type(arrow_type, True)
    except ValueError:
        return False
    return STOCK_TIMESTAMPS or not (pa.types.is_timestamp(arrow_type)
                                    and arrow_type.unit in ("s", "ns"))


# pypaimon 2.0.0's own readers return TIMESTAMP(0) values 1000 times too
# large and TIMESTAMP(9) values 1000 times too small (its merged reads then
# fail, "year 16005 is out of range"); rowformat reads them as 2.1.0 and
# Java do. The tests that compare with stock pypaimon leave them out there.
STOCK_TIMESTAMPS = rp.status().pypaimon != "2.0.0"
needs_stock_timestamps = pytest.mark.skipif(
    not STOCK_TIMESTAMPS, reason=f"pypaimon {rp.status().pypaimon}'s own readers scale "
                                 f"TIMESTAMP(0) and TIMESTAMP(9) values by 1000")

# pypaimon 2.0.0's writer ignores rowkind.field: every row is an insert, so
# no delete or retraction reaches its tables
WRITES_ROW_KINDS = rp.status().pypaimon != "2.0.0"
needs_row_kinds = pytest.mark.skipif(
    not WRITES_ROW_KINDS, reason=f"pypaimon {rp.status().pypaimon}'s writer ignores "
                                 f"rowkind.field: its tables hold no deletes or retractions")


def rewrite_manifests(table_dir, edit):
    """Rewrites every manifest of the table at ``table_dir`` with
    ``edit(record)`` applied to its entries (records, edited in place), then
    the sizes the manifest lists and snapshots record, so that only the
    edit differs: a table as a damaged or hostile writer leaves it."""
    import json

    import fastavro

    def rewrite(path, change):
        with open(path, "rb") as f:
            reader = fastavro.reader(f)
            schema, codec, records = reader.writer_schema, reader.codec, list(reader)
        for r in records:
            change(r)
        with open(path, "wb") as f:
            fastavro.writer(f, schema, records, codec=codec)

    manifest_dir = os.path.join(table_dir, "manifest")
    names = sorted(os.listdir(manifest_dir))
    for name in names:
        if name.startswith("manifest-") and not name.startswith("manifest-list-"):
            rewrite(os.path.join(manifest_dir, name), edit)

    def fix_size(record):
        p = os.path.join(manifest_dir, record["_FILE_NAME"])
        if os.path.exists(p):
            record["_FILE_SIZE"] = os.path.getsize(p)

    for name in names:
        if name.startswith("manifest-list-"):
            rewrite(os.path.join(manifest_dir, name), fix_size)
    snapshot_dir = os.path.join(table_dir, "snapshot")
    for name in os.listdir(snapshot_dir):
        if name.startswith("snapshot-"):
            path = os.path.join(snapshot_dir, name)
            snap = json.load(open(path))
            for kind in ("base", "delta"):
                snap[f"{kind}ManifestListSize"] = os.path.getsize(
                    os.path.join(manifest_dir, snap[f"{kind}ManifestList"]))
            with open(path, "w") as f:
                json.dump(snap, f)

# pypaimon 2.0.0 ignores index-file-in-data-file-dir: its index files are in index/
needs_index_files_in_data_dirs = pytest.mark.skipif(
    rp.status().pypaimon == "2.0.0", reason=f"pypaimon {rp.status().pypaimon} ignores "
                                            f"index-file-in-data-file-dir")

# compaction and the stream sink's commit checks read and commit through
# pypaimon 2.1.0's FileScanner and FileStoreCommit, which 2.0.0 does not have
needs_pypaimon_2_1 = pytest.mark.skipif(
    rp.status().pypaimon == "2.0.0", reason=f"compaction and the stream sink need pypaimon 2.1.0 "
                                            f"(this is {rp.status().pypaimon})")
