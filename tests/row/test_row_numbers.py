"""Row numbers given to take(), read(selection=) and RowDataset.take() are
integers, taken as given: no float, string or null is turned into a row,
and a value outside the file is reported as the caller gave it; and the
reader's other hostile-input cases of issue 37 (a truncated file under
prefix lookups, a reader dropped without close())."""
import gc
import os

import numpy as np
import pyarrow as pa
import pytest

import rowformat

SCHEMA = "id BIGINT"


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("rows") / "x.row"
    with rowformat.RowFileWriter(p, SCHEMA, block_size=256) as w:
        w.write_rows([(i,) for i in range(100)])
    return p


@pytest.mark.parametrize("rows,error,message", [
    (pa.array([0.5, 1.9]), TypeError, "must be integers, got Arrow type double"),
    (pa.array(["1", "2"]), TypeError, "must be integers, got Arrow type string"),
    (pa.array([1, None, 3]), TypeError, "null at position 1"),
    (pa.chunked_array([[1], [None]]), TypeError, "null at position 1"),
    (pa.array([2**64 - 1], pa.uint64()), rowformat.RowIndexError, "row 18446744073709551615,"),
    (np.array([3, 2**64 - 1], np.uint64), rowformat.RowIndexError, "row 18446744073709551615,"),
    (np.array([0.0, 1.0]), TypeError, "must be integers"),
])
def test_bad_row_numbers_are_refused_as_given(path, rows, error, message):
    with rowformat.RowFileReader(path, SCHEMA) as r:
        with pytest.raises(error, match=message):
            r.take(rows)
        with pytest.raises(error, match=message):
            r.read(selection=rows)
    ds = rowformat.RowDataset([path], schema=SCHEMA)
    with pytest.raises(error, match=message):
        ds.take(rows)


@pytest.mark.parametrize("rows", [pa.array([7, 3], pa.int8()), pa.array([7, 3], pa.uint64()),
                                  np.array([7, 3], np.uint64), pa.chunked_array([[7], [3]])])
def test_integer_row_numbers_of_any_width(path, rows):
    with rowformat.RowFileReader(path, SCHEMA) as r:
        assert r.take(rows).column("id").to_pylist() == [7, 3]


def test_prefix_lookup_of_a_truncated_file_names_the_block(path, tmp_path):
    cut = tmp_path / "cut.row"
    data = path.read_bytes()
    with rowformat.RowFileReader(path, SCHEMA) as r:
        offsets, sizes = r.block_index.offsets, r.block_index.compressed_sizes
        last = len(offsets) - 1
    # the file as its index says, but ending halfway into its last block
    cut.write_bytes(data)
    with rowformat.RowFileReader(cut, SCHEMA, prefix_lookups=True, cache_bytes=0) as r:
        cut.write_bytes(data[:int(offsets[last]) + int(sizes[last]) // 2])
        with pytest.raises(rowformat.CorruptFileError,
                           match=rf"cut.row: block {last}: read \d+ of {int(sizes[last])} bytes"):
            r.get(int(r.block_index.row_starts[last]))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd (Linux)")
def test_a_reader_dropped_without_close_frees_its_descriptor(path):
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        r = rowformat.RowFileReader(path, SCHEMA)
        assert r.get(3) == (3,)
        del r
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == before
