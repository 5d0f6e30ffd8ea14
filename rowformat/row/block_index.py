"""The block index: compressed sizes, uncompressed sizes and first row
numbers of every block, as three delta/zigzag/varint arrays."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, NamedTuple

import numpy as np

from .. import _blockindex
from ..errors import CorruptFileError, LimitExceededError
from .footer import Footer, read_footer

ZSTD_MAX_BLOCK = 128 << 10      # the largest block a ZSTD frame holds


class IndexProblem(NamedTuple):
    """One broken index invariant. ``block`` is the block it concerns, if
    one; ``locatable`` is False when blocks can no longer be located (and so
    checked) one by one."""
    message: str
    block: int | None = None
    locatable: bool = True


@dataclass(frozen=True, eq=False)
class BlockIndex:
    compressed_sizes: np.ndarray
    uncompressed_sizes: np.ndarray
    row_starts: np.ndarray

    @property
    def offsets(self) -> np.ndarray:
        """File offset of each block: the prefix sums of the compressed sizes."""
        sizes = self.compressed_sizes
        out = np.zeros(len(sizes), np.int64)
        if len(sizes) > 1:
            np.cumsum(sizes[:-1], out=out[1:])     # one pass, no copies
        return out

    def __len__(self):
        return len(self.row_starts)

    def to_bytes(self) -> bytes:
        return (_blockindex.write_prefixed(self.compressed_sizes)
                + _blockindex.write_prefixed(self.uncompressed_sizes)
                + _blockindex.write_prefixed(self.row_starts))

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<buffer>") -> "BlockIndex":
        """Decodes the three arrays. Bytes after the third are ignored, as in
        Paimon Java."""
        try:
            comp, pos = _blockindex.read_prefixed(data, 0)
            uncomp, pos = _blockindex.read_prefixed(data, pos)
            starts, pos = _blockindex.read_prefixed(data, pos)
        except CorruptFileError as e:
            raise CorruptFileError(f"{name}: {e}") from None
        return cls(comp, uncomp, starts)

    def validate(self, footer: Footer, name: str = "<buffer>", max_block_size: int | None = None):
        """Paimon's seven index invariants (raises CorruptFileError for the
        first that fails, see problems()), after the reader's bound on block
        sizes (the limit the caller set is named first)."""
        if _blockindex.index_ok(self.compressed_sizes, self.uncompressed_sizes, self.row_starts,
                                footer.block_count, footer.index_offset, footer.total_rows,
                                -1 if max_block_size is None else max_block_size):
            return          # the common case, in one pass in C; else say what is wrong
        uncomp = self.uncompressed_sizes      # its length may differ from len(self): problems() says so
        if max_block_size is not None and len(uncomp) and uncomp.max() > max_block_size:
            b = int(np.argmax(uncomp))
            raise LimitExceededError(
                f"{name}: block {b} declares {int(uncomp[b])} uncompressed bytes, "
                f"more than max_block_size={max_block_size}")
        for problem in self.problems(footer):
            raise CorruptFileError(f"{name}: invalid block index: {problem.message}")

    def problems(self, footer: Footer) -> Iterator[IndexProblem]:
        """Every broken index invariant, in the order they are checked:
        validate() raises the first, verify() reports them all. A check that
        needs what an earlier one found broken is not made."""
        comp, uncomp, starts = self.compressed_sizes, self.uncompressed_sizes, self.row_starts
        n = len(starts)
        if not len(comp) == len(uncomp) == n:
            yield IndexProblem(f"array lengths differ ({len(comp)} compressed sizes, "
                               f"{len(uncomp)} uncompressed sizes, {n} row starts)", locatable=False)
            return
        if n != footer.block_count:
            yield IndexProblem(f"the index has {n} blocks, but the footer declares {footer.block_count}")
        sizes_ok = True
        for b in np.flatnonzero(comp < 0).tolist():
            yield IndexProblem(f"negative compressed size in block {b}", b, locatable=False)
            sizes_ok = False
        for b in np.flatnonzero(uncomp < 0).tolist():
            yield IndexProblem(f"negative uncompressed size in block {b}", b)
        # a ZSTD frame cannot expand more than this: each block of it takes 4
        # bytes at the least (an RLE block) and gives 128 KiB at the most, so
        # a size no frame of the block's bytes could decode to is refused
        # before anything is allocated for it
        # (in 128 KiB blocks, so that nothing overflows)
        frames = np.maximum(comp, 0) // 4 + 1
        for b in np.flatnonzero(-(-np.maximum(uncomp, 0) // ZSTD_MAX_BLOCK) > frames).tolist():
            yield IndexProblem(f"block {b} declares {int(uncomp[b])} uncompressed bytes, more than "
                               f"a ZSTD frame of its {int(comp[b])} bytes can hold "
                               f"({int(frames[b]) * ZSTD_MAX_BLOCK} at most)", b)
        for b in np.flatnonzero(comp > footer.index_offset).tolist():
            # (also keeps the sum below from wrapping around 2^64)
            yield IndexProblem(f"block {b}'s compressed size {int(comp[b])} exceeds the "
                               f"{footer.index_offset} bytes before the index", b, locatable=False)
            sizes_ok = False
        if sizes_ok:
            end = int(comp.sum(dtype=np.uint64)) if n else 0
            if end != footer.index_offset:
                yield IndexProblem(f"blocks end at {end}, but the footer puts the block index at "
                                   f"{footer.index_offset}", locatable=False)
        if n == 0:
            if footer.total_rows != 0:
                yield IndexProblem(f"no blocks, but the footer declares {footer.total_rows} rows")
            return
        if starts[0] != 0:
            yield IndexProblem(f"the first block starts at row {int(starts[0])}, expected 0", 0)
        for b in (np.flatnonzero(np.diff(starts) <= 0) + 1).tolist():
            yield IndexProblem(f"row starts are not strictly increasing (block {b}): row start "
                               f"{int(starts[b])} is not after the previous block's "
                               f"{int(starts[b - 1])}", b, locatable=False)
        if starts[-1] >= footer.total_rows:
            yield IndexProblem(f"the last block starts at row {int(starts[-1])}, but the file has "
                               f"{footer.total_rows} rows", n - 1, locatable=False)


def read_footer_and_index(source) -> tuple[Footer, BlockIndex]:
    """The footer and the decoded (not yet validated) block index of the
    .row file ``source`` (a :class:`rowformat.source.Source`); raises
    CorruptFileError naming the file."""
    footer, index_bytes = read_footer(source)
    return footer, BlockIndex.from_bytes(index_bytes, source.name)
