"""The data files of the accelerated to_torch() dataset (rowformat.paimon._torch),
without torch: how its readers read them."""
import os
import subprocess
import sys
import textwrap

import pytest

import rowformat.paimon as rp

pytestmark = pytest.mark.skipif(
    "pypaimon.read.table_read.TableRead.to_torch" not in rp.status().patched,
    reason=f"pypaimon {rp.status().pypaimon}'s to_torch() is not patched")

SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    import pyarrow as pa
    import rowformat.paimon as rp
    from rowformat.paimon import _torch
    from tests.paimon._tables import Warehouse, write

    wh = Warehouse(sys.argv[1])
    data = pa.table({"id": pa.array(range(20000), pa.int64()),
                     "s": [f"value {i:08d} " * 4 for i in range(20000)]})
    t = wh.create("t", data.schema, options={"row-tracking.enabled": "true",
                                             "data-evolution.enabled": "true"})
    with rp.accelerated():
        write(t, data)
        rb = t.new_read_builder()
        files = _torch._RowIdFiles(rb.new_read(), rb.new_scan().plan().splits())
    [path] = wh.data_files("t")
    print(files.rows(np.array([0], np.int64))[0]["id"])        # opens the file's reader
    os.truncate(path, os.path.getsize(path) // 4)              # cut short while it is open
    try:
        files.rows(np.array([19999], np.int64))
    except Exception as e:
        print(type(e).__name__)
    files.close()
""")


def test_readers_read_with_pread_so_a_file_cut_short_is_an_error(tmp_path):
    """The dataset's readers used memory_map=True, which the user never chose: a data
    file cut short while open killed the process with SIGBUS (stock raises OSError)."""
    script = tmp_path / "cut.py"
    script.write_text(SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "wh")], capture_output=True,
                         text=True, timeout=300, cwd=root,
                         env={**os.environ, "PYTHONPATH": root})
    assert (out.returncode, out.stdout.split()) == (0, ["0", "CorruptFileError"]), out.stderr
