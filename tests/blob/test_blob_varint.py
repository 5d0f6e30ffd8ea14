"""Paimon's DeltaVarintCompressor vectors (Java wrapping int64 arithmetic)."""
import pytest

from rowformat import _blob
from rowformat.errors import VarintError

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
