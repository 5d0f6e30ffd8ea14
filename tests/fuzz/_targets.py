"""The fuzz targets' bodies, shared by the atheris scripts and the replay
test. Each takes one input and returns normally when the input decodes or
raises a ``rowformat.RowFormatError``; anything else escapes (a finding)."""
from __future__ import annotations

import io

import pyarrow as pa

import rowformat
from rowformat import RowFileReader, RowFormatError, schema

from tests.fuzz._schemas import SCHEMAS

# Small limits: a fuzz input must not be able to make us allocate more than
# a few MiB more than its own size. A call's null placeholders are then at
# most 16 x its decoded rows (a block: 1 MiB) + 256 bytes a row (the null
# width credit, max_row_size / 1024) + 256 KiB, and a get()'s Python values
# 16 x its row + 256 KiB: some 80 MB for the largest block, which the fuzz
# runs' -rss_limit_mb (_run.py, scripts/fuzz.sh) leaves room for, and which
# an expansion that escapes these bounds soon passes.
LIMITS = dict(max_block_size=1 << 20, max_row_size=256 << 10)
_ROW_TYPES = [schema(s) for s in SCHEMAS]
_DECODERS = {}


def _touch_table(table: pa.Table):
    # Valid Arrow is the contract. (to_pylist is not called: values Arrow
    # holds but Python cannot, such as dates before year 1, make pyarrow
    # raise OverflowError; RowFileReader.get reports those as CorruptFileError.)
    table.validate(full=True)


def _read_file(data: bytes, rt):
    try:
        r = RowFileReader(io.BytesIO(data), rt, cache_bytes=1 << 16, threads=1, **LIMITS)
    except RowFormatError as e:
        _outcome(_err(e))
        return
    with r:
        n = r.num_rows
        for i in {0, n // 2, n - 1} if n else ():
            try:
                r.get(i)
            except RowFormatError as e:
                _outcome(_err(e))
        try:
            _touch_table(r.read())
        except RowFormatError as e:
            _outcome(_err(e))
        if n:
            try:
                _touch_table(r.take([n - 1, 0, n - 1], columns=[rt.names[-1], rt.names[0]]))
            except RowFormatError as e:
                _outcome(_err(e))
        try:
            for batch in r.iter_batches(batch_size=3):
                batch.validate(full=True)
        except RowFormatError as e:
            _outcome(_err(e))
    report = rowformat.verify(io.BytesIO(data), rt, max_errors=20, **LIMITS)
    str(report)
    for p in report.problems:
        _outcome(p.kind + ":" + "".join(c for c in p.message if not c.isdigit()))
    assert len(report.problems) <= 20


def _decoder(k: int):
    from rowformat import _rowcodec
    from rowformat.arrow_types import to_arrow_schema

    dec = _DECODERS.get(k)
    if dec is None:
        rt = _ROW_TYPES[k]
        dec = _DECODERS[k] = _rowcodec.RowDecoder(rt, tuple(range(len(rt))), to_arrow_schema(rt))
        dec.max_row_size = LIMITS["max_row_size"]
    return dec


def _decode_block(data: bytes, k: int):
    from rowformat import _rowcodec

    try:
        block = _rowcodec.Block(data)
    except RowFormatError as e:
        _outcome(_err(e))
        return
    dec = _decoder(k)
    for i in range(min(block.num_rows, 64)):
        try:
            dec.decode_row(block, i)
        except RowFormatError as e:
            _outcome(_err(e))
    try:
        dec.decode(block, None, 0, min(block.num_rows, 256))
        _touch_table(pa.Table.from_batches([dec.finish()]))
    except RowFormatError as e:
        _outcome(_err(e))
    assert dec.pending_rows == 0
    # prefix_lookups' walk (skip_row) over the same rows, the block made a
    # frame: rows() gives a Block of rows 0..i, or None (the reader then
    # decompresses the whole block, which says what is wrong)
    prefix = _rowcodec.PrefixBlock(_frame(data), len(data), block.num_rows)
    for i in sorted({0, block.num_rows // 2, block.num_rows - 1}) if block.num_rows else ():
        walked = prefix.rows(dec, i)
        if walked is None:
            _outcome("prefix:none")
            continue
        try:
            dec.decode_row(walked, i)
        except RowFormatError as e:
            _outcome(_err(e))


_COMPRESSOR = None


def _frame(data: bytes) -> bytes:
    global _COMPRESSOR
    if _COMPRESSOR is None:
        import zstandard
        _COMPRESSOR = zstandard.ZstdCompressor(level=1)
    return _COMPRESSOR.compress(data)


def row_reader(data: bytes):
    if not data:
        return
    sel, payload = data[0], data[1:]
    k = (sel // 2) % len(SCHEMAS)
    if sel % 2 == 0:
        _read_file(payload, _ROW_TYPES[k])
    else:
        _decode_block(payload, k)


# -- Fory -------------------------------------------------------------------

_FORY = None


def _fory_cases():
    global _FORY
    if _FORY is None:
        from rowformat.fory import RowEncoder

        from tests.fuzz._schemas import fory_cases
        _FORY = [(s, layout, RowEncoder(s, layout)) for s, layout, _ in fory_cases()]
    return _FORY


def _walk(v, budget):
    """Reads fields of a view (struct, array or map view) recursively, at
    most budget[0] of them (views are lazy: the walk, not the library,
    would otherwise pay for rows whose parts alias each other)."""
    from rowformat.fory import ArrayView, MapView, StructView

    budget[0] -= 1
    if budget[0] < 0:
        return
    if isinstance(v, (StructView, ArrayView)):
        for i in range(min(len(v), 64)):
            _walk(v[i], budget)
    elif isinstance(v, MapView):
        _walk(v.keys(), budget)
        _walk(v.values(), budget)
        v.items()


def fory(data: bytes):
    if not data:
        return
    cases = _fory_cases()
    s, layout, enc = cases[data[0] % len(cases)]
    row = data[1:]
    try:
        value = enc.decode(row)
        _outcome("ok:" + ",".join(k for k, v in value.items() if v is None))
    except RowFormatError as e:
        _outcome(_err(e))
    try:
        _walk(enc.view(row), [2000])
    except RowFormatError as e:
        _outcome(_err(e))
    try:
        batch = enc.decode_batch(pa.array([row, row[:len(row) // 2], row], pa.binary()))
        batch.validate(full=True)
    except RowFormatError as e:
        _outcome(_err(e))
    try:
        enc.decode_with_hash(enc._hash_prefix + row)
    except RowFormatError as e:
        _outcome(_err(e))


# -- Fory batches -----------------------------------------------------------
# An input of ``fory_batch`` is a selector byte, then a payload:
#
# * selector < 128: the payload is one row of the Fory case selector % 128
#   (the ``fory`` target's inputs, and so its seeds, serve as they are),
#   decoded in well-formed binary and large_binary arrays, sliced or not;
# * selector >= 128: the payload builds the array's buffers directly (see
#   _raw_batch), offsets as they come: out of order, negative, past the data.

def _raw_batch(payload: bytes):
    """A binary or large_binary array from a control byte (bit 0: large;
    bits 1-2: slice offset; bits 3-5: rows; bit 6: a validity bitmap taken
    from the payload's last byte), then one little-endian int32 per offset
    (sign-extended for large_binary), then the data buffer. Only the first
    and last offsets of the unsliced array are made valid (Arrow checks
    them when the array is built); the slice's are whatever the input says."""
    import struct

    if not payload:
        return None
    ctl = payload[0]
    large = bool(ctl & 1)
    skip = (ctl >> 1) & 3
    rows = (ctl >> 3) & 7
    k = skip + rows + 1
    raw = payload[1:1 + 4 * k].ljust(4 * k, b"\0")
    data = payload[1 + 4 * k:]
    offs = list(struct.unpack(f"<{k}i", raw))
    offs[0] = min(max(offs[0], 0), len(data))
    offs[-1] = min(max(offs[-1], offs[0]), len(data))
    validity = None
    if ctl & 0x40:
        validity = pa.py_buffer(bytes([payload[-1]]) * ((k + 7) // 8))
    typ = pa.large_binary() if large else pa.binary()
    offsets = pa.py_buffer(struct.pack(f"<{k}q" if large else f"<{k}i", *offs))
    try:
        arr = pa.Array.from_buffers(typ, k - 1, [validity, offsets, pa.py_buffer(data)])
    except pa.ArrowInvalid:
        return None
    return arr.slice(skip)


def fory_batch(data: bytes):
    if not data:
        return
    cases = _fory_cases()
    sel = data[0]
    s, layout, enc = cases[(sel & 0x7F) % len(cases)]
    payload = data[1:]
    if sel & 0x80:
        arrays = [_raw_batch(payload)]
    else:
        rows = [payload, payload[:len(payload) // 2], payload]
        arrays = [pa.array(rows, pa.binary()), pa.array(rows, pa.large_binary()).slice(1),
                  pa.array([b"\x01"] + rows, pa.binary()).slice(1, 2)]
    for arr in arrays:
        if arr is None:
            continue
        try:
            batch = enc.decode_batch(arr)
            batch.validate(full=True)
            _outcome("ok:%d" % batch.num_rows)
        except RowFormatError as e:
            _outcome(_err(e))


def fory_batch_seeds() -> list[bytes]:
    """Valid inputs of both kinds for every Fory case: its row through the
    ``fory`` seeds, and explicit buffers holding it three times (binary and
    large_binary, one sliced)."""
    import struct

    from tests.fuzz._schemas import fory_cases, fory_seeds

    cases = fory_cases()
    out = fory_seeds(cases)
    for k, (_, _, row) in enumerate(cases):
        n = len(row)
        # three rows; then large_binary, sliced past 5 junk bytes: two rows at odd addresses
        out.append(bytes([0x80 | k, 3 << 3]) + struct.pack("<4i", 0, n, 2 * n, 3 * n) + row * 3)
        out.append(bytes([0x80 | k, 1 | 1 << 1 | 2 << 3]) + struct.pack("<4i", 0, 5, 5 + n, 5 + 2 * n)
                   + b"\xa5" * 5 + row * 2)
    return out


# -- proxy coverage ---------------------------------------------------------
# The decoders are compiled (Cython) and, in the default build, not
# instrumented, so libFuzzer sees only Python-level edges and would discard
# inputs that reach new C paths. Each distinct outcome (which error, in
# which field, or success) is hashed to one of 128 leaves of an if-tree in
# this instrumented module: a new outcome is a new edge.

def _if_tree(bits: int) -> str:
    """Source of ``_leaf(n)``: an if-tree over the low ``bits`` bits of n,
    one return per value, so each of the 2**bits values takes its own edge."""
    lines = ["def _leaf(n):"]

    def emit(level, value, indent):
        pad = " " * indent
        if level == bits:
            lines.append(f"{pad}return {value}")
            return
        lines.append(f"{pad}if n & {1 << level}:")
        emit(level + 1, value | (1 << level), indent + 4)
        lines.append(f"{pad}else:")
        emit(level + 1, value, indent + 4)

    emit(0, 0, 4)
    return "\n".join(lines)


_namespace: dict = {}
exec(_if_tree(7), _namespace)
_leaf = _namespace["_leaf"]
try:   # code made by exec is not instrumented on import: instrument it here
    import atheris
    _leaf = atheris.instrument_func(_leaf)
except ImportError:   # the replay test runs without atheris
    pass


def _outcome(tag: str):
    import zlib
    return _leaf(zlib.crc32(tag.encode("utf-8", "replace")) & 127)


def _err(e: BaseException) -> str:
    msg = str(e)
    # drop numbers so that outcomes, not values, make new leaves
    return type(e).__name__ + ":" + "".join(c for c in msg if not c.isdigit())[-120:]


# -- zstd_prefix: the early-stopping ZSTD decoder (src/include/rf_zstd.h) ---
def zstd_prefix(data: bytes):
    """Input: 2 bytes choosing where to stop, then a ZSTD frame. Decoding
    to any point must stay inside the buffers and give bytes that are a
    prefix of what the frame decodes to further on; a frame libzstd decodes
    must decode to the same bytes."""
    import zstandard
    from rowformat._rowcodec import PrefixBlock
    if len(data) < 3:
        return
    stop, frame = int.from_bytes(data[:2], "little"), data[2:]
    cap = 1 << 17
    p = PrefixBlock(frame, cap, 0)
    first = p.advance(stop)
    head = p.output()
    last = p.advance(cap)
    if first < 0 or last < 0:
        return
    assert p.output()[:len(head)] == head
    try:
        want = zstandard.ZstdDecompressor().decompress(frame, cap, False, True)
    except zstandard.ZstdError:
        return
    assert p.output() == want


def zstd_prefix_seeds() -> list[bytes]:
    import random

    import zstandard
    rng = random.Random(7)
    words = [bytes(rng.randrange(256) for _ in range(rng.randint(2, 9))) for _ in range(40)]
    text = b"".join(rng.choice(words) for _ in range(20000))[:1 << 17]
    out = []
    for level in (1, 3, 19, -5):
        c = zstandard.ZstdCompressor(level=level, write_content_size=False).compressobj()
        out.append((1000 * level % 65536).to_bytes(2, "little") + c.compress(text) + c.flush())
    out.append(b"\x10\x00" + zstandard.ZstdCompressor().compress(bytes(500) + text[:3000]))
    return out
