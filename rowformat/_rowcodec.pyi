"""Type stubs of the compiled .row codec (src/rowformat/_rowcodec.pyx)."""
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from .types import RowType

def error_message(code: int) -> str: ...

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
    def __init__(self, data: bytes | bytearray | memoryview) -> None: ...
    @property
    def nbytes(self) -> int: ...

class RowDecoder:
    """Decodes rows of blocks into Arrow builders (``decode``/``finish``)
    or one row into Python values (``decode_row``)."""
    max_row_size: int
    def __init__(self, row_type: RowType, columns: tuple[int, ...],
                 arrow_schema: pa.Schema) -> None: ...
    @property
    def pending_rows(self) -> int: ...
    def decode(self, block: Block, rows: npt.NDArray[np.int64] | None = ..., start: int = ...,
               stop: int = ...) -> None: ...
    def finish(self) -> pa.RecordBatch: ...
    def decode_row(self, block: Block, i: int) -> tuple[Any, ...]: ...

