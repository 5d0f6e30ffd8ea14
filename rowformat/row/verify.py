"""rowformat.row.verify: checks a whole ``.row`` file and reports every problem.

``verify(path, schema)`` reads the footer and the block index, checks
Paimon's index invariants one by one, then every block: that it can be read,
decompresses to exactly its declared size, has no bytes after its ZSTD frame
(which the reader ignores, as Paimon Java's does), holds the row count the
index gives, has a sane offset array, and that every row decodes under the
schema both to Arrow and to Python values. It never raises for problems in the
file's content: they are collected in the returned :class:`VerifyReport`
(up to ``max_errors`` of them). It raises only for unusable arguments (a bad
schema, a path that cannot be opened).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import zstandard

from .. import _rowcodec
from ..arrow_types import as_row_type, to_arrow_schema
from .block_index import BlockIndex
from ..errors import CorruptFileError, LimitExceededError, RowDecodeError
from .footer import Footer, read_footer
from .reader import DEFAULT_MAX_BLOCK_SIZE, DEFAULT_MAX_ROW_SIZE, decompress_frame
from ..io.source import Source

__all__ = ["verify", "VerifyReport", "Problem"]


@dataclass(frozen=True)
class Problem:
    """One problem found in a file. ``block``, ``row`` (the file's row
    number) and ``column`` are None where they do not apply or are unknown;
    ``kind`` is "footer", "index", "block", "row" or "limit"."""
    kind: str
    message: str
    block: int | None = None
    row: int | None = None
    column: str | None = None

    def __str__(self):
        where = []
        if self.block is not None:
            where.append(f"block {self.block}")
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column {self.column!r}")
        return (", ".join(where) + ": " if where else "") + self.message


@dataclass
class VerifyReport:
    """What ``verify`` found. ``ok`` is True when there is no problem;
    ``truncated`` when checking stopped at ``max_errors`` problems."""
    name: str
    size: int                   # the file's bytes
    problems: list[Problem] = field(default_factory=list)
    num_rows: int | None = None
    num_blocks: int | None = None
    blocks_checked: int = 0
    rows_checked: int = 0
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    def __bool__(self):
        return self.ok

    def __iter__(self):
        return iter(self.problems)

    def __len__(self):
        return len(self.problems)

    @property
    def schema_suspect(self) -> bool:
        """True when rows fail to decode while the footer, index and blocks
        are sound: the schema given is then most likely not the writer's."""
        return (len(self.problems) >= 2 and all(p.kind == "row" for p in self.problems)
                and len({p.row for p in self.problems}) >= 2)

    def __str__(self):
        head = (f"{self.name}: {'OK' if self.ok else f'{len(self.problems)} problem(s)'}"
                f"{' (stopped at max_errors)' if self.truncated else ''}; "
                f"{self.blocks_checked} of {self.num_blocks} blocks and {self.rows_checked} rows checked")
        return "\n".join([head] + [f"  {p}" for p in self.problems])

    def raise_if_failed(self):
        """Raises CorruptFileError naming the first problem (and the count)."""
        if self.problems:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            raise CorruptFileError(f"{self.name}: {self.problems[0]}{more}")


class _Full(Exception):
    """max_errors reached."""


class _Checker:
    def __init__(self, source, row_type, max_errors, max_block_size, max_row_size, python_values):
        self.src = source
        self.rt = row_type
        self.max_errors = max_errors
        self.max_block_size = max_block_size
        self.max_row_size = max_row_size
        self.python_values = python_values
        self.report = VerifyReport(source.name, source.size)

    def add(self, kind, message, block=None, row=None, column=None):
        self.report.problems.append(Problem(kind, message, block, row, column))
        if len(self.report.problems) >= self.max_errors:
            self.report.truncated = True
            raise _Full

    # -- footer and index ---------------------------------------------------
    def footer_and_index(self):
        try:
            footer, index_bytes = read_footer(self.src)
        except CorruptFileError as e:
            self.add("footer", _strip(str(e), self.src.name))
            return None
        self.report.num_rows = footer.total_rows
        self.report.num_blocks = footer.block_count
        try:
            index = BlockIndex.from_bytes(index_bytes, self.src.name)
        except CorruptFileError as e:
            self.add("index", _strip(str(e), self.src.name))
            return None
        return footer, index if self.index_invariants(footer, index) else None

    def index_invariants(self, footer: Footer, index: BlockIndex) -> bool:
        """Every failing invariant is reported; True when blocks can still be
        located and checked one by one."""
        usable = True
        for problem in index.problems(footer):
            self.add("index", problem.message, block=problem.block)
            usable = usable and problem.locatable
        return usable

    # -- blocks and rows ------------------------------------------------------
    def blocks(self, footer: Footer, index: BlockIndex):
        offsets = index.offsets
        starts = index.row_starts
        ends = np.append(starts[1:], footer.total_rows)
        positions = tuple(range(len(self.rt)))
        decoder = _rowcodec.RowDecoder(self.rt, positions, to_arrow_schema(self.rt))
        decoder.max_row_size = self.max_row_size
        # the whole file is one call, as for read(): one placeholder reserve
        reserve = _rowcodec.Reserve(self.max_row_size)
        dctx = zstandard.ZstdDecompressor()
        for b in range(len(starts)):
            self.report.blocks_checked += 1
            usize = int(index.uncompressed_sizes[b])
            first = int(starts[b])
            if usize > self.max_block_size:
                self.add("limit", f"declares {usize} uncompressed bytes, more than "
                                  f"max_block_size={self.max_block_size}; not checked", block=b)
                continue
            try:
                frame = self.src.read(int(offsets[b]), int(index.compressed_sizes[b]))
            except CorruptFileError as e:
                self.add("block", _strip(str(e), self.src.name), block=b)
                continue
            try:
                data, extra = _decompress_block(dctx, frame, usize)
                if extra:
                    self.add("block", _extra_message(frame, extra), block=b)
                block = _rowcodec.Block(data)
            except CorruptFileError as e:
                self.add("block", str(e), block=b)
                continue
            want = int(ends[b] - starts[b])
            if block.num_rows != want:
                self.add("block", f"holds {block.num_rows} rows, but the index says {want} "
                                  f"(rows {first} to {int(ends[b]) - 1})", block=b)
            self.offsets(block, b, first)
            self.rows(decoder, block, b, first, reserve)

    def offsets(self, block, b, first):
        """The row offset array: starts at 0, never decreases, stays inside
        the row data. (Decoding checks each row's span too; this names the
        offset problem itself.)"""
        n = block.num_rows
        if n == 0:
            return
        raw = np.frombuffer(block.data, dtype="<i4", count=n, offset=len(block.data) - 4 - 4 * n)
        data_end = len(block.data) - 4 - 4 * n
        if raw[0] != 0:
            self.add("block", f"the first row starts at byte {int(raw[0])}, expected 0",
                     block=b, row=first)
        for i in np.flatnonzero((raw < 0) | (raw > data_end))[:self.max_errors]:
            self.add("block", f"row offset {int(raw[i])} lies outside the block's {data_end} bytes "
                              f"of row data", block=b, row=first + int(i))
        for i in (np.flatnonzero(np.diff(raw.astype(np.int64)) < 0) + 1)[:self.max_errors]:
            self.add("block", f"row offset {int(raw[i])} is before the previous row's "
                              f"{int(raw[i - 1])}", block=b, row=first + int(i))

    def rows(self, decoder, block, b, first, reserve):
        names = self.rt.names
        n = block.num_rows
        bad = set()
        start = 0
        while start < n:
            try:
                decoder.decode(block, None, start, n, reserve)
                start = n
            except RowDecodeError as e:
                i = e.row if e.row is not None else start
                bad.add(i)
                kind = "limit" if isinstance(e, LimitExceededError) else "row"
                self.add(kind, str(e), block=b, row=first + i,
                         column=names[e.column] if e.column is not None else None)
                start = i + 1
        if decoder.pending_rows:
            decoder.finish()   # built only to be checked
        self.report.rows_checked += n
        if not self.python_values:
            return
        for i in range(n):
            if i in bad:
                continue
            try:
                decoder.decode_row(block, i)
            except RowDecodeError as e:
                kind = "limit" if isinstance(e, LimitExceededError) else "row"
                self.add(kind, str(e), block=b, row=first + i,
                         column=names[e.column] if e.column is not None else None)


def _decompress_block(dctx, frame, usize: int) -> tuple[bytes, int]:
    """A block's data, as the reader decompresses it, and the number of
    bytes after its ZSTD frame (which the reader ignores). Decompresses
    once, strictly, unless bytes do follow the frame."""
    try:
        data = decompress_frame(dctx, frame, usize, allow_extra_data=False)
        if usize:
            return data, 0
        # python-zstandard's strict mode lets bytes after an empty frame pass
    except CorruptFileError:
        decompress_frame(dctx, frame, usize)    # the frame's own problem, if any, raises here
    # The frame decompresses to exactly usize bytes (checked above, bounded by
    # usize), so a decompressobj, which stops at the frame's end, may redo it.
    # Streaming is stricter than the one-shot call: it refuses a frame naming
    # a dictionary (a .row file has none), which the reader lets pass.
    obj = dctx.decompressobj()
    try:
        data = obj.decompress(frame)
    except zstandard.ZstdError as e:
        raise CorruptFileError(f"ZSTD decompression failed: {e}") from None
    return data, len(obj.unused_data)


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _extra_message(frame, extra: int) -> str:
    what = " (another ZSTD frame)" if frame[len(frame) - extra:][:4] == _ZSTD_MAGIC else ""
    return (f"{extra} bytes after the ZSTD frame{what}, inside the block's {len(frame)} "
            f"compressed bytes (the reader ignores them)")


def _strip(message: str, name: str) -> str:
    prefix = f"{name}: "
    return message[len(prefix):] if message.startswith(prefix) else message


def verify(path_or_file, schema, *, max_errors: int = 100,
           max_block_size: int = DEFAULT_MAX_BLOCK_SIZE, max_row_size: int = DEFAULT_MAX_ROW_SIZE,
           python_values: bool = True, filesystem=None,
           storage_options: dict | None = None) -> VerifyReport:
    """Checks the whole ``.row`` file ``path_or_file`` against ``schema`` and
    returns a :class:`VerifyReport` listing every problem found (at most
    ``max_errors``). Blocks larger than ``max_block_size`` and rows larger
    than ``max_row_size`` are reported, not decoded. With ``python_values``
    rows are also decoded to Python values, as ``RowFileReader.get`` does
    (which checks DATE/TIME/TIMESTAMP ranges Arrow does not).

    Raises only for unusable arguments: a schema that does not parse, a path
    that cannot be opened (OSError) or is not a regular file
    (CorruptFileError), ``max_errors < 1``. A URL is read as RowFileReader
    reads one (``filesystem``, ``storage_options``)."""
    row_type = as_row_type(schema)
    if max_errors < 1:
        raise ValueError(f"max_errors must be >= 1, got {max_errors}")
    source = Source(path_or_file, False, filesystem, storage_options)
    checker = _Checker(source, row_type, max_errors, max_block_size, max_row_size, python_values)
    try:
        found = checker.footer_and_index()
        if found is not None and found[1] is not None:
            checker.blocks(*found)
    except _Full:
        pass
    except CorruptFileError as e:      # a read past the end of a shrinking file
        try:
            checker.add("file", _strip(str(e), source.name))
        except _Full:
            pass
    finally:
        if isinstance(path_or_file, (str, bytes)) or hasattr(path_or_file, "__fspath__"):
            source.close()
    return checker.report
