"""Row numbers: the checks that turn a user's row numbers into indexes of
a file's rows (shared by the .row and .blob readers and RowDataset)."""
from __future__ import annotations

import operator

import numpy as np
import pyarrow as pa

from .errors import RowIndexError


def row_number(i, n: int, name: str) -> int:
    """``i`` as a row number in [0, n); negative ``i`` counts from the end."""
    i = operator.index(i)    # ints and numpy integers, not floats
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise RowIndexError(f"row {i} outside [0, {n}) in {name}")
    return i


def _outside(what: str, row: int, n: int, name: str | None) -> RowIndexError:
    where = "" if name is None else f"{name}: "
    return RowIndexError(f"{where}{what} contains row {row}, outside [0, {n})")


def _unsigned_checked(arr: np.ndarray, what: str, n: int, name: str | None) -> np.ndarray:
    """``arr`` as int64; a uint64 value past int64's range is reported as
    given (2**64 - 1 wrapped to -1 would be reported as row -1)."""
    if arr.dtype == np.uint64 and len(arr) and arr.max() > np.iinfo(np.int64).max:
        raise _outside(what, int(arr.max()), n, name)
    return arr.astype(np.int64, copy=False)


def few_rows(rows, most: int, n: int, what: str, name: str | None = None) -> list[int] | None:
    """``rows`` itself when it is a list of at most ``most`` Python ints, each
    checked to lie in [0, n); else None (as_rows then converts it). A
    lookup's row numbers skip numpy, whose per-call costs are microseconds.
    ``name`` (the file's) leads the message of a row outside."""
    if type(rows) is not list or len(rows) > most:
        return None
    for i in rows:
        if type(i) is not int:
            return None
        if i < 0 or i >= n:
            raise _outside(what, i, n, name)
    return rows


def as_rows(rows, n: int, what: str, name: str | None = None) -> np.ndarray:
    """Row numbers as an int64 array, checked to lie in [0, n) (``name`` as
    in :func:`few_rows`)."""
    arr: np.ndarray   # numpy 2.5's stubs infer each branch's own dtype: one type for all
    if hasattr(rows, "to_array") and not isinstance(rows, np.ndarray):   # pyroaring BitMap
        arr = np.frombuffer(rows.to_array(), dtype=np.uint32).astype(np.int64)
    elif isinstance(rows, np.ndarray):
        if rows.dtype.kind not in "iu":
            raise TypeError(f"{what} must be integers, got dtype {rows.dtype}")
        arr = _unsigned_checked(rows.ravel(), what, n, name)
    elif isinstance(rows, (pa.Array, pa.ChunkedArray)):
        # integers only, as given: 0.5 is not row 0, '1' not row 1, a null not row -2**63
        if not pa.types.is_integer(rows.type):
            raise TypeError(f"{what} must be integers, got Arrow type {rows.type}")
        if rows.null_count:
            raise TypeError(f"{what} holds a null at position "
                            f"{rows.is_null().index(True).as_py()}; row numbers cannot be null")
        arr = _unsigned_checked(np.asarray(rows.to_numpy(zero_copy_only=False)), what, n, name)
    else:
        arr = np.asarray(rows if isinstance(rows, (list, tuple)) else list(rows))
        if arr.size == 0:
            arr = arr.astype(np.int64)
        elif arr.dtype.kind not in "iu":    # 5.0 is not silently row 5
            raise TypeError(f"{what} must be integers, got {arr.dtype} values")
        arr = arr.astype(np.int64, copy=False).ravel()
    if len(arr):
        # numpy's reductions cost microseconds per call: a lookup's few rows are
        # checked faster as Python ints
        if len(arr) > 32:
            # numpy 2.5's stubs reject min()/max() on this union; np.min would cost ~2x
            lo, hi = arr.min(), arr.max()  # type: ignore[call-overload]
        else:
            small = arr.tolist()
            lo, hi = min(small), max(small)
        if lo < 0 or hi >= n:
            raise _outside(what, lo if lo < 0 else hi, n, name)
    return arr
