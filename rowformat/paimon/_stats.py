"""The value statistics of a ``.row`` data file, as Paimon Java stores them in
the manifest (``_VALUE_STATS``, ``_VALUE_STATS_COLS``), for the table's options.

Paimon Java collects a file's statistics per record for formats without
footer statistics (``SimpleStatsCollector``), one collector per column chosen
by ``StatsCollectorFactories.createStatsFactories``:

* ``fields.<name>.stats-mode`` first; else a system field (``_KEY_*``,
  ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, ``_ROW_ID``, ...) gets
  ``truncate(128)``; else, past ``metadata.stats-keep-first-n-columns``
  counted columns, ``none``; else ``metadata.stats-mode`` (Java's default
  ``truncate(16)``: where the option is unset, this is the mode, whatever
  pypaimon's own default of ``none``). A primary-key table's level-0 files
  take ``metadata.stats-mode.per.level``'s entry for level 0 when it has one.
* ``none``: nothing; ``counts``: the null count; ``full``: null count, min
  and max; ``truncate(N)``: the same, strings cut to N code points and
  binaries to N bytes, the max rounded up so it still bounds (its last code
  point or byte that can be incremented is, and what follows is cut; when
  none can, the column keeps its null count only). Only values Java orders
  (``Comparable`` or ``byte[]``) get a min/max: nested types, VARIANT and
  BLOB keep their null count. One departure: a FLOAT/DOUBLE column holding a
  NaN keeps its null count only (Java's max would be NaN, which pypaimon's
  planner misreads: :func:`_nan`).

The rowformat encoder collects null counts and exact min/max in C while it
encodes (``BlockEncoder(stats=...)``); this module chooses the modes, cuts the
strings and stores the result as ``SimpleStatsConverter`` does: BinaryRows of
the kept columns (every field nullable; with ``metadata.stats-dense-store``,
Java's default, ``none`` columns are left out and the kept ones named in
``_VALUE_STATS_COLS``, which is null when every column is kept).

Paimon Java itself (master, 2026-08) writes no value statistics for ``.row``
files: ``RowFileFormat`` has no stats extractor and only Avro takes the
per-record collector. What is written here is what Java's collector gives
for the table's options; every engine reads and prunes by it.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from ..datatypes import DataType, DecimalType, TimestampType
from ..errors import TableOptionError
from ._table_options import bool_option, int_option

STATS_MODE = "metadata.stats-mode"
KEEP_FIRST_N = "metadata.stats-keep-first-n-columns"
DENSE_STORE = "metadata.stats-dense-store"
PER_LEVEL = "metadata.stats-mode.per.level"
JAVA_DEFAULT_MODE = "truncate(16)"
SYSTEM_FIELD_MODE = "truncate(128)"

# SpecialFields.isSystemField (paimon-api): these names, and every _KEY_ field
SYSTEM_FIELDS = frozenset({"_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID"})
KEY_PREFIX = "_KEY_"

# the BlockEncoder's per-column modes
ENCODE_NONE, ENCODE_COUNTS, ENCODE_MINMAX = 0, 1, 2

_TRUNCATE = re.compile(r"TRUNCATE\((\d+)\)")
_INT32_MAX = (1 << 31) - 1
_ORDERED = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
                      "DECIMAL", "CHAR", "VARCHAR", "BINARY", "VARBINARY", "DATE", "TIME",
                      "TIMESTAMP", "TIMESTAMP_LTZ"})


@dataclass(frozen=True)
class Mode:
    """One column's stats mode: ``kind`` is none, counts, full or truncate
    (``length`` code points or bytes)."""
    kind: str
    length: int = 0

    @property
    def encode(self) -> int:
        return {"none": ENCODE_NONE, "counts": ENCODE_COUNTS}.get(self.kind, ENCODE_MINMAX)


def parse_mode(text: str, option: str) -> Mode:
    """``SimpleColStatsCollector.from``: none, counts, full or truncate(N),
    any case, N from 1 to 2^31 - 1; anything else is a TableOptionError."""
    upper = str(text).upper()
    if upper in ("NONE", "COUNTS", "FULL"):
        return Mode(upper.lower())
    m = _TRUNCATE.fullmatch(upper)
    if m and 0 < int(m.group(1)) <= _INT32_MAX:
        return Mode("truncate", int(m.group(1)))
    raise TableOptionError(f"table option {option!r} = {text!r}: expected none, counts, full "
                           f"or truncate(N) with N from 1 to {_INT32_MAX}")


def is_system_field(name: str) -> bool:
    return name.startswith(KEY_PREFIX) or name in SYSTEM_FIELDS


def dense_store(options: Mapping[str, str]) -> bool:
    return bool_option(options, DENSE_STORE, True)


def table_mode(options: Mapping[str, str], level0: bool) -> Mode:
    """The table-wide mode of a file: ``metadata.stats-mode`` (Java's
    default truncate(16) when unset), or for a primary-key table's level-0
    file the level-0 entry of ``metadata.stats-mode.per.level``."""
    mode, option = options.get(STATS_MODE, JAVA_DEFAULT_MODE), STATS_MODE
    per_level = options.get(PER_LEVEL)
    if level0 and per_level:
        for item in str(per_level).split(","):
            level, sep, value = item.partition(":")
            if not sep or not level.strip().lstrip("-").isdigit():
                raise TableOptionError(f"table option {PER_LEVEL!r} = {per_level!r}: expected "
                                       f"entries level:mode, e.g. '0:none,1:full'")
            if int(level.strip()) == 0:
                mode, option = value.strip(), PER_LEVEL
    return parse_mode(mode, option)


def column_modes(options: Mapping[str, str], names: Sequence[str], *,
                 level0: bool = False) -> list[Mode]:
    """The mode of each of ``names`` (a file's columns, in order), as
    ``createStatsFactories`` chooses it."""
    base_mode = table_mode(options, level0)
    keep_first = int_option(options, KEEP_FIRST_N, -1)
    modes, counted = [], 0
    for name in names:
        key = f"fields.{name}.stats-mode"
        if key in options:
            modes.append(parse_mode(options[key], key))
            counted += 1
        elif is_system_field(name):
            modes.append(parse_mode(SYSTEM_FIELD_MODE, STATS_MODE))
        elif 0 <= keep_first <= counted:
            modes.append(Mode("none"))
            counted += 1
        else:
            modes.append(base_mode)
            counted += 1
    return modes


def check_options(options: Mapping[str, str]) -> None:
    """Raises TableOptionError for a stats option Java would refuse (before
    any file is written): every mode, ``metadata.stats-keep-first-n-columns``,
    ``metadata.stats-dense-store`` and ``metadata.stats-mode.per.level``."""
    table_mode(options, True)
    int_option(options, KEEP_FIRST_N, -1)
    dense_store(options)
    for key, value in options.items():
        if key.startswith("fields.") and key.endswith(".stats-mode"):
            parse_mode(value, key)


def orders(t: DataType) -> bool:
    """Whether Java keeps a min/max of values of ``t``."""
    return t.root in _ORDERED


# -- truncation (TruncateSimpleColStatsCollector) ----------------------------

def truncate_min(value: bytes, n: int, is_string: bool) -> bytes:
    if not is_string:
        return value[:n]
    return _utf8_prefix(value, n)


def truncate_max(value: bytes, n: int, is_string: bool) -> Optional[bytes]:
    """The least value of at most ``n`` code points (bytes) that is not
    below ``value``, as Java rounds; None when there is none."""
    if not is_string:
        if len(value) <= n:
            return value
        cut = bytearray(value[:n])
        for i in range(n - 1, -1, -1):
            if cut[i] != 0xFF:
                cut[i] += 1
                return bytes(cut[:i + 1])
        return None
    prefix = _utf8_prefix(value, n)
    if len(prefix) == len(value):
        return value
    points = prefix.decode("utf-8")
    for i in range(len(points) - 1, -1, -1):
        nxt = ord(points[i]) + 1
        if nxt == 0xD800:               # UTF-8 holds no surrogate: the next code point
            nxt = 0xE000
        if nxt <= 0x10FFFF:
            return (points[:i] + chr(nxt)).encode("utf-8")
    return None


def _utf8_prefix(value: bytes, n: int) -> bytes:
    """The first ``n`` code points of UTF-8 ``value`` (BinaryString.substring)."""
    if len(value) <= n:
        return value
    seen = 0
    for i, b in enumerate(value):
        if b & 0xC0 != 0x80:
            if seen == n:
                return value[:i]
            seen += 1
    return value


# -- the stored form (SimpleStatsConverter, BinaryRowWriter) ----------------

def _compact(t: DataType) -> bool:
    """Whether a value of ``t`` fits its BinaryRow slot (Decimal.isCompact,
    Timestamp.isCompact)."""
    if isinstance(t, DecimalType):
        return t.precision <= 18
    if isinstance(t, TimestampType):
        return t.precision <= 3
    return True


_SLOT = {"BOOLEAN": "<B", "TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "DATE": "<i",
         "TIME": "<i", "BIGINT": "<q", "FLOAT": "<I", "DOUBLE": "<Q", "DECIMAL": "<q",
         "TIMESTAMP": "<q", "TIMESTAMP_LTZ": "<q"}


def binary_row(types: Sequence[DataType], values: Sequence[Any]) -> bytes:
    """Java's ``serializeBinaryRow`` of a row of ``values`` (the encoder's
    internal forms, None for null) over ``types``: a 4-byte big-endian arity,
    then the BinaryRow (row kind INSERT, null bits, 8-byte slots, the
    variable part in 8-byte words). As Java's writer, a null DECIMAL(p > 18)
    keeps 16 zero bytes and a null TIMESTAMP(p > 3) 8 in the variable part."""
    arity = len(types)
    null_bytes = ((arity + 63 + 8) // 64) * 8
    fixed = bytearray(null_bytes + 8 * arity)
    var = bytearray()
    for i, (t, v) in enumerate(zip(types, values)):
        slot = null_bytes + 8 * i
        cursor = len(fixed) + len(var)
        if v is None:
            fixed[(i + 8) >> 3] |= 1 << ((i + 8) & 7)
            if not _compact(t):
                var += bytes(16 if t.root == "DECIMAL" else 8)
                struct.pack_into("<q", fixed, slot, cursor << 32)
            continue
        root = t.root
        if root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY") or (root == "DECIMAL"
                                                                 and not _compact(t)):
            data = bytes(v)
            if root == "DECIMAL":
                var += data + bytes(16 - len(data))
                struct.pack_into("<q", fixed, slot, (cursor << 32) | len(data))
            elif len(data) <= 7:
                fixed[slot:slot + len(data)] = data
                fixed[slot + 7] = 0x80 | len(data)
            else:
                var += data + bytes(-len(data) % 8)
                struct.pack_into("<q", fixed, slot, (cursor << 32) | len(data))
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ") and not _compact(t):
            millis, nanos = v
            var += struct.pack("<q", millis)
            struct.pack_into("<q", fixed, slot, (cursor << 32) | nanos)
        else:
            struct.pack_into(_SLOT[root], fixed, slot, v)
    return struct.pack(">i", arity) + bytes(fixed) + bytes(var)


@dataclass
class FileStats:
    """A data file's value statistics as the manifest stores them."""
    min_values: bytes           # serialized BinaryRows of the kept columns
    max_values: bytes
    null_counts: list           # one per kept column (None: no count)
    columns: Optional[list]     # _VALUE_STATS_COLS: None when every column is kept
    kept: list                  # indices (into the columns given) of the kept columns


def _nan(t: DataType, bits: Any) -> bool:
    """Whether the greatest FLOAT/DOUBLE (its raw bits) is a NaN. Java orders
    NaN above every number, so its collector's max would be NaN; pypaimon's
    planner compares stats as Python floats, where every comparison with NaN
    is false, and would skip files holding matching rows (``f > 5`` with
    max NaN). Such a column keeps its null count only: no min/max is a bound
    every reader reads right."""
    if bits is None or t.root not in ("FLOAT", "DOUBLE"):
        return False
    if t.root == "FLOAT":
        return (bits & 0x7F800000) == 0x7F800000 and bool(bits & 0x007FFFFF)
    return (bits & 0x7FF0000000000000) == 0x7FF0000000000000 and bool(bits & 0x000FFFFFFFFFFFFF)


def file_stats(types: Sequence[DataType], names: Sequence[str], modes: Sequence[Mode],
               raw: Sequence[Any], dense: bool) -> FileStats:
    """The stored statistics of columns ``names`` (types ``types``, modes
    ``modes``) from the encoder's ``raw`` statistics of the same columns."""
    mins, maxs, counts, kept = [], [], [], []
    for i, (t, mode, r) in enumerate(zip(types, modes, raw)):
        lo = hi = count = None
        if mode.kind != "none" and r is not None:
            count, lo, hi = r
            if mode.kind == "counts" or not orders(t) or _nan(t, hi):
                lo = hi = None
            elif mode.kind == "truncate" and lo is not None and t.root in (
                    "CHAR", "VARCHAR", "BINARY", "VARBINARY"):
                is_string = t.root in ("CHAR", "VARCHAR")
                hi = truncate_max(hi, mode.length, is_string)
                lo = truncate_min(lo, mode.length, is_string) if hi is not None else None
        if mode.kind == "none" and dense:
            continue
        kept.append(i)
        mins.append(lo)
        maxs.append(hi)
        counts.append(count)
    kept_types = [types[i] for i in kept]
    columns = None if len(kept) == len(names) else [names[i] for i in kept]
    return FileStats(binary_row(kept_types, mins), binary_row(kept_types, maxs), counts,
                     columns, kept)
