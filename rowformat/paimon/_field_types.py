"""pypaimon's field types as rowformat types and as the Arrow types pypaimon reads.

A pypaimon ``DataField``'s ``to_dict()`` is Paimon's schema JSON (what a table
schema file holds), which :mod:`rowformat.schema_json` reads. The Arrow types
pypaimon's own readers produce (``PyarrowFieldParser.from_paimon_type``)
differ from rowformat's in a few places -- TIMESTAMP(0) is ``timestamp[s]``
rather than ``[ms]``, every TIME is ``time32[ms]``, a VECTOR's elements are
named ``item`` and nullable -- so batches are cast to pypaimon's types.
"""
from __future__ import annotations

import json
import threading
from typing import Any, Sequence

import pyarrow as pa

from .. import schema_json
from ..arrow_cast import cast_array
from ..datatypes import RowType

_CACHE_LOCK = threading.Lock()
_ROW_TYPES: dict[str, RowType] = {}


def fields_key(fields: Sequence[Any]) -> str:
    return json.dumps([f.to_dict() for f in fields], sort_keys=True)


def row_type(fields: Sequence[Any], key: str | None = None) -> RowType:
    """The rowformat file schema of pypaimon ``DataField`` s (cached by their JSON)."""
    key = key if key is not None else fields_key(fields)
    rt = _ROW_TYPES.get(key)
    if rt is None:
        rt = schema_json.loads([f.to_dict() for f in fields])
        with _CACHE_LOCK:
            if len(_ROW_TYPES) > 1024:
                _ROW_TYPES.clear()
            _ROW_TYPES[key] = rt
    return rt


def conform(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """``arr`` (rowformat's Arrow type) as pypaimon's Arrow type ``target``:
    TIMESTAMP(0) floored to seconds as pypaimon's reader does (``millis //
    1000``); TIME from ms of the day (exact for every precision); VECTOR and
    nested types: the names and nullability of child fields."""
    if arr.type.equals(target):
        return arr
    return cast_array(arr, pa.field("", target), truncate=True)
