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


# CompactCodecTest.testInlinePrimitiveNestedArrayType: a bean
#   InlinePrimitiveNestedArrayType { InlineNestedType f1; String f2; short[] f3; }
#   InlineNestedType { Nested1 f1; Nested2 f2; }  Nested1 { short f1; }  Nested2 { int f1; }
# Reference fields are nullable, primitive ones (and a primitive array's
# elements) are not.
NESTED1 = pa.struct([pa.field("f1", pa.int16(), **NN)])
NESTED2 = pa.struct([pa.field("f1", pa.int32(), **NN)])
INLINE_NESTED = pa.struct([pa.field("f1", NESTED1), pa.field("f2", NESTED2)])
PRIMITIVE_ARRAY_SCHEMA = pa.schema([pa.field("f1", INLINE_NESTED), pa.field("f2", pa.string()),
                                    pa.field("f3", pa.list_(pa.field("item", pa.int16(), **NN)))])
PRIMITIVE_ARRAY_VALUE = {"f1": {"f1": {"f1": 42}, "f2": {"f1": 75}}, "f2": "luna", "f3": [1, 2, 3]}

# The row as rowformat writes it, and as Java's writers write the same schema
# and value element by element (CompactBinaryArrayWriter.reset(3), then one
# write(i, short) per element, as Java's codecs write collections), 44 bytes:
#
# Field order (FieldAlignmentComparator): f2 and f3 take an 8-byte slot, f1 is
# an inline struct of 7 bytes (Nested2 4 + Nested1 2 + its 1-byte bitmap, no
# bitmap of their own as their only fields are primitive); a space of 7 is
# neither 2, 4 nor a multiple of 8, so f1 sorts last: f2, f3, f1.
ROWFORMAT_44 = bytes.fromhex(
    "04000000" "18000000"      #  0 f2 slot: size 4, offset 24
    "0c000000" "20000000"      #  8 f3 slot: size 12, offset 32
    "4b000000"                 # 16 f1 inline: Nested2.f1 = 75 (sorted first: 4 > 2)
    "2a00"                     # 20          Nested1.f1 = 42
    "00"                       # 22          f1's own bitmap (f1, f2 non-null)
    "00"                       # 23 the row's bitmap, (3 + 7) / 8 = 1 byte: nothing null
    #                            -> fixed region 24, already a multiple of 8
    "6c756e61" "00000000"      # 24 "luna", zero-padded to 8
    "03000000"                 # 32 f3: int32 count 3; no bitmap (elements NOT NULL);
    #                               header 4, not rounded (element width 2 is no multiple of 8)
    "010002000300" "0000"      # 36 elements 1, 2, 3 (int16), element region rounded to 8
)                              # 44

# The 50-byte form that Java's generated codec writes for a short[] field
# (CompactCodecTest asserts buffer.size() == 50): BaseBinaryEncoderBuilder
# calls arrayWriter.reset(3), which reserves and advances past the header and
# the rounded element region (4 + 8 = 12 bytes), then
# arrayWriter.fromPrimitiveArray(short[]), which copies the 6 bytes of
# elements into that region and then calls primitiveArrayAdvance(6):
# CompactBinaryArrayWriter overrides it to advance the writer another 6 bytes
# (BinaryArrayWriter's own does nothing, as reset already advanced). The
# array is therefore 18 bytes, its last 6 unused (zero in a fresh buffer),
# and the slot's size says 18.
JAVA_GENERATED_50 = bytes.fromhex(
    "04000000" "18000000"      #  0 f2 slot: size 4, offset 24 (unchanged)
    "12000000" "20000000"      #  8 f3 slot: size 18, offset 32
    "4b000000" "2a00" "00" "00"  # 16 f1 inline, both bitmaps (unchanged)
    "6c756e61" "00000000"      # 24 "luna" (unchanged)
    "03000000"                 # 32 count 3
    "010002000300" "0000"      # 36 elements, rounded to 8 (unchanged)
    "000000000000"             # 44 primitiveArrayAdvance(6): 6 more bytes
)                              # 50


def test_rowformat_writes_the_element_by_element_form():
    enc = RowEncoder(PRIMITIVE_ARRAY_SCHEMA, "compact")
    assert len(ROWFORMAT_44) == 44 and len(JAVA_GENERATED_50) == 50
    assert enc.encode(PRIMITIVE_ARRAY_VALUE) == ROWFORMAT_44
    assert [c.name for c in enc._plan.layout.children] == ["f2", "f3", "f1"]


def test_reads_java_generated_primitive_array_form():
    """Both readers read both forms: Java's CompactBinaryArray finds the
    elements from the count, and so does rowformat; the 6 bytes after the
    element region are never read."""
    ours, ours_view = _all_readers(PRIMITIVE_ARRAY_SCHEMA, ROWFORMAT_44)
    java, java_view = _all_readers(PRIMITIVE_ARRAY_SCHEMA, JAVA_GENERATED_50)
    assert ours == java == PRIMITIVE_ARRAY_VALUE
    assert java_view["f3"].to_list() == [1, 2, 3] == [java_view["f3"].get_int16(i) for i in range(3)]
    assert java_view["f1"]["f2"]["f1"] == 75 and java_view.get_str(1) == "luna"


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
