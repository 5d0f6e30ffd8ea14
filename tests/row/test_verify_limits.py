"""rowformat.verify reports every problem; limits are checked before
allocation; hostile indexes and frames raise CorruptFileError."""
import io
import struct

import numpy as np
import pytest
import zstandard

from rowformat import (CorruptFileError, LimitExceededError, RowFileReader, RowFileWriter,
                       SchemaError, schema, verify)
from rowformat.row.block_index import BlockIndex
from rowformat.row.footer import FOOTER_SIZE, Footer

S = schema("id INT NOT NULL, name STRING, tags ARRAY<STRING>")
ROWS = [(i, f"n{i}", [str(i)] * (i % 3)) for i in range(200)]


def _file(tmp_path, block_size=256):
    path = tmp_path / "f.row"
    with RowFileWriter(path, S, block_size=block_size, threads=1) as w:
        w.write_rows(ROWS)
    return path


def _parts(data: bytes):
    footer = Footer.from_bytes(data[-FOOTER_SIZE:], len(data))
    index = BlockIndex.from_bytes(data[footer.index_offset:len(data) - FOOTER_SIZE])
    return footer, index


def _rebuild(blocks, row_starts, total_rows):
    """A .row file from uncompressed blocks (frames without content size)."""
    frames = [zstandard.ZstdCompressor(write_content_size=False).compress(b) for b in blocks]
    index = BlockIndex(np.array([len(f) for f in frames], np.int64),
                       np.array([len(b) for b in blocks], np.int64),
                       np.array(row_starts, np.int64)).to_bytes()
    body = b"".join(frames)
    return body + index + Footer(total_rows, len(blocks), len(body), len(index)).to_bytes()


def _blocks(data):
    footer, index = _parts(data)
    out = []
    for off, c, u in zip(index.offsets, index.compressed_sizes, index.uncompressed_sizes):
        out.append(zstandard.ZstdDecompressor().decompress(data[off:off + c], max_output_size=int(u)))
    return out, index.row_starts.tolist(), footer.total_rows


def test_clean_file_verifies(tmp_path):
    report = verify(_file(tmp_path), S)
    assert report.ok and not report.problems and report.rows_checked == 200
    assert report.blocks_checked == report.num_blocks > 5
    assert "OK" in str(report)
    report.raise_if_failed()


def test_every_damaged_block_and_row_is_reported(tmp_path):
    data = _file(tmp_path).read_bytes()
    blocks, starts, total = _blocks(data)
    blocks = [bytearray(b) for b in blocks]
    # block 1: garbage row count; block 3, its 2nd row: a string length past the row
    blocks[1][-4:] = struct.pack("<i", 10 ** 6)
    n3 = struct.unpack("<i", bytes(blocks[3][-4:]))[0]
    offs = struct.unpack_from(f"<{n3}i", blocks[3], len(blocks[3]) - 4 - 4 * n3)
    blocks[3][offs[1] + 1 + 4] = 0x7F        # null header, id, then name's length varint
    bad = tmp_path / "bad.row"
    bad.write_bytes(_rebuild([bytes(b) for b in blocks], starts, total))
    report = verify(bad, S)
    assert not report.ok
    by_block = {p.block for p in report.problems}
    assert {1, 3} <= by_block, str(report)
    row_problem = [p for p in report.problems if p.block == 3 and p.kind == "row"]
    assert row_problem and row_problem[0].row == starts[3] + 1 and row_problem[0].column == "name"
    with pytest.raises(CorruptFileError, match="bad.row"):
        report.raise_if_failed()
    # the reader names file, block, row and column too
    with RowFileReader(bad, S) as r:
        with pytest.raises(CorruptFileError, match=rf"bad.row: block 3, row {starts[3] + 1}, column 'name'"):
            r.get(starts[3] + 1)
        with pytest.raises(CorruptFileError, match="block 1"):
            r.read()


def test_index_problems_all_reported(tmp_path):
    data = _file(tmp_path).read_bytes()
    blocks, starts, total = _blocks(data)
    starts[2] = starts[1]             # not increasing
    starts[0] = 5                     # first not 0
    report = verify(io.BytesIO(_rebuild(blocks, starts, total)), S)
    messages = " | ".join(p.message for p in report.problems)
    assert "expected 0" in messages and "not after the previous" in messages, messages


def test_max_errors_and_bad_arguments(tmp_path):
    data = _file(tmp_path).read_bytes()
    blocks, starts, total = _blocks(data)
    blocks = [b[:-4] + struct.pack("<i", 10 ** 6) for b in blocks]
    report = verify(io.BytesIO(_rebuild(blocks, starts, total)), S, max_errors=3)
    assert len(report.problems) == 3 and report.truncated
    with pytest.raises(SchemaError):
        verify(tmp_path / "f.row", "id NOTATYPE")
    with pytest.raises(OSError):
        verify(tmp_path / "missing.row", S)
    with pytest.raises(ValueError):
        verify(tmp_path / "f.row", S, max_errors=0)
    short = verify(io.BytesIO(b"SWOR"), S)
    assert [p.kind for p in short.problems] == ["footer"]


def test_max_row_size(tmp_path):
    path = tmp_path / "big.row"
    with RowFileWriter(path, S, threads=1) as w:
        w.write_rows([(1, "x" * 5000, None), (2, "y", None)])
    with RowFileReader(path, S, max_row_size=4096) as r:
        assert r.get(1) == (2, "y", None)
        with pytest.raises(LimitExceededError, match=r"big.row: block 0, row 0.*max_row_size=4096"):
            r.get(0)
        with pytest.raises(LimitExceededError, match="row 0"):
            r.read()
        assert r.take([1]).num_rows == 1
    report = verify(path, S, max_row_size=4096)
    assert [(p.kind, p.row) for p in report.problems] == [("limit", 0)]


def test_null_placeholders_bounded_by_max_row_size(tmp_path):
    vs = schema("av ARRAY<VECTOR<DOUBLE, 1000>>")
    path = tmp_path / "v.row"
    with RowFileWriter(path, vs, threads=1) as w:
        w.write_rows([([None] * 2000,)])         # 250 bytes of bitmap -> 16 MB of Arrow placeholders
    with RowFileReader(path, vs, max_row_size=1 << 20) as r:
        with pytest.raises(LimitExceededError, match="placeholders"):
            r.read()
        assert r.get(0) == ([None] * 2000,)      # Python values need no placeholders
    with RowFileReader(path, vs) as r:
        assert r.read().num_rows == 1


def test_max_block_size_checked_at_open(tmp_path):
    path = _file(tmp_path, block_size=4096)
    with pytest.raises(LimitExceededError, match="max_block_size=100"):
        RowFileReader(path, S, max_block_size=100)


def test_frame_whose_own_content_size_disagrees_is_rejected_before_decompressing(tmp_path):
    """python-zstandard allocates a frame's declared content size whatever
    max_output_size says: a frame header may not claim another size."""
    data = _file(tmp_path, block_size=1 << 16).read_bytes()
    blocks, starts, total = _blocks(data)
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(blocks[0] + b"\0" * 100)
    assert zstandard.frame_content_size(frame) == len(blocks[0]) + 100
    index = BlockIndex(np.array([len(frame)], np.int64), np.array([len(blocks[0])], np.int64),
                       np.array([0], np.int64)).to_bytes()
    f = frame + index + Footer(total, 1, len(frame), len(index)).to_bytes()
    with RowFileReader(io.BytesIO(f), S) as r:
        with pytest.raises(CorruptFileError, match="ZSTD frame declares"):
            r.read()
    assert "ZSTD frame declares" in str(verify(io.BytesIO(f), S))


def test_compressed_sizes_that_wrap_around_are_rejected(tmp_path):
    data = _file(tmp_path).read_bytes()
    footer, index = _parts(data)
    comp = index.compressed_sizes.copy()
    comp = np.concatenate([comp, [2 ** 63 - 1, 2 ** 63 - 1, 2]]).astype(np.int64)
    n = len(comp)
    bogus = BlockIndex(comp, np.concatenate([index.uncompressed_sizes, [1, 1, 1]]),
                       np.concatenate([index.row_starts, [197, 198, 199]])).to_bytes()
    body = data[:footer.index_offset]
    f = body + bogus + Footer(200, n, len(body), len(bogus)).to_bytes()
    with pytest.raises(CorruptFileError, match="exceeds"):
        RowFileReader(io.BytesIO(f), S)
    assert not verify(io.BytesIO(f), S).ok


def _frames(data):
    """The compressed frames of a .row file, as written."""
    _, index = _parts(data)
    return [data[o:o + c] for o, c in zip(index.offsets, index.compressed_sizes)]


def _with_frames(data, frames):
    """``data`` with its blocks' frames replaced by ``frames``: index and
    footer rewritten for the new compressed sizes, all else unchanged."""
    footer, index = _parts(data)
    new_index = BlockIndex(np.array([len(f) for f in frames], np.int64),
                           index.uncompressed_sizes, index.row_starts).to_bytes()
    body = b"".join(frames)
    return body + new_index + Footer(footer.total_rows, len(frames), len(body),
                                     len(new_index)).to_bytes()


@pytest.mark.parametrize("java_frames", [False, True])
def test_bytes_after_a_blocks_frame_are_reported_by_verify(tmp_path, java_frames):
    data = _file(tmp_path).read_bytes()
    if java_frames:       # frames without a content size, as Paimon Java writes them
        data = _rebuild(*_blocks(data))
    frames = _frames(data)
    assert verify(io.BytesIO(data), S).ok
    second = zstandard.ZstdCompressor(write_content_size=not java_frames).compress(b"hidden")
    frames[2] += b"garbage!"
    frames[4] += second
    bad = _with_frames(data, frames)
    report = verify(io.BytesIO(bad), S)
    assert [(p.kind, p.block) for p in report.problems] == [("block", 2), ("block", 4)], str(report)
    assert report.problems[0].message.startswith(
        f"8 bytes after the ZSTD frame, inside the block's {len(frames[2])} compressed bytes")
    assert report.problems[1].message.startswith(
        f"{len(second)} bytes after the ZSTD frame (another ZSTD frame)")
    assert report.rows_checked == 200       # the blocks' rows are still checked
    # The reader, like Paimon Java's, decompresses the first frame and ignores the rest.
    with RowFileReader(io.BytesIO(bad), S) as r, RowFileReader(io.BytesIO(data), S) as good:
        assert r.read().equals(good.read())


def test_bytes_after_an_empty_frame_are_reported(tmp_path):
    """python-zstandard's strict mode lets bytes after an empty frame pass;
    verify counts them all the same."""
    frame = zstandard.ZstdCompressor().compress(b"") + b"xy"
    index = BlockIndex(np.array([len(frame)], np.int64), np.array([0], np.int64),
                       np.array([0], np.int64)).to_bytes()
    f = frame + index + Footer(1, 1, len(frame), len(index)).to_bytes()
    messages = [p.message for p in verify(io.BytesIO(f), S).problems]
    assert messages[0].startswith("2 bytes after the ZSTD frame"), messages
    assert "shorter than its 4-byte row count" in messages[1]


def test_an_empty_frame_naming_a_dictionary_is_reported(tmp_path):
    """python-zstandard returns b"" for a frame declaring 0 bytes without
    decoding it; the streaming decoder verify counts trailing bytes with
    refuses its dictionary ID (a fuzz finding: the ZstdError escaped)."""
    frame = bytes.fromhex("28b52ffd") + bytes([0x20 | 0x03]) + b"\x1f\x00\x00\x03" + b"\x00"
    frame += bytes.fromhex("010000") + b"xy"    # an empty raw last block, then 2 trailing bytes
    index = BlockIndex(np.array([len(frame)], np.int64), np.array([0], np.int64),
                       np.array([0], np.int64)).to_bytes()
    f = frame + index + Footer(1, 1, len(frame), len(index)).to_bytes()
    problems = verify(io.BytesIO(f), S).problems
    assert [(p.kind, p.block) for p in problems] == [("block", 0)], problems
    assert problems[0].message == "ZSTD decompression failed: zstd decompressor error: Dictionary mismatch"
