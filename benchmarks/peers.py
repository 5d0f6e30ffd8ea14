"""One small adapter per file format, each used the way a competent user would.

Every adapter has:
  write(table, path)          write a pyarrow Table
  scan(path) -> pa.Table      read the whole file back as Arrow
  open(path) -> lookup        an object with get(i) (one row) and take(sorted_rows)
                              (a pa.Table of those rows, in order), opened once
  size(path) -> bytes on disk

get(i) returns the format's natural single-row result: a tuple of Python values
for rowformat, pypaimon and Avro (that is what their row APIs give), a one-row
Arrow table for the columnar formats (no Python conversion is charged to them).

Peers are optional: `available()` lists the adapters whose packages import.
"""
from __future__ import annotations

import bisect
import inspect
import io
import os
import shutil
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dataset import ARROW_SCHEMA, SCHEMA_TEXT

CHUNK_ROWS = 10_000     # Parquet row groups and Arrow IPC batches ("small row groups")


def _file_size(path) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    return os.path.getsize(path)


def _rm(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def _supports(fn, name) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class Peer:
    name = "?"
    ext = ""
    note = ""
    # Peers that take minutes at 1M rows are measured on this many rows and scaled linearly.
    max_rows_write: int | None = None
    max_rows_scan: int | None = None
    lookups: int | None = None      # fewer single-row lookups for very slow peers

    def size(self, path) -> int:
        return _file_size(path)

    def remove(self, path):
        _rm(path)

    def version(self) -> str:
        return ""


# --------------------------------------------------------------------------- rowformat
class RowFormat(Peer):
    name = "rowformat"
    ext = ".row"
    note = "block_size 64 KiB, zstd level 1; reader LRU cache 64 MiB"

    def __init__(self, threads: int | None = None, cache_bytes: int = 64 << 20):
        import rowformat
        self.rf = rowformat
        self.schema = rowformat.schema(SCHEMA_TEXT)
        self.cache_bytes = cache_bytes
        self.wopts, self.ropts = {}, {}
        # The optimizer may add threads= to the reader and writer: use it when present.
        if threads and _supports(rowformat.RowFileWriter.__init__, "threads"):
            self.wopts["threads"] = threads
        if threads and _supports(rowformat.RowFileReader.__init__, "threads"):
            self.ropts["threads"] = threads
        if self.wopts or self.ropts:
            self.note += f"; threads={threads}"
        # Local files are memory-mapped, as for Arrow IPC and as a pyarrow user would.
        if _supports(rowformat.RowFileReader.__init__, "memory_map"):
            self.ropts["memory_map"] = True
            self.note += "; memory_map=True"

    def version(self):
        return self.rf.__version__

    def write(self, table, path):
        with self.rf.RowFileWriter(path, self.schema, **self.wopts) as w:
            w.write(table)

    def scan(self, path):
        with self.rf.RowFileReader(path, self.schema, cache_bytes=self.cache_bytes, **self.ropts) as r:
            return r.read()

    def open(self, path, **opts):
        return RowFormatLookup(self.rf.RowFileReader(path, self.schema, cache_bytes=self.cache_bytes,
                                                     **self.ropts, **opts))


class RowFormatLookup:
    def __init__(self, reader):
        self.reader = reader
        self.get = reader.get
        self.take = reader.take

    def drop_cache(self):
        self.reader.clear_cache()

    def close(self):
        self.reader.close()


# --------------------------------------------------------------------------- pypaimon
class PyPaimonRow(Peer):
    name = "pypaimon .row"
    ext = ".row"
    note = ("pure Python per value; FormatRowWriter/FormatRowReader; a new reader per lookup "
            "(it takes row_indices at construction)")
    max_rows_write = 20_000
    max_rows_scan = 20_000
    lookups = 200

    def __init__(self):
        import pypaimon  # noqa: F401
        from pypaimon.filesystem.local_file_io import LocalFileIO
        from pypaimon.read.reader.format_row_reader import FormatRowReader
        from pypaimon.schema.data_types import PyarrowFieldParser
        from pypaimon.write.writer.format_row_writer import FormatRowWriter
        self.Writer, self.Reader = FormatRowWriter, FormatRowReader
        self.fields = PyarrowFieldParser.to_paimon_schema(ARROW_SCHEMA)
        self.names = [f.name for f in self.fields]
        self.file_io = LocalFileIO()

    def version(self):
        from importlib.metadata import version
        return version("pypaimon")

    def write(self, table, path):
        with open(path, "wb") as out:
            w = self.Writer(out, self.fields)
            w.write_table(table)
            w.close()

    def _reader(self, path, rows=None, batch_size=4096):
        return self.Reader(self.file_io, os.path.abspath(path), self.names, self.fields, None,
                           batch_size=batch_size, row_indices=rows)

    @staticmethod
    def _drain(reader) -> pa.Table:
        batches = []
        while (b := reader.read_arrow_batch()) is not None:
            batches.append(b)
        reader.close()
        return pa.Table.from_batches(batches)

    def scan(self, path):
        return self._drain(self._reader(path))

    def open(self, path):
        peer = self
        path = os.path.abspath(path)

        class Lookup:
            # FormatRowReader takes its row numbers at construction: one reader per call
            # (it re-reads the footer and index each time; that is its API).
            def get(self, i):
                t = peer._drain(peer._reader(path, [int(i)]))
                return tuple(c[0].as_py() for c in t.columns)

            def take(self, rows):
                return peer._drain(peer._reader(path, [int(r) for r in rows]))

            def close(self):
                pass
        return Lookup()


# --------------------------------------------------------------------------- Parquet
class Parquet(Peer):
    name = "Parquet"
    ext = ".parquet"

    def __init__(self, row_group_rows: int = CHUNK_ROWS):
        import pyarrow.parquet as pq
        self.pq = pq
        self.rg = row_group_rows
        self.note = f"zstd level 1, row groups of {row_group_rows:,} rows, page index"

    def version(self):
        return pa.__version__

    def write(self, table, path):
        self.pq.write_table(table, path, compression="zstd", compression_level=1,
                            row_group_size=self.rg, write_page_index=True)

    def scan(self, path):
        return self.pq.read_table(path)

    def open(self, path):
        pf = self.pq.ParquetFile(path, memory_map=True)
        md = pf.metadata
        starts = np.cumsum([0] + [md.row_group(g).num_rows for g in range(md.num_row_groups)])

        class Lookup:
            def get(self, i):
                g = int(np.searchsorted(starts, i, side="right")) - 1
                return pf.read_row_group(g).slice(int(i - starts[g]), 1)

            def take(self, rows):
                rows = np.asarray(rows, np.int64)
                groups = np.searchsorted(starts, rows, side="right") - 1
                needed = np.unique(groups)
                t = pf.read_row_groups(needed.tolist())
                # positions inside the concatenation of the needed row groups
                base = np.cumsum(np.concatenate(([0], starts[needed + 1] - starts[needed])))[:-1]
                local = rows - starts[groups] + base[np.searchsorted(needed, groups)]
                return t.take(pa.array(local))

            def close(self):
                pf.close()
        return Lookup()


# --------------------------------------------------------------------------- Arrow IPC
class ArrowIPC(Peer):
    ext = ".arrow"

    def __init__(self, compression: str | None = None, batch_rows: int = CHUNK_ROWS):
        self.compression = compression
        self.batch_rows = batch_rows
        self.name = f"Arrow IPC mmap ({compression or 'uncompressed'})"
        self.note = f"file format, record batches of {batch_rows:,} rows, memory-mapped"

    def version(self):
        return pa.__version__

    def write(self, table, path):
        opts = pa.ipc.IpcWriteOptions(compression=self.compression)
        with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, table.schema, options=opts) as w:
            w.write_table(table, max_chunksize=self.batch_rows)

    def scan(self, path):
        with pa.memory_map(path) as m:
            return pa.ipc.open_file(m).read_all()

    def open(self, path):
        m = pa.memory_map(path)
        r = pa.ipc.open_file(m)
        # Batch row counts are not in the IPC footer; the writer's chunking is known:
        # every batch holds batch_rows rows (the last may hold fewer).
        len_b = self.batch_rows

        class Lookup:
            def get(self, i):
                b = int(i) // len_b
                return r.get_batch(b).slice(int(i) - b * len_b, 1)

            def take(self, rows):
                rows = np.asarray(rows, np.int64)
                ids = rows // len_b
                cuts = np.flatnonzero(np.diff(ids)) + 1
                parts = []
                for grp in np.split(rows, cuts):
                    b = int(grp[0] // len_b)
                    parts.append(r.get_batch(b).take(pa.array(grp - b * len_b)))
                return pa.Table.from_batches(parts)

            def close(self):
                m.close()
        return Lookup()


# --------------------------------------------------------------------------- Lance
class Lance(Peer):
    name = "Lance"
    ext = ".lance"
    note = "lance.write_dataset defaults; dataset.take"

    def __init__(self):
        import lance
        self.lance = lance

    def version(self):
        return self.lance.__version__

    def write(self, table, path):
        _rm(path)
        self.lance.write_dataset(table, path, mode="create")

    def scan(self, path):
        return self.lance.dataset(path).to_table()

    def open(self, path):
        ds = self.lance.dataset(path)

        class Lookup:
            def get(self, i):
                return ds.take([int(i)])

            def take(self, rows):
                return ds.take(np.asarray(rows, np.int64).tolist())

            def close(self):
                pass
        return Lookup()


# --------------------------------------------------------------------------- Vortex
class Vortex(Peer):
    name = "Vortex"
    ext = ".vortex"
    note = "vortex.io.write defaults; VortexFile.to_arrow(indices=...)"

    def __init__(self):
        import vortex
        self.vx = vortex

    def version(self):
        from importlib.metadata import version
        return version("vortex-data")

    def write(self, table, path):
        self.vx.io.write(table, path)

    def scan(self, path):
        return self.vx.open(path).to_arrow(schema=ARROW_SCHEMA).read_all()

    def open(self, path):
        vf = self.vx.open(path)
        vx = self.vx

        class Lookup:
            def get(self, i):
                idx = vx.array(pa.array([int(i)], pa.uint64()))
                return vf.to_arrow(indices=idx, schema=ARROW_SCHEMA).read_all()

            def take(self, rows):
                idx = vx.array(pa.array(rows, pa.uint64()))
                return vf.to_arrow(indices=idx, schema=ARROW_SCHEMA).read_all()

            def close(self):
                pass
        return Lookup()


# --------------------------------------------------------------------------- Avro
AVRO_SCHEMA = {
    "type": "record", "name": "Row",
    "fields": [
        {"name": "id", "type": ["null", "long"]},
        {"name": "user_id", "type": ["null", "int"]},
        {"name": "score", "type": ["null", "double"]},
        {"name": "flag", "type": ["null", "boolean"]},
        {"name": "name", "type": ["null", "string"]},
        {"name": "city", "type": ["null", "string"]},
        {"name": "tags", "type": ["null", {"type": "array", "items": ["null", "string"]}]},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
        {"name": "amount", "type": ["null", {"type": "bytes", "logicalType": "decimal",
                                             "precision": 10, "scale": 2}]},
        {"name": "payload", "type": ["null", "bytes"]},
    ],
}


class Avro(Peer):
    name = "Avro (fastavro)"
    ext = ".avro"
    note = ("zstandard codec, default 16 kB blocks; lookups via a block index built at open "
            "(offsets from block_reader), then decode the block up to the row")
    max_rows_write = 200_000
    max_rows_scan = 200_000

    def __init__(self):
        import fastavro
        self.fa = fastavro
        self.parsed = fastavro.parse_schema(AVRO_SCHEMA)

    def version(self):
        return self.fa.__version__

    def write(self, table, path):
        with open(path, "wb") as f:
            # Arrow -> Python dicts is how fastavro takes rows; batch to bound memory.
            def records():
                for batch in table.to_batches(max_chunksize=65536):
                    yield from batch.to_pylist()
            self.fa.writer(f, self.parsed, records(), codec="zstandard")

    def scan(self, path):
        with open(path, "rb") as f:
            rows = list(self.fa.reader(f))
        # timestamps come back tz-aware (UTC); Arrow converts them to the naive ms type
        return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)

    def open(self, path):
        import zstandard
        fa = self.fa
        f = open(path, "rb")
        blocks = list(fa.block_reader(f))
        offsets = [b.offset for b in blocks]
        counts = [b.num_records for b in blocks]
        starts = np.cumsum([0] + counts)
        schema = fa.parse_schema(blocks[0].writer_schema) if blocks else self.parsed
        del blocks
        fd = f.fileno()
        dctx = zstandard.ZstdDecompressor()

        def block_bytes(b):
            # the block starts with the record count and byte size (zigzag varints)
            head = os.pread(fd, 20, offsets[b])
            pos, vals = 0, []
            for _ in range(2):
                shift = v = 0
                while True:
                    byte = head[pos]
                    pos += 1
                    v |= (byte & 0x7F) << shift
                    shift += 7
                    if byte < 0x80:
                        break
                vals.append((v >> 1) ^ -(v & 1))
            data = os.pread(fd, vals[1], offsets[b] + pos)
            return io.BytesIO(dctx.decompressobj().decompress(data))

        class Lookup:
            def get(self, i):
                b = bisect.bisect_right(starts, int(i)) - 1
                buf = block_bytes(b)
                for _ in range(int(i) - int(starts[b])):
                    fa.schemaless_reader(buf, schema, None)
                return fa.schemaless_reader(buf, schema, None)

            def take(self, rows):
                rows = np.asarray(rows, np.int64)
                ids = np.searchsorted(starts, rows, side="right") - 1
                out = []
                for b in np.unique(ids):
                    want = set((rows[ids == b] - starts[b]).tolist())
                    buf, last = block_bytes(int(b)), max(want)
                    for k in range(last + 1):
                        rec = fa.schemaless_reader(buf, schema, None)
                        if k in want:
                            out.append(rec)
                return pa.Table.from_pylist(out, schema=ARROW_SCHEMA)

            def close(self):
                f.close()
        return Lookup()


ALL = {
    "rowformat": RowFormat,
    "pypaimon": PyPaimonRow,
    "parquet": Parquet,
    "ipc": lambda: ArrowIPC(None),
    "ipc-zstd": lambda: ArrowIPC("zstd"),
    "lance": Lance,
    "vortex": Vortex,
    "avro": Avro,
}


def make(key: str, **kw) -> Peer:
    return ALL[key](**kw) if kw else ALL[key]()


def available() -> list[str]:
    out = []
    for k in ALL:
        try:
            make(k)
            out.append(k)
        except ImportError:
            pass
    return out
