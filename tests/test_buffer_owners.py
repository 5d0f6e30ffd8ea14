"""Objects that hold a ``Py_buffer`` of another object (a decompressed
``Block``, a ``PrefixBlock``'s frame, the owner of a Fory ``RowView``'s bytes)
release it when the garbage collector frees them in a reference cycle.
Cython's generated ``tp_clear`` used to drop the exporter without
``PyBuffer_Release``: each such bytearray was then freed with its buffer still
exported, and CPython printed ``SystemError: deallocated bytearray object has
exported buffers`` (issue 37, item 4)."""
import gc

import pyarrow as pa
import pytest
import zstandard

from rowformat import _rowcodec
from rowformat.fory import RowEncoder, RowView

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.utf8())])


def _block():
    return _rowcodec.Block(bytearray(b"\x00\x00\x00\x00"))     # a block of 0 rows


def _prefix_block():
    frame = bytearray(zstandard.ZstdCompressor().compress(b"\x00" * 4))
    return _rowcodec.PrefixBlock(frame, 4, 0)


def _row_view():
    data = bytearray(RowEncoder(SCHEMA, layout="standard").encode({"id": 1, "name": "x"}))
    return RowView(SCHEMA, data)


class _Cycle:
    pass


@pytest.mark.parametrize("make", [_block, _prefix_block, _row_view])
def test_a_buffer_owner_in_a_cycle_releases_its_buffer(capfd, make):
    """The owner is made before the cycle that holds it, so that the
    collector clears it first, as it did when a RowDataset was closed while
    another thread was taking."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(3):
            owner = make()
            cycle = _Cycle()
            cycle.owner, cycle.me = owner, cycle
            del owner, cycle
        assert gc.collect() >= 3
    finally:
        if enabled:
            gc.enable()
    err = capfd.readouterr().err
    assert err == "", err
