"""Paimon's DeltaVarintCompressor vectors (Java wrapping int64 arithmetic), and the
10-byte edge the .blob index and the .row block index share."""
import pytest

from rowformat import _blob, _blockindex
from rowformat.errors import CorruptFileError, VarintError

MAX, MIN = (1 << 63) - 1, -(1 << 63)

VECTORS = [
    ([42], "54"),
    ([80, 50, 90, 80, 70], "a0013b501313"),
    ([64], "8001"), ([-64], "7f"),
    ([8192], "808001"), ([-8192], "ff7f"),
    ([MIN], "ff" * 9 + "01"), ([MAX], "fe" + "ff" * 8 + "01"),
    ([MAX, MIN], "fe" + "ff" * 8 + "0102"),
    ([MIN, MAX], "ff" * 9 + "0101"),
    ([22, 26, -1, -2], "2c083501"),
    ([21, -1, -2, 21, 16], "2a2b012e09"),
    ([-1, -1, -1], "010000"),
    ([-2], "03"),
    ([], ""),
]


@pytest.mark.parametrize("values,hexdata", VECTORS)
def test_vectors(values, hexdata):
    assert _blob.encode(values).hex() == hexdata
    assert _blob.decode(bytes.fromhex(hexdata)).tolist() == values


def test_length_of_mixed_list():
    assert len(_blob.encode([100, 50, 150, 100, 200])) == 8


@pytest.mark.parametrize("hexdata,message", [
    ("808080", "Unexpected end of input"),
    ("2c80", "Unexpected end of input"),      # pypaimon drops this silently
    ("ff" * 10 + "01", "Varint overflow"),
])
def test_malformed(hexdata, message):
    with pytest.raises(VarintError, match=message):
        _blob.decode(bytes.fromhex(hexdata))


def test_decode_allocates_per_terminator_byte():
    # A long run of continuation bytes ending in one terminator is one value.
    assert _blob.decode(bytes.fromhex("8001")).tolist() == [64]


def test_layout_reports_first_bad_entry():
    offsets, used, bad, reason = _blob.layout([16, -1, 15], 100, 16, -2)
    assert (offsets[:2].tolist(), used, bad, reason) == ([0, -1], 16, 2, 0)
    offsets, used, bad, reason = _blob.layout([16, 20], 30, 16, -2)
    assert (used, bad, reason) == (16, 1, 1)
    offsets, used, bad, reason = _blob.layout([MAX, MAX], MAX, 0, -1)
    assert (used, bad, reason) == (MAX, 1, 1)    # no overflow of the running sum


# The 10-byte edge, the same in both users of the C codec (rf_wire.h): the 10th
# byte carries bit 63 only. What each side raises: .blob, then block index.
TRUNCATED = ("Unexpected end of input", "block index value is truncated")
TOO_LONG = ("^Varint overflow$", "longer than 10 bytes")
ABOVE_64_BITS = (r"Varint overflow \(10th byte > 1\)", r"above 2\^64 - 1")


@pytest.mark.parametrize("hexdata,values", [
    ("ff" * 9 + "01", [MIN]),                 # 2^64 - 1, the largest 10-byte varint
    ("80" * 9 + "01", [1 << 62]),             # 2^63: bit 63 alone
    ("fe" + "ff" * 8 + "01" + "00", [MAX, MAX]),
])
def test_ten_byte_varints_decode_on_both_sides(hexdata, values):
    data = bytes.fromhex(hexdata)
    assert _blob.decode(data).tolist() == values
    assert _blockindex.decode_longs(data).tolist() == values


@pytest.mark.parametrize("hexdata,error", [
    ("ff" * 9 + "02", ABOVE_64_BITS),         # the 10th byte's bit 1 is bit 64
    ("ff" * 9 + "7f", ABOVE_64_BITS),
    ("80" * 9 + "02", ABOVE_64_BITS),
    ("00" + "ff" * 9 + "02", ABOVE_64_BITS),  # not the first value
    ("ff" * 10 + "01", TOO_LONG),             # 11 bytes
    ("80" * 10 + "00", TOO_LONG),
    ("ff" * 9 + "81", TOO_LONG),              # a 10th byte that continues, then the end
    ("ff" * 9, TRUNCATED),
    ("00" + "80", TRUNCATED),
])
def test_bad_varints_are_rejected_alike_on_both_sides(hexdata, error):
    data = bytes.fromhex(hexdata)
    with pytest.raises(VarintError, match=error[0]):
        _blob.decode(data)
    with pytest.raises(CorruptFileError, match=error[1]) as info:
        _blockindex.decode_longs(data)
    assert not isinstance(info.value, VarintError)


@pytest.mark.parametrize("values", [[MAX, MIN], [MIN, MAX], [0, MIN, MAX, -1, 1], [1 << 62, -(1 << 62)]])
def test_both_sides_write_the_same_bytes(values):
    data = _blob.encode(values)
    assert _blockindex.encode_longs(values) == data
    assert _blob.decode(data).tolist() == _blockindex.decode_longs(data).tolist() == values
