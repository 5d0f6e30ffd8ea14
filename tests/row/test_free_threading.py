"""On a free-threaded CPython (3.13t, 3.14t): every compiled module imports
without the interpreter turning the GIL back on, and 8 threads decoding at
once (a shared .row reader, Fory rows) get what one thread gets, with the GIL
still off. The compiled modules may declare themselves free-threading
compatible (Cython's freethreading_compatible) only once this passes there."""
import os
import sys
import sysconfig
import threading

import pyarrow as pa
import pytest

pytestmark = [
    pytest.mark.skipif(not sysconfig.get_config_var("Py_GIL_DISABLED"),
                       reason="needs a free-threaded CPython (--disable-gil, e.g. 3.14t); "
                              "this interpreter has the GIL"),
    pytest.mark.skipif("PYTHON_GIL" in os.environ,
                       reason="PYTHON_GIL is set, which decides the GIL instead of the modules"),
]

THREADS = 8


def test_decode_from_8_threads_with_the_gil_off(tmp_path):
    import rowformat._blob  # noqa: F401  every compiled module, imported here
    import rowformat._blockindex  # noqa: F401
    import rowformat._rowcodec  # noqa: F401
    import rowformat.fory._row  # noqa: F401
    from rowformat import RowFileReader, RowFileWriter, schema
    from rowformat.fory import RowEncoder
    assert not sys._is_gil_enabled(), "importing rowformat turned the GIL on"

    s = schema("id BIGINT NOT NULL, name STRING, tags ARRAY<STRING>, m MAP<STRING, INT>")
    rows = [(i, f"n{i}" * (i % 5), [str(i), None] if i % 3 else None, [("k", i)])
            for i in range(20000)]
    path = tmp_path / "t.row"
    with RowFileWriter(path, s, block_size=4096) as w:
        w.write_rows(rows)
    with RowFileReader(path, s, threads=1) as r:
        expected = r.read()
    fory_schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    encoder = RowEncoder(fory_schema)
    batch = pa.record_batch([pa.array(range(5000), pa.int64()),
                             pa.array([f"v{i}" for i in range(5000)])], schema=fory_schema)
    encoded = encoder.encode_batch(batch)
    fory_expected = encoder.decode_batch(encoded)

    shared = RowFileReader(path, s, threads=1)
    barrier = threading.Barrier(THREADS)
    results, errors = [None] * THREADS, []

    def worker(t):
        try:
            barrier.wait()
            # the threads decode at the same moment: a scan, lookups, Fory rows
            results[t] = (shared.read(), [shared.get(i) for i in range(t, 20000, 997)],
                          encoder.decode_batch(encoded))
        except BaseException as e:  # reported below, with the thread
            errors.append((t, repr(e)))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    shared.close()
    assert not errors, errors
    for t, (table, got, fory_rows) in enumerate(results):
        assert table.equals(expected)
        assert got == [rows[i] for i in range(t, 20000, 997)]
        assert fory_rows.equals(fory_expected)
    assert not sys._is_gil_enabled(), "decoding turned the GIL on"
