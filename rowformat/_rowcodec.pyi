"""Type stubs of the compiled .row codec (src/rowformat/_rowcodec.pyx)."""
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from .types import RowType

def error_message(code: int) -> str: ...
def expansion_message(rc: int, max_row_size: int) -> str: ...
def scan_buffers(delta: int) -> None:
    """A scan on the pool starts (1) or ends (-1): while one runs, freed
    batches' large buffers go to the next batches, whichever thread decodes
    them."""

class BlockEncoder:
    """Encodes Arrow batches into uncompressed .row blocks."""
    def __init__(self, row_type: RowType, block_size: int) -> None: ...
    @property
    def pending_rows(self) -> int: ...
    def encode(self, batch: pa.RecordBatch, blocks: list[bytes]) -> tuple[int, int, str] | None: ...
    def flush(self) -> bytes | None: ...

class Block:
    """One decompressed, checked block."""
    data: Any
    num_rows: int
    def __init__(self, data: bytes | bytearray | memoryview, offsets: bytes | None = None,
                 data_end: int = -1) -> None: ...
    @property
    def nbytes(self) -> int: ...

class PrefixBlock:
    """A block's ZSTD frame decompressed, and its rows walked, only as far as
    asked (RowFileReader's prefix_lookups)."""
    walked: int
    num_rows: int
    usize: int
    row_bytes: int
    failed: bool
    def __init__(self, frame: bytes | memoryview, usize: int, num_rows: int) -> None: ...
    @property
    def produced(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    def advance(self, target: int) -> int: ...
    def output(self) -> bytes: ...
    def rows(self, decoder: RowDecoder, i: int) -> Block | None: ...

class Reserve:
    """The Arrow placeholder bytes, beyond what their own bytes pay for, that
    the rows of one call may add together (shared by its decoders)."""
    size: int
    def __init__(self, size: int) -> None: ...
    @property
    def remaining(self) -> int: ...

class RowDecoder:
    """Decodes rows of blocks into Arrow builders (``decode``/``finish``)
    or one row into Python values (``decode_row``)."""
    max_row_size: int
    def __init__(self, row_type: RowType, columns: tuple[int, ...],
                 arrow_schema: pa.Schema) -> None: ...
    @property
    def pending_rows(self) -> int: ...
    def decode(self, block: Block, rows: npt.NDArray[np.int64] | None = ..., start: int = ...,
               stop: int = ..., reserve: Reserve | None = ...) -> None: ...
    def finish(self) -> pa.RecordBatch: ...
    def decode_row(self, block: Block, i: int) -> tuple[Any, ...]: ...

