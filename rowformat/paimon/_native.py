"""pypaimon 2.1.0's ``read.native.enabled`` sends a read's splits to
pypaimon-rust when every file of every split has a format it reads:
``TableRead._native_split_files_supported(split)`` decides. While
acceleration is on, a split holding a ``.row`` or ``.blob`` file is not
supported there, so the whole read falls back to pypaimon's Python split
reads, which decode those files with rowformat. Measured on a 1M-row,
10-column append table, pypaimon-rust 0.4.0 scans about 2x slower than
rowformat, and on a primary-key ``.row`` table whose bucket holds one file
it decodes with the wrong field layout: an error, or wrong values without one.

A read's splits go to one reader or the other as a whole, so a table whose
splits mix another format with ``.blob`` files (a data-evolution Parquet
table with BLOB columns) is read by pypaimon's Python path for its Parquet
files too: pyarrow's Parquet reader, not pypaimon-rust's.
"""
from __future__ import annotations

from typing import Any, Callable

ROWFORMAT_SUFFIXES = (".row", ".blob")


def make_split_check(stock: Callable[[Any], bool]) -> Callable[[Any], bool]:
    def native_split_files_supported(split) -> bool:
        if any(f.file_name.lower().endswith(ROWFORMAT_SUFFIXES) for f in split.files):
            return False
        return stock(split)

    native_split_files_supported._rowformat_stock = stock  # type: ignore[attr-defined]
    native_split_files_supported.__qualname__ = "TableRead._native_split_files_supported"
    return native_split_files_supported
