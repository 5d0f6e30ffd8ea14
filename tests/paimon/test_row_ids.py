"""The one _ROW_ID index (paimon/_row_ids.py): what tables.RowIdRouter,
RowDataset and the accelerated to_torch() route ids with, its one set of
checks and messages."""
import types

import numpy as np
import pyarrow as pa
import pytest

from rowformat.errors import RowIndexError, SchemaError
from rowformat.paimon import _row_ids, tables


def _index():
    # files "b" (ids 10..24), "a" (0..9), "c" (25..29), given out of order
    return _row_ids.RowIdIndex([10, 0, 25], [15, 10, 5], ["b", "a", "c"], where="t")


def test_locate_is_exact_in_the_order_given_with_duplicates():
    index = _index()
    assert index.paths == ["a", "b", "c"] and index.first.tolist() == [0, 10, 25]
    f, local = index.locate([29, 0, 10, 9, 10, 24, 25])
    assert f.tolist() == [2, 0, 1, 0, 1, 1, 2]
    assert local.tolist() == [4, 0, 0, 9, 0, 14, 0]
    f, local = index.locate(np.array([], np.int64))
    assert f.tolist() == local.tolist() == []
    f, _ = index.locate(np.array([3, 26], np.uint32))
    assert f.tolist() == [0, 2]


@pytest.mark.parametrize("bad, named", [([3, 30], 30), ([-1], -1), ([5, 2 ** 63 + 5], 2 ** 63 + 5)])
def test_an_id_no_file_holds_is_a_row_index_error_naming_it(bad, named):
    ids = np.array(bad, np.uint64) if named > 2 ** 62 else bad
    with pytest.raises(RowIndexError) as e:
        _index().locate(ids)
    assert str(e.value) == f"t: no row has _ROW_ID {named}"
    with pytest.raises(RowIndexError, match="t: no row has _ROW_ID 0"):
        _row_ids.RowIdIndex([], [], [], where="t").locate([0])
    with pytest.raises(TypeError, match="t: _ROW_IDs must be integers"):
        _index().locate([1.5])


def test_route_gives_nulls_for_misses_and_null_ids():
    paths, rows = tables.RowIdRouter([10, 0, 25], [15, 10, 5], ["b", "a", "c"]).route(
        pa.array([0, 9, 10, 24, 25, 29, 30, -1, None], pa.int64()))
    assert paths.to_pylist() == ["a", "a", "b", "b", "c", "c", None, None, None]
    assert rows.to_pylist() == [0, 9, 0, 14, 0, 4, None, None, None]


def test_overlapping_ranges_are_refused():
    with pytest.raises(SchemaError) as e:
        _row_ids.RowIdIndex([0, 5], [10, 10], ["a", "b"], where="/w/t")
    assert str(e.value) == ("/w/t: _ROW_ID ranges of data files overlap (a data-evolution "
                            "table); _ROW_ID lookups need one file per row")


def _meta(**kw):
    base = dict(file_name="data-1.row", first_row_id=0, schema_id=0, write_cols=None,
                delete_row_count=0)
    base.update(kw)
    return types.SimpleNamespace(**base)


@pytest.mark.parametrize("kw, deletion, said", [
    ({"first_row_id": None}, None, "data file data-1.row has no _ROW_ID range (written before "
                                   "row tracking was enabled?)"),
    ({"schema_id": 1}, None, "data file data-1.row was written with another schema or a subset "
                             "of the columns; _ROW_ID lookups need files of the table's current "
                             "schema"),
    ({"write_cols": ["a"]}, None, "data file data-1.row was written with another schema or a "
                                  "subset of the columns; _ROW_ID lookups need files of the "
                                  "table's current schema"),
    ({"file_name": "data-1.parquet"}, None, "data file data-1.parquet is not a .row file; "
                                            "_ROW_ID lookups read .row files"),
    ({"delete_row_count": 3}, None, "data file data-1.row has deleted rows (deletion vectors), "
                                    "which _ROW_ID lookups do not apply yet; read the table instead"),
    ({}, object(), "data file data-1.row has deleted rows (deletion vectors), which _ROW_ID "
                   "lookups do not apply yet; read the table instead"),
])
def test_one_set_of_file_checks(kw, deletion, said):
    _row_ids.check_file("/w/t", _meta(), 0)         # a good one
    with pytest.raises(SchemaError) as e:
        _row_ids.check_file("/w/t", _meta(**kw), 0, deletion)
    assert str(e.value) == f"/w/t: {said}"


def test_table_checks():
    with pytest.raises(SchemaError, match=r"^/w/t has no _ROW_ID: the table was not created "
                                          r"with 'row-tracking.enabled' = 'true'$"):
        _row_ids.check_table("/w/t", False, [])
    with pytest.raises(SchemaError, match=r"^/w/t is a primary-key table; _ROW_ID lookups need "
                                          r"an append table$"):
        _row_ids.check_table("/w/t", True, ["k"])
