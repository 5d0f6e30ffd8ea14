"""What decoding may allocate is bounded by the input (docs/errors.md,
"Limits"): a null costs one bit in a file but its full width in Arrow, and
one list slot, or an empty dict per element of an ARRAY<ROW<>>, in Python, so
tiny hand-made files used to make read(), take(), iter_batches(), verify()
and get() allocate gigabytes. The hostile files are built byte by byte and
read in a fresh interpreter whose address space is capped at 1 GiB: a
regression fails fast (out of memory, or a peak RSS over the bound) instead
of eating the machine's memory."""
import io
import json
import pathlib
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import zstandard

from rowformat import LimitExceededError, RowFileReader, RowFileWriter, schema, verify
from rowformat import _rowcodec
from rowformat.arrow_types import to_arrow_schema
from rowformat.row.block_index import BlockIndex
from rowformat.row.footer import Footer
from tests._deps import ASAN

ROOT = pathlib.Path(__file__).resolve().parents[2]
MiB = 1 << 20
# Under the sanitizer build (scripts/sanitize.sh) ASan reserves terabytes of
# shadow address space and keeps freed memory in quarantine: no cap, no RSS bound.
CAP = None if ASAN else 1 << 30
PEAK_MIB = 400          # a regression asked for 0.9 to 8.6 GB


def varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(0x80 | (n & 0x7F))
        n >>= 7
    out.append(n)
    return bytes(out)


def block(rows) -> bytes:
    """An uncompressed block: the rows, their offsets, the row count."""
    offsets, at = [], 0
    for r in rows:
        offsets.append(at)
        at += len(r)
    return b"".join(rows) + struct.pack(f"<{len(rows)}i", *offsets) + struct.pack("<i", len(rows))


def row_file(blocks) -> bytes:
    """A .row file of blocks given as lists of row bytes."""
    raw = [block(rows) for rows in blocks]
    frames = [zstandard.ZstdCompressor(level=19, write_content_size=False).compress(b) for b in raw]
    starts = np.cumsum([0] + [len(rows) for rows in blocks[:-1]])
    index = BlockIndex(np.array([len(f) for f in frames], np.int64),
                       np.array([len(b) for b in raw], np.int64), starts.astype(np.int64)).to_bytes()
    body = b"".join(frames)
    total = sum(len(rows) for rows in blocks)
    return body + index + Footer(total, len(blocks), len(body), len(index)).to_bytes()


PRELUDE = """
import io, json, resource, sys
import pyarrow
import rowformat
from rowformat import LimitExceededError, RowFileReader, schema, verify
# ru_maxrss carries the forking parent's peak across exec (a large pytest
# process): reset the high-water mark where Linux allows it, and read that
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
cap = {cap}
if cap:
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
path = sys.argv[1]
result = {{}}

def attempt(name, fn):
    try:
        got = fn()
        result[name] = "ok" if got is None else f"ok: {{got}}"
    except LimitExceededError as e:
        result[name] = f"limit: {{e}}"
    except BaseException as e:
        result[name] = f"{{type(e).__name__}}: {{e}}"

"""


def run_capped(tmp_path, data: bytes, code: str) -> dict:
    """Writes data to f.row and runs code on it in a fresh interpreter
    (address space capped at 1 GiB after the imports); returns its
    ``result`` dict plus its peak RSS in MiB."""
    path = tmp_path / "f.row"
    path.write_bytes(data)
    prog = PRELUDE.format(cap=CAP) + textwrap.dedent(code) + """
try:
    with open("/proc/self/status") as f:
        result["maxrss_mib"] = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) >> 10
except OSError:
    result["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
print(json.dumps(result))
"""
    done = subprocess.run([sys.executable, "-c", prog, str(path)], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_small(result):
    if not ASAN:
        assert result["maxrss_mib"] < PEAK_MIB, result


def assert_limit(message, *, row=r"\d+", column):
    assert message.startswith("limit: "), message
    assert __import__("re").search(rf"f\.row: block \d+, row {row}, column '{column}'", message), message


# -- the Arrow paths -----------------------------------------------------------

def test_a_tiny_file_of_null_vectors_is_refused_by_every_arrow_path(tmp_path):
    """16 one-byte rows, each a null VECTOR<BIGINT, 7000000>: 56 MB of Arrow
    placeholders per row. read() used to take ~0.9 GB while verify() said the
    file was fine."""
    data = row_file([[b"\x01"] * 16])
    assert len(data) < 100
    result = run_capped(tmp_path, data, """
        S = schema("v VECTOR<BIGINT, 7000000>")
        with RowFileReader(path, S, threads=1) as r:
            attempt("read", r.read)
            attempt("take", lambda: r.take([15, 3, 0, 3]))
            attempt("iter_batches", lambda: [b.num_rows for b in r.iter_batches(batch_size=1)])
        with RowFileReader(path, S, threads=2) as r:
            attempt("read_threads", r.read)
        report = verify(path, S)
        result["verify"] = [[p.kind, p.row, p.column, p.message] for p in report.problems]
    """)
    for name in ("read", "take", "iter_batches", "read_threads"):
        assert_limit(result[name], column="v")
        assert "placeholders" in result[name] and "max_row_size=67108864" in result[name]
    assert_limit(result["read"], row=1, column="v")      # the first row fits the reserve
    problems = result["verify"]
    assert problems and {(k, c) for k, _, c, _ in problems} == {("limit", "v")}, problems
    assert problems[0][1] == 1 and problems[0][3] in result["read"]
    assert_small(result)


def test_rows_just_under_the_row_limit_cannot_add_up(tmp_path):
    """64 rows of 128 bytes, each with 1000 null VECTOR<BIGINT, 8192> in an
    array: 66.6 MB each, under max_row_size, but 4.3 GB together (the bound
    used to be per row)."""
    row = b"\x00" + varint(1000) + b"\xff" * 125
    data = row_file([[row] * 64])
    assert len(data) < 300
    result = run_capped(tmp_path, data, """
        S = schema("a ARRAY<VECTOR<BIGINT, 8192>>")
        with RowFileReader(path, S, threads=1) as r:
            attempt("read", r.read)
            attempt("take", lambda: r.take(list(range(63, -1, -2))))
            attempt("iter_batches", lambda: [b.num_rows for b in r.iter_batches(batch_size=1)])
        report = verify(path, S)
        result["verify"] = sorted({p.kind for p in report.problems})
        result["verify_first"] = report.problems[0].row if report.problems else None
    """)
    for name in ("read", "take", "iter_batches"):
        assert_limit(result[name], column="a")
    assert result["verify"] == ["limit"] and result["verify_first"] == 1
    assert_small(result)


def test_many_small_blocks_share_one_reserve(tmp_path):
    """40 blocks of one 1-byte row, each a null VECTOR<BIGINT, 5000000> (40 MB):
    a reserve per block or per batch would allow 1.6 GB."""
    data = row_file([[b"\x01"]] * 40)
    result = run_capped(tmp_path, data, """
        S = schema("v VECTOR<BIGINT, 5000000>")
        for threads in (1, 2):
            with RowFileReader(path, S, threads=threads) as r:
                attempt(f"read{threads}", r.read)
                attempt(f"iter{threads}", lambda: sum(b.num_rows for b in r.iter_batches(batch_size=1)))
        report = verify(path, S)
        result["verify"] = [(p.kind, p.block, p.row) for p in report.problems]
        with RowFileReader(path, S, threads=1) as r:   # each call has its own reserve
            attempt("one_row_per_call", lambda: [r.take([i]).num_rows for i in range(0, 40, 13)])
    """)
    for name in ("read1", "iter1", "read2", "iter2"):
        assert_limit(result[name], column="v")
    assert [tuple(p) for p in result["verify"]] == [("limit", b, b) for b in range(1, 40)]
    assert result["one_row_per_call"] == "ok: [1, 1, 1, 1]"
    assert_small(result)


# -- the Python values ---------------------------------------------------------

@pytest.mark.parametrize("text,bitmap_byte", [
    ("a ARRAY<ROW<>>", 0x00),      # 2^27 non-null empty rows: 0 bytes each on disk, a dict each
    ("a ARRAY<INT>", 0xFF),        # 2^27 nulls: one list slot each
])
def test_python_values_of_a_small_row_are_bounded(tmp_path, text, bitmap_byte):
    """get(), verify(python_values=True) and `rowformat verify` built one
    Python object per bit of a null bitmap: MemoryError after more than
    1.6 GB, and the CLI exited 3 (an internal error)."""
    n = 1 << 27
    data = row_file([[b"\x00" + varint(n) + bytes([bitmap_byte]) * (n // 8)]])
    assert len(data) < 1000
    result = run_capped(tmp_path, data, f"""
        S = schema({text!r})
        with RowFileReader(path, S, threads=1) as r:
            attempt("get", lambda: r.get(0))
        report = verify(path, S)
        result["verify"] = [[p.kind, p.row, p.column, p.message] for p in report.problems]
        import subprocess
        cli = subprocess.run([sys.executable, "-m", "rowformat", "verify", path, "--schema", {text!r}],
                             capture_output=True, text=True)
        result["cli"] = [cli.returncode, cli.stdout + cli.stderr]
    """)
    assert_limit(result["get"], row=0, column="a")
    assert "Python values" in result["get"] and "max_row_size=67108864" in result["get"]
    # verify names the row once: its Arrow placeholders (the nulls) or its Python values
    assert [p[:3] for p in result["verify"]] == [["limit", 0, "a"]], result["verify"]
    assert result["cli"][0] == 1, result["cli"]             # a bad file, not an internal error
    assert "row 0, column a" in result["cli"][1] and result["verify"][0][3] in result["cli"][1]
    assert_small(result)


def test_python_values_within_the_bound_still_read(tmp_path):
    """16 bytes of Python per byte of the row, plus max_row_size: rows of
    ordinary values pass; an ARRAY<ROW<>> or all-null array passes while it
    fits max_row_size (200,000 empty dicts: 14.4 MB)."""
    s = schema("a ARRAY<STRING>, b ARRAY<ROW<>>, c ARRAY<BIGINT>")
    path = tmp_path / "p.row"
    with RowFileWriter(path, s, threads=1) as w:
        w.write_rows([([f"s{i}" for i in range(100_000)], [{}] * 200_000, [None] * 100_000)])
    with RowFileReader(path, s) as r:
        a, b, c = r.get(0)
        assert len(a) == 100_000 and b == [{}] * 200_000 and c == [None] * 100_000
    with RowFileReader(path, s, max_row_size=2 << 20) as r:   # 2 MiB + 16 x ~0.8 MB: 'b' is past it
        with pytest.raises(LimitExceededError, match=r"p.row: block 0, row 0, column 'b'.*Python"):
            r.get(0)
    assert verify(path, s).ok
    assert [p.column for p in verify(path, s, max_row_size=2 << 20).problems] == ["b"]


# -- what the rule allows ------------------------------------------------------

def test_null_vector_columns_that_writers_produce_still_read(tmp_path):
    """An all-null VECTOR<BIGINT, 1000> column is 8 KB of placeholders per
    row for 5 bytes of row and offset; 10000 rows (80 MB) are more than the
    64 MiB reserve, so the schema's null width is what pays."""
    s = schema("id INT, v VECTOR<BIGINT, 1000>")
    path = tmp_path / "nulls.row"
    with RowFileWriter(path, s, threads=1) as w:
        w.write_rows([(i, None) for i in range(10_000)])
    with RowFileReader(path, s) as r:
        t = r.read()
        assert t.num_rows == 10_000 and t.column("v").null_count == 10_000
        assert t.column("v").nbytes >= 80_000_000
        assert sum(b.num_rows for b in r.iter_batches(batch_size=777)) == 10_000
        assert r.take([9_999, 0]).column("id").to_pylist() == [9_999, 0]
        assert r.get(5) == (5, None)
    assert verify(path, s).ok
    # past max_row_size / 1024 a row's null width is not taken on trust
    with RowFileReader(path, s, max_row_size=4 << 20) as r:
        with pytest.raises(LimitExceededError, match="placeholders"):
            r.read()
    assert {p.kind for p in verify(path, s, max_row_size=4 << 20).problems} == {"limit"}


@pytest.mark.parametrize("null_every,ok", [(10, True), (20, True), (100, False), (1, False)])
def test_sparse_arrays_read_unless_almost_all_null(tmp_path, null_every, ok):
    """16 placeholder bytes per byte of row: arrays of BIGINT that are up to
    95% null read whatever their number; 2000 rows of 99% or all null
    1000-element arrays (16 MB of placeholders for 270-420 KB of rows) need
    more than the reserve, max_row_size, of 1 MiB here."""
    s = schema("a ARRAY<BIGINT>")
    path = tmp_path / "sparse.row"
    with RowFileWriter(path, s, threads=1) as w:
        w.write_rows([([k if k % null_every == 0 and null_every > 1 else None for k in range(1000)],)
                      for _ in range(2000)])
    with RowFileReader(path, s, max_row_size=1 << 20) as r:
        if ok:
            assert r.read().num_rows == 2000
        else:
            with pytest.raises(LimitExceededError, match=r"column 'a'.*placeholders"):
                r.read()
    assert verify(path, s, max_row_size=1 << 20).ok == ok


def _av_rows(nulls):
    """ARRAY<VECTOR<DOUBLE, 64>> rows of `nulls` nulls each (520 bytes of
    placeholders per null: 64 doubles and 65 validity bits)."""
    return [([None] * n,) for n in nulls]


AV = schema("av ARRAY<VECTOR<DOUBLE, 64>>")


@pytest.mark.parametrize("rows,ok", [(20, True), (21, False)])
def test_every_path_agrees_on_the_limit(tmp_path, rows, ok):
    """Rows of 100 null vectors exceed their credit by 51,704 bytes each: a
    1 MiB reserve takes 20 of them, not 21, whatever the batches, blocks,
    threads or order; verify() says the same."""
    path = tmp_path / "av.row"
    with RowFileWriter(path, AV, block_size=64, threads=1) as w:
        w.write_rows(_av_rows([100] * rows))
    calls = {
        "read": lambda r: r.read(),
        "take": lambda r: r.take(list(range(rows - 1, -1, -1))),
        "iter_batches": lambda r: list(r.iter_batches(batch_size=3, readahead=2)),
        "selection": lambda r: r.read(selection=range(rows)),
    }
    for threads in (1, 2):
        with RowFileReader(path, AV, threads=threads, max_row_size=1 << 20) as r:
            assert r.num_blocks > 3
            for name, call in calls.items():
                if ok:
                    call(r)
                else:
                    with pytest.raises(LimitExceededError, match="one read allows"):
                        call(r)
    assert verify(path, AV, max_row_size=1 << 20).ok == ok


def test_a_failing_row_gives_back_what_it_drew(tmp_path):
    """A row past max_row_size fails after drawing most of the reserve; the
    rows after it must still get all of it (verify goes on past the row)."""
    path = tmp_path / "back.row"
    with RowFileWriter(path, AV, threads=1) as w:
        w.write_rows(_av_rows([2100] + [100] * 20))     # 1.08 MB, then 20 x 51 KB
    report = verify(path, AV, max_row_size=1 << 20)
    assert [(p.kind, p.row) for p in report.problems] == [("limit", 0)], str(report)
    assert "max_row_size=1048576 bytes of Arrow placeholders" in report.problems[0].message
    with RowFileReader(path, AV, max_row_size=1 << 20) as r:
        assert r.read(selection=range(1, 21)).num_rows == 20


def test_rows_after_a_bad_string_give_back_what_they_drew(tmp_path):
    """Strings are checked as UTF-8 once per decode, after the rows: when the
    first row's string is bad, the rows decoded after it give their draws
    back, and verify, going on from the next row, finds no limit problem."""
    s = schema("s STRING, av ARRAY<VECTOR<DOUBLE, 64>>")
    nulls = varint(100) + b"\xff" * 12 + b"\x0f"
    rows = [b"\x00" + varint(1) + b"\xff" + nulls] + [b"\x00" + varint(2) + b"ok" + nulls] * 19
    data = row_file([rows])
    report = verify(io.BytesIO(data), s, max_row_size=1 << 20)
    assert [(p.kind, p.row, p.column) for p in report.problems] == [("row", 0, "s")], str(report)


# -- the decoder API -----------------------------------------------------------

def test_reserve_is_shared_by_decoders_and_per_batch_without_one():
    s = schema("v VECTOR<BIGINT, 100000>")          # 812,500 bytes per null
    blk = _rowcodec.Block(block([b"\x01"] * 3))
    decoders = [_rowcodec.RowDecoder(s, (0,), to_arrow_schema(s)) for _ in range(2)]
    for d in decoders:
        d.max_row_size = 1 << 20                    # credit: 16 x 5 + 1 KiB per row
    reserve = _rowcodec.Reserve(2 << 20)
    decoders[0].decode(blk, None, 0, 2, reserve)      # two rows: ~1.6 MB of the 2 MiB
    assert 0 < reserve.remaining < 600_000
    with pytest.raises(LimitExceededError, match="one read allows"):
        decoders[1].decode(blk, None, 2, 3, reserve)
    assert reserve.remaining > 0                   # the failed row gave its draw back
    assert decoders[0].finish().num_rows == 2
    # no reserve: each batch (until finish) has max_row_size of its own
    d = decoders[1]
    d.decode(blk, None, 0, 1)
    with pytest.raises(LimitExceededError):
        d.decode(blk, None, 1, 2)
    d.decode(blk, None, 0, 1)
    assert d.finish().num_rows == 1
    d.decode(blk, None, 1, 2)
    assert d.finish().num_rows == 1
    d.max_row_size = 0                              # no limit at all
    d.decode(blk)
    assert d.finish().num_rows == 3


def test_a_take_of_blocks_declaring_more_than_memory_is_taken_in_rounds(tmp_path):
    """16 blocks of 7.8 KB that declare 240 MiB each (3.75 GiB together, each
    within max_block_size and what a frame of 7.8 KB could hold): a 128-row
    take under a 1 GiB address space decompresses them in rounds of
    TAKE_BUDGET, and the first round finds block 0 corrupt, where allocating
    every block up front raised a bare MemoryError."""
    comp, starts = [7800] * 16, np.arange(0, 1600, 100)
    body = bytes(sum(comp))
    index = BlockIndex(np.array(comp, np.int64), np.full(16, 240 << 20, np.int64),
                       starts.astype(np.int64)).to_bytes()
    data = body + index + Footer(1600, 16, len(body), len(index)).to_bytes()
    result = run_capped(tmp_path, data, """
        import numpy as np
        r = RowFileReader(path, "id BIGINT", threads=2)
        attempt("take", lambda: r.take(np.arange(0, 1600, 12.5).astype(np.int64)))
    """)
    assert result["take"].startswith("CorruptFileError: ") and "f.row: block 0: " in result["take"], \
        result
    assert_small(result)


def test_takes_in_rounds_return_the_rows_asked(tmp_path, monkeypatch):
    from rowformat.row import scatter as scatter_module
    path = tmp_path / "r.row"
    with RowFileWriter(path, "id BIGINT, s STRING", block_size=512) as w:
        w.write_rows([(i, f"s{i}") for i in range(5000)])
    rows = np.random.default_rng(3).integers(0, 5000, 300)
    with RowFileReader(path, "id BIGINT, s STRING", cache_bytes=0) as r:
        want = r.take(rows)
        monkeypatch.setattr(scatter_module, "TAKE_BUDGET", 4 * 512)     # rounds of ~4 blocks
        blocks = r._block_of(rows)
        heads, which = np.unique(blocks, return_inverse=True)
        index = r.block_index
        assert len(scatter_module._rounds(index.uncompressed_sizes[heads],
                                          np.diff(np.append(index.row_starts, 5000))[heads],
                                          which)) > 10
        assert r.take(rows).equals(want)
        assert r.take(rows).column("id").to_pylist() == rows.tolist()
