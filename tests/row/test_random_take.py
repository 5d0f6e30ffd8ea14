"""Random batches: take() of scattered rows (each touched block read and
decompressed once, on the threads, whole or only up to its last wanted
row) equals a reference read, in the order asked, for every type, nulls and
duplicates, whatever the threads, cache, prefix and mapping options; across
files through RowDataset; and damage is reported with the file and block."""
import io
import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

import rowformat
from rowformat import RowFileReader, RowFileWriter, _rowcodec, schema
from rowformat.dataset import RowDataset

from .test_roundtrip import ALL_TYPES, ROWS

OPTIONS = [dict(threads=1), dict(threads=2), dict(threads=2, prefix_lookups=True),
           dict(threads=3, prefix_lookups=True, memory_map=True), dict(threads=2, cache_bytes=0),
           dict(threads=2, cache_bytes=0, prefix_lookups=True)]


@pytest.fixture(scope="module")
def every_type(tmp_path_factory):
    """The roundtrip rows of every type (edge values, all nulls), 60 times
    over, in small blocks: a random batch touches many blocks."""
    path = tmp_path_factory.mktemp("rt") / "all.row"
    s = schema(ALL_TYPES)
    with RowFileWriter(path, s, block_size=4096) as w:
        for _ in range(60):
            w.write_rows(ROWS)
    with RowFileReader(path, s) as r:
        assert r.num_blocks > 20
        return path, s, r.read()


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_scattered_takes_equal_the_reference(every_type, options):
    path, s, ref = every_type
    rng = np.random.default_rng(7)
    n = ref.num_rows
    with RowFileReader(path, s, **options) as r:
        for rows in (rng.integers(0, n, 100), rng.permutation(n)[:150],
                     np.sort(rng.choice(n, 90, replace=False)),      # sorted, distinct
                     np.repeat(rng.integers(0, n, 40), 3),           # duplicates
                     np.array([n - 1] * 70 + [0] * 5)):
            for columns in (None, ["nn", "m", "ts9"]):
                want = ref.take(pa.array(rows)) if columns is None \
                    else ref.select(columns).take(pa.array(rows))
                got = r.take(rows, columns=columns)
                assert got.equals(want), (options, columns)
        if options.get("cache_bytes", 1):
            # the blocks decompressed whole are cached: the same batch again decompresses none
            misses = r._store.cache.misses
            r.take(rows)
            assert r._store.cache.misses == misses or options.get("prefix_lookups")


@pytest.fixture(scope="module")
def ints(tmp_path_factory):
    path = tmp_path_factory.mktemp("ints") / "ints.row"
    s = schema("k BIGINT NOT NULL, v STRING, a ARRAY<INT>")
    n = 30000
    table = pa.table({"k": pa.array(np.arange(n, dtype=np.int64)),
                      "v": [None if i % 9 == 0 else "v" * (i % 17) for i in range(n)],
                      "a": [None if i % 11 == 0 else list(range(i % 5)) for i in range(n)]},
                     schema=rowformat.to_arrow_schema(s))
    with RowFileWriter(path, s, block_size=2048) as w:
        w.write(table)
    return path, s, table


@given(rows=st.lists(st.integers(0, 29999), min_size=65, max_size=600),
       prefix=st.booleans(), threads=st.sampled_from([1, 2, 4]))
def test_property_take_round_trips(ints, rows, prefix, threads):
    path, s, table = ints
    with RowFileReader(path, s, threads=threads, prefix_lookups=prefix, cache_bytes=0) as r:
        assert r.take(rows).equals(table.take(pa.array(rows, pa.int64())))


def test_a_damaged_block_is_reported_with_the_file_and_block(ints, tmp_path):
    path, s, _ = ints
    data = bytearray(path.read_bytes())
    with RowFileReader(path, s) as r:
        offset, size = r._table.frame(5)
        first = int(r.block_index.row_starts[5])
    data[offset + size // 2: offset + size // 2 + 64] = b"\xff" * 64
    bad = tmp_path / "bad.row"
    bad.write_bytes(bytes(data))
    rows = list(range(0, 30000, 97)) + [first + 3]
    for prefix in (False, True):
        with RowFileReader(bad, s, threads=2, prefix_lookups=prefix) as r:
            with pytest.raises(rowformat.CorruptFileError, match=r"bad\.row: block 5"):
                r.take(rows)


def test_dataset_batches_across_files_equal_the_reference(ints, tmp_path):
    path, s, table = ints
    paths, parts, start = [], [], 0
    for k, n in enumerate([5000, 1, 0, 12000, 12999]):
        p = str(tmp_path / f"f{k}.row")
        with RowFileWriter(p, s, block_size=1024) as w:
            w.write(table.slice(start, n))
        paths.append(p)
        start += n
    rng = np.random.default_rng(2)
    for options in (dict(), dict(prefix_lookups=True, cache_bytes=0, memory_map=True)):
        ds = RowDataset(paths, schema=s, **options)
        for rows in (rng.integers(0, 30000, 256), np.repeat(rng.integers(0, 30000, 50), 2),
                     [5000, 4999, 5001, 29999, 5000]):
            got = ds.take(rows)
            assert got.to_pylist() == table.take(pa.array(rows, pa.int64())).to_pylist()
            assert got.column("k").to_pylist() == [int(i) for i in rows]


def test_touched_blocks_decompress_prefixes_only_with_prefix_lookups(ints):
    path, s, table = ints
    for prefix in (False, True):
        with RowFileReader(path, s, threads=2, prefix_lookups=prefix) as r:
            rows = r.block_index.row_starts
            blocks = np.arange(r.num_blocks)
            got = r.touched_blocks(blocks, np.full(r.num_blocks, 2))
            counts = [len(b) for b in np.split(np.arange(r.num_rows), rows[1:])]
            assert [b.num_rows for b in got] == ([3] * r.num_blocks if prefix else counts)
            assert (r._store.cache.nbytes > 0) != prefix     # only whole blocks are cached
            dec = r._store.decoder(None)
            for b, block in enumerate(got):
                assert dec.decode_row(block, 2) == tuple(table.slice(int(rows[b]) + 2, 1)
                                                         .to_pylist()[0].values())


def test_rows_that_do_not_decode_are_named_by_block_and_row(ints):
    """Rows whose bytes do not fit the schema given: the error names the
    file, the block and the file's row of the first one in the order asked."""
    path, _, _ = ints
    wrong = schema("k BIGINT NOT NULL, v STRING, a ARRAY<INT>, z BIGINT NOT NULL")
    with RowFileReader(path, wrong, threads=2) as r:
        rows = [29000, 17, 5000] + list(range(100, 30000, 301))
        b = int(r._block_of(np.array([29000]))[0])
        with pytest.raises(rowformat.CorruptFileError,
                           match=rf"ints\.row: block {b}, row 29000\b"):
            r.take(rows)


def _whole(reader, frames, usizes, rows):
    """BlockPrefixes' whole-block decompression (last -1) of ``frames``."""
    job = _rowcodec.BlockPrefixes(list(frames), np.array(usizes, np.int64),
                                  np.array(rows, np.int64), np.full(len(frames), -1, np.int64))
    job.run(reader._store.decoder(None))
    return job.blocks()


@pytest.mark.parametrize("block_size", [2048, 65536])
def test_whole_blocks_in_c_give_libzstds_bytes_or_nothing(block_size, tmp_path):
    """A take decompresses its whole blocks with rf_zstd.h (no Python call
    per block): on damaged frames (bit flips, bytes overwritten, cuts), it
    gives exactly what libzstd gives, or nothing (the reader then goes to
    libzstd, which names the error); never bytes libzstd refuses."""
    import random
    import zstandard
    s = schema("k BIGINT NOT NULL, v STRING")
    path = tmp_path / "w.row"
    rng = random.Random(block_size)
    with RowFileWriter(path, s, block_size=block_size) as w:
        w.write_rows([(i, rng.choice(["", "ab" * rng.randint(0, 30), None])) for i in range(30000)])
    data = path.read_bytes()
    r = RowFileReader(path, s)
    meta = [(*r._table.frame(b), r._table.usize(b), r._table.rows(b)) for b in range(6)]
    dctx = zstandard.ZstdDecompressor()
    frames, sizes, rows, want = [], [], [], []
    for offset, size, usize, n in meta:
        frame = data[offset:offset + size]
        damaged = [frame[:cut] for cut in range(6, size, max(1, size // 40))]
        for _ in range(150):
            bad = bytearray(frame)
            at = rng.randrange(size)
            if rng.random() < 0.5:
                bad[at] ^= 1 << rng.randrange(8)
            else:
                bad[at:at + 8] = rng.randbytes(8)
            damaged.append(bytes(bad[:size]))
        for bad in [frame] + damaged:
            try:
                out = dctx.decompress(bad, usize, False, True)
                ok = out if len(out) == usize else None
            except zstandard.ZstdError:
                ok = None
            frames.append(bad)
            sizes.append(usize)
            rows.append(n)
            want.append(ok)
    got = _whole(r, frames, sizes, rows)
    r.close()
    assert got[0] is not None and bytes(got[0].data) == want[0]     # an intact frame: decoded here
    decoded = 0
    for block, ok in zip(got, want):
        if block is not None:
            assert ok is not None and bytes(block.data) == ok
            decoded += 1
    assert decoded > len(meta) and want.count(None) > 100   # both kinds seen


@pytest.mark.parametrize("cut", ["inside", "before"])
def test_a_file_truncated_under_an_open_reader_names_the_block(ints, tmp_path, cut):
    """Blocks are read with pread in C: a file cut short after the reader
    opened it (its frame ends early, or is gone) is a CorruptFileError
    naming the file and the block, never a crash or a short frame decoded."""
    path, s, table = ints
    short = tmp_path / "short.row"
    short.write_bytes(path.read_bytes())
    for threads in (1, 2):
        with RowFileReader(short, s, threads=threads, cache_bytes=0) as r:
            offset, size = r._table.frame(5)
            starts = r.block_index.row_starts
            rows = list(range(0, int(starts[5]), 3)) + [int(starts[5]) + 1]
            assert r.take(rows).equals(table.take(pa.array(rows, pa.int64())))
            os.truncate(short, offset + size // 2 if cut == "inside" else offset)
            got = size // 2 if cut == "inside" else 0
            with pytest.raises(rowformat.CorruptFileError,
                               match=rf"short\.row: block 5: read {got} of {size} bytes at "
                                     rf"offset {offset}: the file is truncated"):
                r.take(rows)
        short.write_bytes(path.read_bytes())


def test_takes_from_a_file_object_equal_the_reference(ints):
    """A file object has no descriptor to pread: its frames are read in
    Python and decompressed by the same job."""
    path, s, table = ints
    rows = np.random.default_rng(3).integers(0, table.num_rows, 300)
    for prefix in (False, True):
        with open(path, "rb") as f, RowFileReader(io.BytesIO(f.read()), s, threads=2,
                                                  prefix_lookups=prefix) as r:
            assert r.take(rows).equals(table.take(pa.array(rows)))


def test_each_block_counts_once_in_decompressions_also_when_left_to_libzstd(ints, tmp_path):
    """``decompressions`` counts the blocks a take decompressed: blocks whose
    frames the C path leaves to libzstd (these carry content checksums)
    count once, not once for the attempt and again for libzstd."""
    import zstandard
    from rowformat.row.footer import Footer
    path, s, table = ints
    data = path.read_bytes()
    meta = rowformat.read_metadata(path)
    footer, index = meta.footer, meta.block_index
    dctx, cctx = zstandard.ZstdDecompressor(), zstandard.ZstdCompressor(write_checksum=True)
    frames = [cctx.compress(dctx.decompress(data[o:o + c], max_output_size=int(u)))
              for o, c, u in zip(index.offsets.tolist(), index.compressed_sizes.tolist(),
                                 index.uncompressed_sizes.tolist())]
    body = b"".join(frames)
    new_index = rowformat.BlockIndex(np.array([len(f) for f in frames], np.int64),
                                     index.uncompressed_sizes, index.row_starts).to_bytes()
    checked = tmp_path / "checksums.row"
    checked.write_bytes(body + new_index + Footer(footer.total_rows, len(frames), len(body),
                                                  len(new_index)).to_bytes())
    rows = np.random.default_rng(3).permutation(30000)[:300]    # past the inline takes
    for source in (checked, path):
        with RowFileReader(source, s, threads=2, cache_bytes=0) as r:
            got = r.take(rows)
            assert got.to_pylist() == table.take(pa.array(rows)).to_pylist()
            touched = len(np.unique(r._block_of(rows)))
            assert r.decompressions == touched > 100


@pytest.mark.parametrize("prefix", [False, True])
def test_a_short_take_decompresses_a_block_once_without_a_cache(ints, prefix):
    """A take of a few rows decodes them in the order asked, run by run; a
    block whose rows come back later in the list (5, 29999, 6) is kept for
    them, not decompressed again, even when the reader caches no block;
    with prefix lookups its prefix reaches the last row the take needs."""
    path, s, table = ints
    with RowFileReader(path, s, cache_bytes=0, prefix_lookups=prefix) as r:
        end = int(r.block_index.row_starts[1]) - 1       # block 0's last row
        for rows, blocks in (([5, 29999, 6], 2), ([5, 29999, 6, 12000, 29998, 7], 3),
                             ([1, 29999, end, 2], 2)):
            before = r.decompressions
            got = r.take(rows)
            assert got.to_pylist() == table.take(pa.array(rows)).to_pylist()
            assert r.decompressions - before == blocks, rows
