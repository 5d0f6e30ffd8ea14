"""Objects that hold a ``Py_buffer`` of another object (a decompressed
``Block``, a ``PrefixBlock``'s frame, the owner of a Fory ``RowView``'s bytes)
release it when the garbage collector frees them in a reference cycle.
Cython's generated ``tp_clear`` used to drop the exporter without
``PyBuffer_Release``: each such bytearray was then freed with its buffer still
exported, and CPython printed ``SystemError: deallocated bytearray object has
exported buffers`` (issue 37, item 4)."""
import gc
import subprocess
import sys

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


# A view of a memory map, as a reader with memory_map=True hands out (frames
# are slices of one memoryview of the mapping). A memoryview is itself
# cleared by the collector when it is garbage: its tp_clear, with a buffer
# still exported, fails ("BufferError: memoryview has 1 exported buffer",
# ignored) yet drops its managed buffer, and once the holder releases its
# view the memoryview's dealloc dereferences that NULL buffer: a segfault
# (issue 40, item 4). Each case runs in a child process, whose return code
# and stderr say what happened; a holder that never released its view keeps
# the mapping, so each also checks the mapping is freed (weakref) or closes.

_MAPPED = """
import gc, mmap, tempfile, weakref
import numpy as np
import pyarrow as pa
import zstandard
from rowformat import RowFileReader, RowFileWriter, _rowcodec
from rowformat.fory import RowEncoder, RowView

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.utf8())])

class Cycle:
    pass

def mapped(data):
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.flush()
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

gc.collect()
gc.disable()
"""

_HOLDERS = {
    "Block": """
m = mapped(b"pad" + b"\\x00" * 4)
owner = _rowcodec.Block(memoryview(m)[3:])              # a block of 0 rows
assert owner.num_rows == 0 and bytes(owner.data) == bytes(4)
""",
    "PrefixBlock": """
m = mapped(b"pad" + zstandard.ZstdCompressor().compress(bytes(range(256)) * 64))
owner = _rowcodec.PrefixBlock(memoryview(m)[3:], 256 * 64, 0)
assert owner.advance(1000) > 0 and owner.output() == (bytes(range(256)) * 64)[:owner.produced]
""",
    "BlockPrefixes": """
m = mapped(b"pad" + zstandard.ZstdCompressor().compress(bytes(4)))
view = memoryview(m)
owner = _rowcodec.BlockPrefixes([view[3:]], *(np.array([x], np.int64) for x in (4, 0, -1)))
del view
""",
    "RowView": """
data = RowEncoder(SCHEMA, layout="standard").encode({"id": 7, "name": "x"})
m = mapped(b"pad" + data)
owner = RowView(SCHEMA, memoryview(m)[3:])
assert owner["id"] == 7 and owner["name"] == "x"
""",
}

_IN_A_CYCLE = """
cycle = Cycle()                 # younger than the view: cleared after it
cycle.owner, cycle.me = owner, cycle
del owner, cycle
assert gc.collect() >= 2
m.close()                       # BufferError if a view of it were still exported
print("ok")
"""


def _child(code: str) -> None:
    done = subprocess.run([sys.executable, "-c", _MAPPED + code], capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")


@pytest.mark.parametrize("holder", sorted(_HOLDERS))
def test_a_buffer_owner_of_a_mapped_view_in_a_cycle(holder):
    _child(_HOLDERS[holder] + _IN_A_CYCLE)


def test_a_prefix_lookups_block_over_a_mapped_file_in_a_cycle(tmp_path):
    """The reported case: a reader with memory_map and prefix_lookups keeps
    the partly decompressed block of a lookup, whose frame is a view of the
    mapping; the block and the reader end in a cycle younger than the view
    (a holder list), so that the collector reaches the view first."""
    _child(f"""
path = {str(tmp_path / "p.row")!r}
with RowFileWriter(path, SCHEMA, block_size=8192) as w:
    w.write_rows([(i, "x" * (i % 40)) for i in range(5000)])
r = RowFileReader(path, SCHEMA, memory_map=True, prefix_lookups=True)
assert r.num_blocks > 2 and r.get(1) == (1, "x")
prefix = r._store.cached_prefix(0)
assert 0 < prefix.produced < r._table.usize(0)             # partly decompressed
mapping = weakref.ref(r._source._map)
holder = [r, prefix]
holder.append(holder)
del r, prefix, holder
assert gc.collect() >= 3
assert mapping() is None        # unmapped: no view of it left exported
print("ok")
""")
