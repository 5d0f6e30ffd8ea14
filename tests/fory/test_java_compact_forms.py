"""Compact bytes that Fory Java writes in more than one way, derived by hand
from Java's sources (org.apache.fory.format.row.binary.writer and the
encoder builders) and from CompactCodecTest: rowformat must read every form
Java writes, and write the one that the element-by-element path writes."""
import pyarrow as pa
import pytest

from rowformat.fory import RowEncoder, RowView

NN = dict(nullable=False)


def _all_readers(schema, data):
    enc = RowEncoder(schema, "compact")
    d = enc.decode(data)
    view = RowView(schema, data, layout="compact")
    b = enc.decode_batch(pa.array([data, data], pa.binary()))
    b.validate(full=True)
    assert b.to_pylist() == [d, d]
    assert view.to_dict() == d
    return d, view


# Arrays of empty structs (list<struct<>>, a List of a bean with no fields):
# Java's fixedWidthFor(struct with no fields) is 0 (no bitmap, no children),
# and CompactBinaryArray.calculateHeaderInBytes rounds the header to 8 when
# fixedWidth % 8 == 0, which 0 is. The elements take 0 bytes each.
EMPTY = pa.struct([])


@pytest.mark.parametrize("nullable,value,java_hex", [
    # row: l slot (size 8, offset 16); the row's bitmap (l nullable) and pad,
    # fixed region 9 -> 16 (a variable-width field rounds it);
    # array: count 3, element bitmap 0b010 (element 1 null), header 5 -> 8
    (True, [{}, None, {}],
     "08000000" "10000000" "00" "00000000000000" "03000000" "02" "000000"),
    # no element bitmap (NOT NULL elements): header 4 -> 8
    (False, [{}, {}],
     "08000000" "10000000" "00" "00000000000000" "02000000" "00000000"),
])
def test_empty_struct_array_header_is_rounded(nullable, value, java_hex):
    schema = pa.schema([pa.field("l", pa.list_(pa.field("item", EMPTY, nullable=nullable)))])
    java = bytes.fromhex(java_hex)
    assert RowEncoder(schema, "compact").encode({"l": value}) == java
    got, view = _all_readers(schema, java)
    assert got == {"l": value}
    assert [view["l"].is_null(i) for i in range(len(value))] == [v is None for v in value]
