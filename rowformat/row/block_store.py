"""The block store under a reader: one ``.row`` file's block table (compact
int64 arrays), its share of a block cache, and fetching and decompressing
its blocks, one at a time (a lookup, a scan's unit) or many at once on all
threads (:class:`BlockJob`, a take's touched blocks, of one file or many).

The scan pipeline (reader.py), the take strategies and the multi-file
takes (take.py) reach a file's blocks only through this interface.
"""
from __future__ import annotations

import os
import threading
from typing import Any, NamedTuple, NoReturn

import numpy as np
import pyarrow as pa
import zstandard

from .. import _rowcodec
from .._blockindex import BlockTable
from ..datatypes import RowType
from ..errors import CorruptFileError, LimitExceededError, RowMemoryError
from .block_cache import BlockCache
from .block_index import BlockIndex, read_footer_and_index
from .footer import Footer

# With prefix_lookups, a lookup of a row in the first PREFIX_SHARE of its block's rows decompresses
# only the block's prefix up to that row (PrefixBlock); past it, the whole
# block through libzstd is as fast (measured on 64 KiB level-1 blocks,
# benchmarks/prefix_lookups.py: the decoder is about as fast as libzstd for
# a whole block, and walking the rows before the row costs what it saves)
PREFIX_SHARE = 0.6


def decompress_frame(dctx, frame, usize: int, allow_extra_data: bool = True) -> bytes:
    """A block's ZSTD frame decompressed to exactly ``usize`` bytes, as its
    index entry declares, or CorruptFileError (for after "block B: ").
    python-zstandard allocates a frame's own content size whatever
    max_output_size says, so that must match first; Java's frames have none
    (no content-size flags in the header's descriptor byte: read without a
    call). Frames without one get the index's size as their bound.

    Bytes after the frame (inside the block's compressed size) are ignored,
    as Paimon Java's reader ignores them: the decoded block is the same, and
    its size and row count are checked. ``verify`` reports them (it asks
    for ``allow_extra_data=False``). Passed explicitly: python-zstandard
    means to make strictness its default."""
    try:
        if len(frame) < 5 or frame[4] & 0xE0:
            declared = zstandard.frame_content_size(frame)
            if declared != -1 and declared != usize:
                raise CorruptFileError(f"the ZSTD frame declares {declared} bytes, but the index "
                                       f"declares {usize}")
        # max_output_size, read_across_frames, allow_extra_data, by position: faster
        data = dctx.decompress(frame, usize or 1, False, allow_extra_data)
    except zstandard.ZstdError as e:
        raise CorruptFileError(f"ZSTD decompression failed: {e}") from None
    if len(data) != usize:
        raise CorruptFileError(f"decompressed to {len(data)} bytes, but the index declares {usize}")
    return data


class BlockStore:
    """One file's blocks. ``table`` (a BlockTable: 32 bytes a block) locates
    them; ``cache`` (a BlockCache, maybe shared by many stores) keeps whole
    blocks and, with ``prefix_lookups``, a lookup's partly decompressed
    prefixes (resumed by the next lookup in the block), both in one budget.
    Per thread: a decompressor and the decoders of the file's ``schema``."""

    def __init__(self, source, footer: Footer, index: BlockIndex, schema: RowType,
                 arrow_schema: pa.Schema, cache: BlockCache, *, prefix_lookups: bool = False,
                 max_row_size: int = 0):
        self.source = source
        self.name = source.name
        self.footer, self.index = footer, index
        self.schema, self.arrow_schema = schema, arrow_schema
        self.prefix_lookups = prefix_lookups
        self.max_row_size = max_row_size
        self.table = BlockTable(index.offsets, index.compressed_sizes, index.uncompressed_sizes,
                                index.row_starts, footer.total_rows)
        self.row_starts = self.table.row_starts
        self.num_blocks = self.table.num_blocks
        self.cache = cache
        self._key = cache.owner()           # whole block b: key + 2b; its prefix: key + 2b + 1
        self._local = threading.local()     # per thread: a decompressor, decoders
        self.decompressions = 0             # blocks (and block prefixes) decompressed

    # -- where blocks are ---------------------------------------------------
    def block_of(self, rows: np.ndarray) -> np.ndarray:
        """The block of each row of ``rows`` (row numbers in the file)."""
        return np.searchsorted(self.row_starts, rows, side="right") - 1

    def row_bytes(self, b: int) -> int:
        """Block ``b``'s uncompressed bytes per row (rounded up)."""
        return -(-self.table.usize(b) // max(self.table.rows(b), 1))

    # -- the cache ----------------------------------------------------------
    def cached(self, b: int):
        """Block ``b`` if the cache holds it whole, else None."""
        return self.cache.get(self._key + 2 * b)

    def is_cached(self, b: int) -> bool:
        return self._key + 2 * b in self.cache

    def cached_prefix(self, b: int):
        """The lookups' partly decompressed prefix of block ``b``, or None."""
        return self.cache.get(self._key + 2 * b + 1)

    def keep(self, b: int, block) -> None:
        """Caches block ``b`` (whole); a lookup's prefix of it goes."""
        self.cache.put(self._key + 2 * b, block, block.nbytes)
        if self._key + 2 * b + 1 in self.cache:
            self.cache.pop(self._key + 2 * b + 1)

    def clear(self) -> None:
        """Drops this store's blocks and prefixes from the cache."""
        self.cache.clear(self._key)

    # -- one block ------------------------------------------------------------
    def block(self, b: int, *, cache: bool = True) -> "_rowcodec.Block":
        """Block ``b``, decompressed and checked: from the cache, and put
        there when ``cache`` (scans pass False, so they do not evict the
        blocks point lookups keep hot)."""
        block = self.cache.get(self._key + 2 * b)
        if block is not None:
            return block
        block = self.decompressed(b)
        if cache:
            self.keep(b, block)
        return block

    def decompressed(self, b: int, fetch: Any = None) -> "_rowcodec.Block":
        """Block ``b`` read (from ``fetch`` when it holds it: a scan's
        read-ahead), decompressed and checked (not through the cache)."""
        try:
            d = self._local.decompressor
        except AttributeError:
            d = self._local.decompressor = zstandard.ZstdDecompressor()
        frame = self.frame(b, fetch)
        self.decompressions += 1
        try:
            block = _rowcodec.Block(decompress_frame(d, frame, self.table.usize(b)))
        except CorruptFileError as e:
            raise CorruptFileError(f"{self.name}: block {b}: {e}") from None
        finally:
            if type(frame) is memoryview:
                frame.release()
        rows = self.table.rows(b)
        if block.num_rows != rows:
            raise CorruptFileError(f"{self.name}: block {b} holds {block.num_rows} rows, but the "
                                   f"index says {rows}")
        return block

    def frame(self, b: int, fetch: Any = None):
        """Block ``b``'s compressed bytes, from ``fetch`` when it holds them;
        a file that ends inside the block raises naming the block."""
        offset, size = self.table.frame(b)
        try:
            if fetch is None or b not in fetch:
                return self.source.frame(offset, size)
            frame = fetch.frame(b)
            if len(frame) != size:
                self.source._truncated(offset, size, len(frame))
            return frame
        except CorruptFileError as e:
            got = getattr(e, "got", None)
            if got is None:
                raise
            self.read_failed(b, 0, got)

    def rows_block(self, b: int, last: int) -> "_rowcodec.Block":
        """block(b), or, with prefix_lookups, when the rows needed (up to the
        local row ``last``) sit early in an uncached block, the block's
        prefix decompressed up to them (cached as a prefix, so that the next
        lookup in the block resumes it)."""
        if not self.prefix_lookups:
            return self.block(b)
        rows = self.table.rows(b)
        if last >= rows * PREFIX_SHARE:
            return self.block(b)
        block = self.cache.get(self._key + 2 * b)
        if block is not None:
            return block
        prefix = self.cache.get(self._key + 2 * b + 1)
        if prefix is None:
            prefix = _rowcodec.PrefixBlock(self.frame(b), self.table.usize(b), rows)
            self.decompressions += 1
            self.cache.put(self._key + 2 * b + 1, prefix, prefix.nbytes)
        block = prefix.rows(self.decoder(None), last)
        if block is None:       # a frame left to libzstd, or a corrupt one: it says why
            self.cache.pop(self._key + 2 * b + 1)
            return self.block(b)
        return block

    # -- decoding -------------------------------------------------------------
    def decoder(self, positions: tuple[int, ...] | None) -> "_rowcodec.RowDecoder":
        """This thread's decoder for the columns ``positions`` (None: all)."""
        try:
            decoders = self._local.decoders
        except AttributeError:
            decoders = self._local.decoders = {}
        dec = decoders.get(positions)
        if dec is None:
            if positions is None:
                dec = decoders[None] = self.decoder(tuple(range(len(self.schema))))
                return dec
            schema = pa.schema([self.arrow_schema.field(i) for i in positions])
            dec = decoders[positions] = _rowcodec.RowDecoder(self.schema, positions, schema)
            dec.max_row_size = self.max_row_size
        return dec

    def decode_error(self, b: int, e) -> Exception:
        """The error to raise for ``e`` (a RowDecodeError or RowMemoryError)
        of block ``b``: naming the file, block, row and column."""
        where = f"{self.name}: block {b}"
        if e.row is not None:
            where += f", row {self.table.start(b) + e.row}"
        if e.column is not None:
            where += f", column {self.schema.fields[e.column].name!r}"
        if isinstance(e, RowMemoryError):   # not the file's fault: say so
            return MemoryError(f"{where}: out of memory while decoding (the file is not known "
                               f"to be damaged; read smaller batches or give it more memory)")
        return (LimitExceededError if isinstance(e, LimitExceededError) else CorruptFileError)(f"{where}: {e}")

    def read_failed(self, b: int, err: int, got: int) -> NoReturn:
        """Raises the error of block ``b``'s read: errno ``err``, or (0) the
        file ended ``got`` bytes into the frame."""
        offset, size = self.table.frame(b)
        if err:
            raise OSError(err, f"{self.name}: block {b}: reading {size} bytes at offset "
                               f"{offset}: {os.strerror(err)}")
        raise CorruptFileError(f"{self.name}: block {b}: read {got} of {size} bytes at offset "
                               f"{offset}: the file is truncated")


def open_store(source, schema: RowType, arrow_schema: pa.Schema, cache: BlockCache, *,
               max_block_size: int, prefix_lookups: bool = False,
               max_row_size: int = 0) -> BlockStore:
    """The store of the opened ``source``: its footer and block index read
    (one read of the tail when the index fits in it) and checked as
    Paimon's invariants and ``max_block_size`` say; the source is closed if
    that fails."""
    try:
        footer, index = read_footer_and_index(source)
        index.validate(footer, source.name, max_block_size)
    except BaseException:
        source.close()
        raise
    return BlockStore(source, footer, index, schema, arrow_schema, cache,
                      prefix_lookups=prefix_lookups, max_row_size=max_row_size)


class BlockMeta(NamedTuple):
    """Per block of a take, from the index: its row count, uncompressed
    size, offset and compressed size (int64 arrays, one entry a block)."""
    rows: np.ndarray
    usizes: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray

    @classmethod
    def of(cls, table: BlockTable, blocks: np.ndarray) -> "BlockMeta":
        return cls(table.block_rows(blocks), table.uncompressed_sizes[blocks],
                   table.offsets[blocks], table.compressed_sizes[blocks])

    def pick(self, which) -> "BlockMeta":
        """The entries ``which`` (an index array)."""
        return BlockMeta(*(np.ascontiguousarray(a[which]) for a in self))


class BlockJob:
    """The uncached blocks of a take, of one store or of several (files of
    one schema): each whole (cached afterwards), or with a store's
    prefix_lookups, a block whose last wanted row is in its first
    PREFIX_SHARE of rows only up to that row. One BlockPrefixes job for the
    blocks of all local files (each frame read with pread in C, from its
    file's descriptor), one per other file (mapped: views of the mapping; a
    URL's frames fetched first, a few requests in flight), which every
    thread of the take runs (run()), taking blocks off one counter; then
    collect() in the caller. No Python work per block but the cache's, and
    none per file: a take of 256 rows in 60 files costs what one in one
    file does. A block the job leaves (a frame rf_zstd.h does not decode, a
    corrupt one, a failed read) is read and decompressed as usual, which
    names any error.

    Block k is block ``blocks[k]`` of ``stores[of[k]]``, ``meta`` its index
    entries, ``lasts[k]`` the last row wanted in it; ``out[k]`` receives it."""
    __slots__ = ("stores", "out", "parts")

    def __init__(self, group: "StoreGroup", of: np.ndarray, blocks: np.ndarray,
                 lasts: np.ndarray, meta: BlockMeta, out: list):
        self.stores, self.out = group.stores, out
        ks = self._misses(group, of, blocks, out)
        self.parts: list[_Part] = []
        if not len(ks):
            return
        if len(ks) < len(blocks):
            of, blocks, lasts, meta = of[ks], blocks[ks], lasts[ks], meta.pick(ks)
        local = group.fds[of] >= 0
        if local.all():
            self.parts.append(_Part(group, of, blocks, lasts, ks, meta, True))
            return
        if local.any():
            pick = np.flatnonzero(local)
            self.parts.append(_Part(group, of[pick], blocks[pick], lasts[pick], ks[pick],
                                    meta.pick(pick), True))
        for s in np.unique(of[~local]).tolist():
            pick = np.flatnonzero(of == s)
            self.parts.append(_Part(group, of[pick], blocks[pick], lasts[pick], ks[pick],
                                    meta.pick(pick), False))

    def _misses(self, group: "StoreGroup", of: np.ndarray, blocks: np.ndarray,
                out: list) -> np.ndarray:
        """Fills ``out`` with the cached blocks; the indexes of the others."""
        stores = self.stores
        if not group.cached:
            return np.arange(len(blocks))
        ks = []
        for k, (s, b) in enumerate(zip(of.tolist(), blocks.tolist())):
            out[k] = stores[s].cached(b)
            if out[k] is None:
                ks.append(k)
        return np.array(ks, np.int64)

    def __len__(self) -> int:
        return sum(len(p.blocks) for p in self.parts)

    def run(self) -> None:
        """Works on the job's blocks until none is left (any thread)."""
        for part in self.parts:
            part.run()

    def collect(self) -> None:
        """Puts the blocks in ``out`` (after every run() has returned)."""
        for part in self.parts:
            part.collect(self.out)
        self.parts = []


class StoreGroup:
    """Block stores of files of one schema that takes read together (a
    reader's one, a dataset's), by position: each one's descriptor for C
    reads (-1: none) and prefix_lookups, as arrays, so that a take's job
    costs nothing per file. ``guarded``: the owner closes no store while a
    take runs (a dataset), so a job need not hold each source open."""

    def __init__(self, guarded: bool = False):
        self.stores: list = []
        self.fds = np.zeros(0, np.int32)
        self.prefix = np.zeros(0, bool)
        self.cached = False         # some store has a cache budget
        self.guarded = guarded

    def set(self, k: int, store: BlockStore) -> None:
        """Puts ``store`` at position ``k`` (growing the group)."""
        if k >= len(self.stores):
            grow = k + 1 - len(self.stores)
            self.stores += [None] * grow
            self.fds = np.append(self.fds, np.full(grow, -1, np.int32))
            self.prefix = np.append(self.prefix, np.zeros(grow, bool))
        self.stores[k] = store
        fd = store.source.c_reads()
        self.fds[k] = -1 if fd is None else fd
        self.prefix[k] = store.prefix_lookups
        self.cached = self.cached or bool(store.cache.budget)


class _Part:
    """BlockJob's blocks read one way: by pread from their files'
    descriptors (``by_fd``), or else all of one store's, with frames()."""
    __slots__ = ("stores", "of", "ks", "blocks", "lasts", "frames", "sources", "job")
    job: "_rowcodec.BlockPrefixes | None"

    def __init__(self, group: StoreGroup, of: np.ndarray, blocks: np.ndarray, lasts: np.ndarray,
                 ks: np.ndarray, meta: BlockMeta, by_fd: bool):
        rows, usizes, offsets, sizes = meta
        stores = group.stores
        if group.prefix.any():
            early = group.prefix[of] & (lasts < rows * PREFIX_SHARE)
            # a prefix costs about its share of a whole block, the walk included
            order: Any = np.argsort(np.where(early, lasts / rows, 1.0), kind="stable")[::-1]
            lasts = np.where(early, lasts, -1)
            of, ks, blocks, lasts = of[order], ks[order], blocks[order], lasts[order]
            rows, usizes, offsets, sizes = BlockMeta(rows, usizes, offsets, sizes).pick(order)
        else:
            lasts = np.full(len(blocks), -1, np.int64)
        self.stores = stores
        self.of, self.ks, self.blocks, self.lasts = of, ks, blocks, lasts
        self.sources = [] if by_fd and group.guarded else \
            [stores[s].source for s in np.unique(of).tolist()]
        self.frames = None
        if not by_fd:
            # a URL's frames are fetched at once, a few requests in flight
            store = stores[int(of[0])]
            try:
                self.frames = store.source.frames(list(zip(offsets.tolist(), sizes.tolist())))
            except CorruptFileError as e:       # the file ends inside a block: name it
                got, k = getattr(e, "got", None), getattr(e, "index", None)
                if got is None or k is None:
                    raise
                store.read_failed(int(blocks[k]), 0, got)
        try:
            self.job = _rowcodec.BlockPrefixes(self.frames, usizes, rows, lasts) \
                if not by_fd else \
                _rowcodec.BlockPrefixes(None, usizes, rows, lasts, -1, offsets, sizes,
                                        np.ascontiguousarray(group.fds[of]))
        except MemoryError:     # not the file's fault, but say whose blocks and how many bytes
            big = int(np.argmax(usizes))
            raise MemoryError(f"{stores[int(of[big])].name}: out of memory allocating "
                              f"{len(blocks)} blocks ({int(usizes.sum())} bytes as the index "
                              f"declares them, block {int(blocks[big])} the largest) for "
                              f"a take; take fewer rows at once or give it more memory") from None

    def run(self) -> None:
        job = self.job
        assert job is not None, "run after collect()"
        decoder = self.stores[int(self.of[0])].decoder(None)
        if self.frames is not None:
            job.run(decoder)
            return
        entered = []
        try:
            for source in self.sources:     # close() waits for the reads in C
                source._enter()
                entered.append(source)
            job.run(decoder)
        finally:
            for source in entered:
                source._leave()

    def collect(self, out: list) -> None:
        job = self.job
        assert job is not None, "collected twice"
        stores = self.stores
        blocks = job.blocks()
        for j, (s, b, k, last, block) in enumerate(zip(self.of.tolist(), self.blocks.tolist(),
                                                       self.ks.tolist(), self.lasts.tolist(),
                                                       blocks)):
            store = stores[s]
            if block is None:
                failed = job.read_error(j) if self.frames is None else None
                if failed is not None:
                    store.read_failed(b, *failed)
                block = store.decompressed(b)
                if store.cache.budget:
                    store.keep(b, block)
            else:
                # counted here: a block left to libzstd counts once, in decompressed()
                store.decompressions += 1
                if last < 0 and store.cache.budget:
                    store.keep(b, block)
            out[k] = block
        self.job = job = None           # (it holds views of the frames)
        for frame in self.frames or ():
            if type(frame) is memoryview:
                frame.release()
