"""Arrow record batches from whatever holds them: pyarrow Tables,
RecordBatches and RecordBatchReaders, and any object that exports Arrow's
PyCapsule interface (``__arrow_c_stream__``: a polars DataFrame, a DuckDB
result, a pandas DataFrame on pandas 2.2+; ``__arrow_c_array__``: a
nanoarrow or arro3 struct array or record batch). Capsules are imported
without copying the data."""
from __future__ import annotations

from typing import Any, Iterable

import pyarrow as pa


def as_batches(data: Any, what: str) -> Iterable[pa.RecordBatch]:
    """The record batches of ``data``; TypeError naming ``what`` (the
    method) for anything else."""
    if isinstance(data, pa.RecordBatch):
        return [data]
    if isinstance(data, pa.Table):
        return data.to_batches()
    if isinstance(data, pa.RecordBatchReader):
        return data
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    if hasattr(data, "__arrow_c_array__"):
        batch = pa.record_batch(data)
        return [batch]
    raise TypeError(f"{what} takes a pyarrow Table, RecordBatch or RecordBatchReader, or an "
                    f"object exporting __arrow_c_stream__ or __arrow_c_array__; got "
                    f"{type(data).__name__}")
