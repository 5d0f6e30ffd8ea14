"""The block index: compressed sizes, uncompressed sizes and first row
numbers of every block, as three delta/zigzag/varint arrays."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _blockindex
from .errors import CorruptFileError
from .footer import Footer


@dataclass(frozen=True, eq=False)
class BlockIndex:
    compressed_sizes: np.ndarray
    uncompressed_sizes: np.ndarray
    row_starts: np.ndarray

    @property
    def offsets(self) -> np.ndarray:
        """File offset of each block: the prefix sums of the compressed sizes."""
        return np.concatenate(([0], np.cumsum(self.compressed_sizes)[:-1])).astype(np.int64) \
            if len(self.compressed_sizes) else np.zeros(0, np.int64)

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
        """Paimon's seven index invariants, plus a bound on block sizes."""
        n = len(self.row_starts)

        def bad(msg):
            raise CorruptFileError(f"{name}: invalid block index: {msg}")

        if not len(self.compressed_sizes) == len(self.uncompressed_sizes) == n:
            bad(f"array lengths differ ({len(self.compressed_sizes)} compressed sizes, "
                f"{len(self.uncompressed_sizes)} uncompressed sizes, {n} row starts)")
        if n != footer.block_count:
            bad(f"the index has {n} blocks, but the footer declares {footer.block_count}")
        if n and self.compressed_sizes.min() < 0:
            bad(f"negative compressed size in block {int(np.argmin(self.compressed_sizes))}")
        if n and self.uncompressed_sizes.min() < 0:
            bad(f"negative uncompressed size in block {int(np.argmin(self.uncompressed_sizes))}")
        if n and self.compressed_sizes.max() > footer.index_offset:
            # (also keeps the sum below from wrapping around 2^64)
            b = int(np.argmax(self.compressed_sizes))
            bad(f"block {b}'s compressed size {int(self.compressed_sizes[b])} exceeds the "
                f"{footer.index_offset} bytes before the index")
        end = int(self.compressed_sizes.sum(dtype=np.uint64)) if n else 0
        if end != footer.index_offset:
            bad(f"blocks end at {end}, but the footer puts the block index at {footer.index_offset}")
        if n == 0:
            if footer.total_rows != 0:
                bad(f"no blocks, but the footer declares {footer.total_rows} rows")
            return
        if self.row_starts[0] != 0:
            bad(f"the first block starts at row {self.row_starts[0]}, expected 0")
        if n > 1 and not np.all(np.diff(self.row_starts) > 0):
            bad(f"row starts are not strictly increasing (block "
                f"{int(np.argmin(np.diff(self.row_starts) > 0)) + 1})")
        if self.row_starts[-1] >= footer.total_rows:
            bad(f"the last block starts at row {self.row_starts[-1]}, but the file has "
                f"{footer.total_rows} rows")
        if max_block_size is not None and self.uncompressed_sizes.max() > max_block_size:
            from .errors import LimitExceededError
            b = int(np.argmax(self.uncompressed_sizes))
            raise LimitExceededError(
                f"{name}: block {b} declares {int(self.uncompressed_sizes[b])} uncompressed bytes, "
                f"more than max_block_size={max_block_size}")
