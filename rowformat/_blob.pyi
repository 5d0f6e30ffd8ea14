"""Type stubs of the compiled .blob helpers (src/rowformat/_blob.pyx)."""
from typing import Iterable

import numpy as np
import numpy.typing as npt

def encode(values: Iterable[int] | npt.NDArray[np.integer]) -> bytes: ...
def decode(data: bytes | bytearray | memoryview) -> npt.NDArray[np.int64]: ...
def layout(lengths: npt.NDArray[np.integer] | Iterable[int], limit: int, min_length: int,
           min_sentinel: int) -> tuple[npt.NDArray[np.int64], int, int, int]:
    """(offsets, used, bad, reason): see the .pyx docstring."""
