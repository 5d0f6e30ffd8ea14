"""The fuzz targets' bodies, shared by the atheris scripts and the replay
test. Each takes one input and returns normally when the input decodes or
raises a ``rowformat.RowFormatError``; anything else escapes (a finding)."""
from __future__ import annotations

import io

import pyarrow as pa

import rowformat
from rowformat import RowFileReader, RowFormatError, schema

from _schemas import SCHEMAS

# Small limits: a fuzz input must not be able to make us allocate more than
# a few MiB more than its own size.
LIMITS = dict(max_block_size=1 << 20, max_row_size=1 << 20)
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

        from _schemas import fory_cases
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


# -- proxy coverage ---------------------------------------------------------
# The decoders are compiled (Cython) and, in the default build, not
# instrumented, so libFuzzer sees only Python-level edges and would discard
# inputs that reach new C paths. Each distinct outcome (which error, in
# which field, or success) is hashed to one of 128 leaves of an if-tree in
# this instrumented module: a new outcome is a new edge.

def _leaf(n):
    if n & 1:
        if n & 2:
            if n & 4:
                if n & 8:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 0
                            else:
                                return 1
                        else:
                            if n & 64:
                                return 2
                            else:
                                return 3
                    else:
                        if n & 32:
                            if n & 64:
                                return 4
                            else:
                                return 5
                        else:
                            if n & 64:
                                return 6
                            else:
                                return 7
                else:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 8
                            else:
                                return 9
                        else:
                            if n & 64:
                                return 10
                            else:
                                return 11
                    else:
                        if n & 32:
                            if n & 64:
                                return 12
                            else:
                                return 13
                        else:
                            if n & 64:
                                return 14
                            else:
                                return 15
            else:
                if n & 8:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 16
                            else:
                                return 17
                        else:
                            if n & 64:
                                return 18
                            else:
                                return 19
                    else:
                        if n & 32:
                            if n & 64:
                                return 20
                            else:
                                return 21
                        else:
                            if n & 64:
                                return 22
                            else:
                                return 23
                else:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 24
                            else:
                                return 25
                        else:
                            if n & 64:
                                return 26
                            else:
                                return 27
                    else:
                        if n & 32:
                            if n & 64:
                                return 28
                            else:
                                return 29
                        else:
                            if n & 64:
                                return 30
                            else:
                                return 31
        else:
            if n & 4:
                if n & 8:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 32
                            else:
                                return 33
                        else:
                            if n & 64:
                                return 34
                            else:
                                return 35
                    else:
                        if n & 32:
                            if n & 64:
                                return 36
                            else:
                                return 37
                        else:
                            if n & 64:
                                return 38
                            else:
                                return 39
                else:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 40
                            else:
                                return 41
                        else:
                            if n & 64:
                                return 42
                            else:
                                return 43
                    else:
                        if n & 32:
                            if n & 64:
                                return 44
                            else:
                                return 45
                        else:
                            if n & 64:
                                return 46
                            else:
                                return 47
            else:
                if n & 8:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 48
                            else:
                                return 49
                        else:
                            if n & 64:
                                return 50
                            else:
                                return 51
                    else:
                        if n & 32:
                            if n & 64:
                                return 52
                            else:
                                return 53
                        else:
                            if n & 64:
                                return 54
                            else:
                                return 55
                else:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 56
                            else:
                                return 57
                        else:
                            if n & 64:
                                return 58
                            else:
                                return 59
                    else:
                        if n & 32:
                            if n & 64:
                                return 60
                            else:
                                return 61
                        else:
                            if n & 64:
                                return 62
                            else:
                                return 63
    else:
        if n & 2:
            if n & 4:
                if n & 8:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 64
                            else:
                                return 65
                        else:
                            if n & 64:
                                return 66
                            else:
                                return 67
                    else:
                        if n & 32:
                            if n & 64:
                                return 68
                            else:
                                return 69
                        else:
                            if n & 64:
                                return 70
                            else:
                                return 71
                else:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 72
                            else:
                                return 73
                        else:
                            if n & 64:
                                return 74
                            else:
                                return 75
                    else:
                        if n & 32:
                            if n & 64:
                                return 76
                            else:
                                return 77
                        else:
                            if n & 64:
                                return 78
                            else:
                                return 79
            else:
                if n & 8:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 80
                            else:
                                return 81
                        else:
                            if n & 64:
                                return 82
                            else:
                                return 83
                    else:
                        if n & 32:
                            if n & 64:
                                return 84
                            else:
                                return 85
                        else:
                            if n & 64:
                                return 86
                            else:
                                return 87
                else:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 88
                            else:
                                return 89
                        else:
                            if n & 64:
                                return 90
                            else:
                                return 91
                    else:
                        if n & 32:
                            if n & 64:
                                return 92
                            else:
                                return 93
                        else:
                            if n & 64:
                                return 94
                            else:
                                return 95
        else:
            if n & 4:
                if n & 8:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 96
                            else:
                                return 97
                        else:
                            if n & 64:
                                return 98
                            else:
                                return 99
                    else:
                        if n & 32:
                            if n & 64:
                                return 100
                            else:
                                return 101
                        else:
                            if n & 64:
                                return 102
                            else:
                                return 103
                else:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 104
                            else:
                                return 105
                        else:
                            if n & 64:
                                return 106
                            else:
                                return 107
                    else:
                        if n & 32:
                            if n & 64:
                                return 108
                            else:
                                return 109
                        else:
                            if n & 64:
                                return 110
                            else:
                                return 111
            else:
                if n & 8:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 112
                            else:
                                return 113
                        else:
                            if n & 64:
                                return 114
                            else:
                                return 115
                    else:
                        if n & 32:
                            if n & 64:
                                return 116
                            else:
                                return 117
                        else:
                            if n & 64:
                                return 118
                            else:
                                return 119
                else:
                    if n & 16:
                        if n & 32:
                            if n & 64:
                                return 120
                            else:
                                return 121
                        else:
                            if n & 64:
                                return 122
                            else:
                                return 123
                    else:
                        if n & 32:
                            if n & 64:
                                return 124
                            else:
                                return 125
                        else:
                            if n & 64:
                                return 126
                            else:
                                return 127


def _outcome(tag: str):
    import zlib
    return _leaf(zlib.crc32(tag.encode("utf-8", "replace")) & 127)


def _err(e: BaseException) -> str:
    msg = str(e)
    # drop numbers so that outcomes, not values, make new leaves
    return type(e).__name__ + ":" + "".join(c for c in msg if not c.isdigit())[-120:]
