"""While a scan runs, the memory of a batch its caller frees goes to the next
batch whichever pool thread decodes it. glibc returns a freed chunk to the
arena of the thread that allocated it, and only that thread reuses it: a
scan whose pool threads did not take turns kept a freed batch in one
thread's arena while the other allocated a new one (a 1M-row scan's peak
went from 26 to 44 MB with the same two batches alive)."""
import platform
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

from rowformat import RowFileReader, RowFileWriter, schema
from rowformat import _rowcodec

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                                reason="the stash serves glibc's per-thread arenas")

SCHEMA = schema("a BIGINT NOT NULL, b DOUBLE NOT NULL, c INT NOT NULL")
BATCH = 32768           # 256 KiB per BIGINT column: above the stash's 64 KiB floor


def _addresses(batch):
    return sorted(buf.address for col in batch.columns for buf in col.buffers()
                  if buf is not None and buf.size >= 64 << 10)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("scan_memory") / "t.row"
    n = 3 * BATCH
    t = pa.table({"a": pa.array(range(n), pa.int64()), "b": pa.array([i / 3 for i in range(n)]),
                  "c": pa.array(range(n), pa.int32())})
    with RowFileWriter(p, SCHEMA) as w:
        w.write(t)
    return p


def test_a_batch_freed_by_the_caller_is_reused_by_another_thread(path):
    with RowFileReader(path, SCHEMA, threads=2, cache_bytes=0) as r:
        reserve = _rowcodec.Reserve(r.max_row_size)
        units = [(segments, reserve, None) for segments in r._scan._units(range(r.num_rows), BATCH)]
        decode = lambda k: r._scan._decode_unit(units[k], r._all_columns)
        # each of two threads decodes a batch (so its decoder knows the sizes);
        # then the caller frees the first, and the second thread decodes the
        # third batch: the schedule that kept two batches' memory in one arena
        _rowcodec.scan_buffers(1)
        try:
            with ThreadPoolExecutor(1) as a, ThreadPoolExecutor(1) as b:
                first = a.submit(decode, 0).result()
                second = b.submit(decode, 1).result()
                freed = _addresses(first)
                assert len(freed) == 3
                del first
                third = b.submit(decode, 2).result()
            assert _addresses(third) == freed
            assert pa.Table.from_batches([third]).equals(r.read(selection=range(2 * BATCH, 3 * BATCH)))
            del second
        finally:
            _rowcodec.scan_buffers(-1)
