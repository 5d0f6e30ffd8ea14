"""BlobFileReader: random access to the rows of a Paimon ``.blob`` file.

Opening reads the footer and the row index (two reads) and checks them as
Paimon Java does. A row is then one index lookup and one read of its entry;
``open`` streams a payload without reading it whole.

Paimon Java and pypaimon never check an entry's magic, stored length or CRC
on read; this reader does by default (as paimon-rust does). pypaimon before
2.1.0 wrote BLOB and ARRAY<BLOB> entries whose CRC leaves out the 8-byte
length field: ``legacy_crc=True`` accepts that CRC as well. ``verify=False``
skips the entry checks (the index and nested structure are always checked).
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterator

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError, ValueConversionError
from ..io.source import Source
from ..row_numbers import as_rows, row_number
from .descriptor import BlobDescriptor
from .kind import PLACEHOLDER, BlobPlaceholder, resolve_blob_type
from .meta import ENTRY_OVERHEAD, MAGIC_BYTES, NULL_LENGTH, BlobIndex
from .payload import PayloadError, array_layout, map_layout, slices
from .stream import DEFAULT_READ, RangeStream

SMALL_ENTRY = 1 << 20        # open() reads entries up to this size whole and verifies them at once
COALESCE = 8 << 20           # read() merges adjacent entries into reads of up to this size


class BlobFileReader:
    """Reads a ``.blob`` file of one BLOB, ARRAY<BLOB> or MAP<K, BLOB> column.

    ``blob_type`` is type text or a DataType (the file does not store it).
    ``column`` names the column of the Tables ``read`` and ``take`` return.
    A reader may be shared by threads (reads are positional). A URL (with
    ``filesystem`` and ``storage_options`` as for RowFileReader) is read with
    ranged requests.
    """

    def __init__(self, path_or_file, blob_type, *, verify: bool = True, legacy_crc: bool = False,
                 column: str = "blob", filesystem=None, storage_options: dict | None = None):
        self.kind = resolve_blob_type(blob_type)
        self.verify = verify
        self.legacy_crc = legacy_crc and self.kind.kind != "MAP"   # MAP CRCs were always right
        self.column = column
        self._source = Source(path_or_file, False, filesystem, storage_options)
        self.name = self._source.name
        self._closed = False
        try:
            self.index = BlobIndex.read(self._source)
        except BaseException:
            self._source.close()
            raise
        self._lengths = self.index.lengths
        self._offsets = self.index.offsets

    # -- metadata ------------------------------------------------------------------
    @property
    def num_rows(self) -> int:
        return len(self._lengths)

    def __len__(self) -> int:
        return self.num_rows

    def __repr__(self):
        return f"<BlobFileReader {self.name!r}: {self.num_rows} rows of {self.kind}>"

    def null_rows(self) -> np.ndarray:
        return np.flatnonzero(self._lengths == NULL_LENGTH)

    def placeholder_rows(self) -> np.ndarray:
        """Rows whose value lives in an older blob file (Arrow output shows them as null)."""
        return np.flatnonzero(self._lengths == -2)

    def _row(self, i) -> int:
        return row_number(i, self.num_rows, self.name)

    def _read(self, offset: int, length: int) -> bytes:
        if self._closed:
            raise ValueError(f"{self.name}: the reader is closed")
        return self._source.read(offset, length)

    # -- entry checks -----------------------------------------------------------------
    def _fail(self, i: int, message: str) -> CorruptFileError:
        return CorruptFileError(f"{self.name}: row {i} (entry at offset {int(self._offsets[i])}, "
                                f"{int(self._lengths[i])} bytes): {message}")

    def _check_frame(self, i: int, head: bytes, stored_length: bytes):
        if head != MAGIC_BYTES:
            raise self._fail(i, f"expected entry magic {MAGIC_BYTES.hex()}, found {bytes(head).hex()}")
        (stored,) = struct.unpack("<q", stored_length)
        if stored != int(self._lengths[i]):
            raise self._fail(i, f"the entry stores length {stored}, the index says "
                                f"{int(self._lengths[i])}")

    def _check_crc(self, i: int, crc_before_length: int, length_bytes: bytes, stored: bytes):
        (expected,) = struct.unpack("<I", stored)
        crc = zlib.crc32(length_bytes, crc_before_length)
        if crc == expected or (self.legacy_crc and crc_before_length == expected):
            return
        legacy = " (nor the pre-2.1.0 pypaimon CRC)" if self.legacy_crc else ""
        raise self._fail(i, f"CRC32 mismatch: stored {expected:#010x}, computed {crc:#010x}{legacy}")

    def _verify(self, i: int, entry) -> None:
        if self.verify:
            self._check_frame(i, entry[:4], entry[-12:-4])
            self._check_crc(i, zlib.crc32(entry[:-12]), entry[-12:-4], entry[-4:])

    def _entry(self, i: int) -> memoryview:
        entry = memoryview(self._read(int(self._offsets[i]), int(self._lengths[i])))
        self._verify(i, entry)
        return entry

    # -- values ---------------------------------------------------------------------
    def _decode(self, i: int, entry: memoryview):
        payload = entry[4:-12]
        if self.kind.kind == "BLOB":
            return bytes(payload)
        keys, offsets, lengths = self._layout(i, lambda o, n: payload[o:o + n], len(payload))
        values = slices(payload, offsets, lengths)
        return values if keys is None else dict(zip(keys, values))

    def _layout(self, i: int, read, payload_length: int):
        """(keys, offsets, lengths) of the elements of ARRAY or MAP row ``i``
        (keys None for an ARRAY), offsets relative to the payload, reading
        only the nested header and indexes through ``read``."""
        try:
            if self.kind.kind == "ARRAY":
                return (None, *array_layout(read, payload_length))
            return map_layout(read, payload_length, self.kind.keys)
        except PayloadError as e:
            raise self._fail(i, str(e)) from None

    def get(self, i: int):
        """Row ``i``: bytes (BLOB), a list (ARRAY) or dict (MAP) of bytes and
        None, None for a null row, or PLACEHOLDER. Negative ``i`` counts from
        the end. Reads that row's entry only."""
        i = self._row(i)
        length = int(self._lengths[i])
        if length < 0:
            return None if length == NULL_LENGTH else PLACEHOLDER
        return self._decode(i, self._entry(i))

    def __getitem__(self, i: int):
        return self.get(i)

    def __iter__(self) -> Iterator:
        for _, value in self._values(np.arange(self.num_rows)):
            yield value

    # -- streams and descriptors --------------------------------------------------------
    def _element_range(self, i: int, element, read, payload_length: int):
        """(offset, length) relative to the payload of the whole payload
        (``element`` None, BLOB rows) or of one element (ARRAY: an index, MAP:
        a key), reading only the nested header and indexes through ``read``;
        None for a null element."""
        if element is None:
            if self.kind.kind != "BLOB":
                raise TypeError(f"{self.name} holds {self.kind}: name the element to open "
                                f"(an ARRAY index or a MAP key)")
            return 0, payload_length
        if self.kind.kind == "BLOB":
            raise TypeError(f"{self.name} holds BLOB rows, which have no elements")
        keys, offsets, lengths = self._layout(i, read, payload_length)
        if keys is None:
            j = int(element)
            if not -len(lengths) <= j < len(lengths):
                raise IndexError(f"{self.name}: row {i} has {len(lengths)} elements, not {element}")
        else:
            if element not in keys:
                raise KeyError(f"{self.name}: row {i} has no key {element!r}")
            j = keys.index(element)
        if lengths[j] < 0:
            return None
        return int(offsets[j]), int(lengths[j])

    def descriptor(self, i: int, element=None) -> BlobDescriptor | BlobPlaceholder | None:
        """A descriptor of row ``i``'s blob (or one element) inside this file,
        as Paimon returns with ``blob-as-descriptor``; None for a null row or
        element, PLACEHOLDER for a placeholder row."""
        i = self._row(i)
        if self._lengths[i] < 0:
            return None if self._lengths[i] == NULL_LENGTH else PLACEHOLDER
        start = int(self._offsets[i]) + 4
        r = self._element_range(i, element, lambda o, n: self._read(start + o, n),
                                int(self._lengths[i]) - ENTRY_OVERHEAD)
        return None if r is None else BlobDescriptor(self.name, start + r[0], r[1])

    def element_descriptors(self, i: int):
        """Descriptors of every element of ARRAY or MAP row ``i``: a list, or
        a dict by key, with None for a null element; None for a null row,
        PLACEHOLDER for a placeholder row. Reads only the nested header and
        indexes (one layout walk for all elements, where ``descriptor(i, e)``
        walks it once per element)."""
        i = self._row(i)
        if self.kind.kind == "BLOB":
            raise TypeError(f"{self.name} holds BLOB rows, which have no elements")
        if self._lengths[i] < 0:
            return None if self._lengths[i] == NULL_LENGTH else PLACEHOLDER
        start = int(self._offsets[i]) + 4
        keys, offsets, lengths = self._layout(i, lambda o, n: self._read(start + o, n),
                                              int(self._lengths[i]) - ENTRY_OVERHEAD)
        values = [None if n < 0 else BlobDescriptor(self.name, start + o, n)
                  for o, n in zip(offsets.tolist(), lengths.tolist())]
        return values if keys is None else dict(zip(keys, values))

    def open(self, i: int, element=None) -> RangeStream | BlobPlaceholder | None:
        """A read-only binary file object over row ``i``'s payload (BLOB) or
        one element of it (ARRAY: an index; MAP: a key); None for a null row or
        element, PLACEHOLDER for a placeholder row. Nothing else of the file
        is read. Entries up to SMALL_ENTRY bytes are read and verified whole;
        a larger payload read front to back is CRC-checked as it streams and
        a corrupt one raises at its end (elements of large nested entries get
        the frame checks only: their CRC covers the whole entry)."""
        i = self._row(i)
        entry_at, entry_length = int(self._offsets[i]), int(self._lengths[i])
        if entry_length < 0:
            return None if entry_length == NULL_LENGTH else PLACEHOLDER
        name = f"{self.name}[{i}]"
        if entry_length <= SMALL_ENTRY:
            payload = self._entry(i)[4:-12]
            r = self._element_range(i, element, lambda o, n: payload[o:o + n], len(payload))
            if r is None:
                return None
            return RangeStream(lambda o, n: bytes(payload[o:o + n]), r[0], r[1], name=name)
        start = entry_at + 4
        r = self._element_range(i, element, lambda o, n: self._read(start + o, n),
                                entry_length - ENTRY_OVERHEAD)
        if r is None:
            return None
        crc = finish = None
        if self.verify:
            head = self._read(entry_at, 4)
            tail = self._read(entry_at + entry_length - 12, 12)
            self._check_frame(i, head, tail[:8])
            if element is None:
                crc = zlib.crc32(head)
                finish = lambda c: self._check_crc(i, c, tail[:8], tail[8:])   # noqa: E731
        return RangeStream(self._read, start + r[0], r[1], name=name, crc=crc, finish=finish)

    # -- Arrow ------------------------------------------------------------------------
    def _runs(self, rows: np.ndarray) -> Iterator[tuple[list[int], int | None, int | None]]:
        """``rows`` in the order given, cut into runs whose entries are
        adjacent in the file, of up to COALESCE bytes each (a larger entry is
        a run of its own): (rows, start, end) with the run's byte range, None
        for a run of null and placeholder rows only, which take no bytes and
        so do not break a run."""
        run: list[int] = []
        start = end = None
        for r in rows.tolist():
            length = int(self._lengths[r])
            if length >= 0:
                o = int(self._offsets[r])
                if start is not None and (o != end or o + length - start > COALESCE):
                    yield run, start, end
                    run, start = [], None
                if start is None:
                    start = o
                end = o + length
            run.append(r)
        if run:
            yield run, start, end

    def _run_entries(self, rows: list[int], start: int | None, end: int | None):
        """(row, verified entry or None) of one run, read in one piece."""
        data = None if start is None or end is None else memoryview(self._read(start, end - start))
        for r in rows:
            length = int(self._lengths[r])
            if length < 0:
                yield r, None
                continue
            assert data is not None and start is not None   # a run with an entry has a range
            o = int(self._offsets[r]) - start
            entry = data[o:o + length]
            self._verify(r, entry)
            yield r, entry

    def _values(self, rows: np.ndarray) -> Iterator[tuple[int, object]]:
        """(row, value) for ``rows``, read run by run."""
        for run in self._runs(rows):
            for r, entry in self._run_entries(*run):
                if entry is None:
                    yield r, (None if self._lengths[r] == NULL_LENGTH else PLACEHOLDER)
                else:
                    yield r, self._decode(r, entry)

    def _blob_column(self, rows: np.ndarray) -> pa.Array:
        """BLOB ``rows`` (in the order given) as one large_binary array, the
        payloads copied straight into its data buffer: a run of entries is
        read whole and verified, an entry above COALESCE bytes is streamed in
        pieces and CRC-checked as it streams. So the peak is the array plus
        one run, where bytes values then ``pa.array`` held every payload
        three times over. Null and placeholder rows are null."""
        lengths = self._lengths[rows]
        valid = lengths >= 0
        ends = np.cumsum(np.where(valid, lengths - ENTRY_OVERHEAD, 0), dtype=np.int64)
        offsets = np.concatenate([np.zeros(1, np.int64), ends])
        data = np.empty(int(offsets[-1]), np.uint8)
        out = data.data
        k = 0                                  # output position of the run's first row
        for run, start, end in self._runs(rows):
            if start is not None and end is not None and end - start > COALESCE:
                for j, r in enumerate(run):
                    if self._lengths[r] >= 0:
                        self._stream_into(r, out[offsets[k + j]:offsets[k + j + 1]])
            else:
                for j, (r, entry) in enumerate(self._run_entries(run, start, end)):
                    if entry is not None:
                        out[offsets[k + j]:offsets[k + j + 1]] = entry[4:-12]
            k += len(run)
        n = len(rows)
        nulls = n - int(np.count_nonzero(valid))
        validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
        return pa.Array.from_buffers(pa.large_binary(), n,
                                     [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
                                     null_count=nulls)

    def _stream_into(self, i: int, out: memoryview) -> None:
        f = self.open(i)
        assert isinstance(f, RangeStream), "a row with an entry"
        with f:
            for at in range(0, len(out), DEFAULT_READ):
                f.readinto(out[at:at + DEFAULT_READ])

    def _table(self, column: pa.Array) -> pa.Table:
        field = pa.field(self.column, self.kind.arrow_type)
        return pa.Table.from_arrays([column], schema=pa.schema([field]))

    def _arrow(self, pairs) -> pa.Table:
        values = []
        for r, v in pairs:
            if v is PLACEHOLDER:
                v = None
            elif self.kind.kind == "MAP" and v is not None:
                if None in v:
                    raise ValueConversionError(f"{self.name}: row {r}: a MAP<X, BLOB> with a null "
                                               f"key cannot be represented in Arrow")
                v = list(v.items())
            values.append(v)
        return self._table(pa.array(values, type=self.kind.arrow_type))

    def read(self, selection=None) -> pa.Table:
        """The selected rows (a pyroaring BitMap or iterable of row numbers,
        None for all) in row order, as a one-column Table. Null and
        placeholder rows are null."""
        if selection is None:
            rows = np.arange(self.num_rows)
        else:
            rows = np.unique(as_rows(selection, self.num_rows, "selection", self.name))
        if self.kind.kind == "BLOB":
            return self._table(self._blob_column(rows))
        return self._arrow(self._values(rows))

    def take(self, rows) -> pa.Table:
        """The rows ``rows`` in the order given (duplicates allowed)."""
        rows = as_rows(rows, self.num_rows, "rows", self.name)
        if self.kind.kind == "BLOB":
            return self._table(self._blob_column(rows))
        unique, inverse = np.unique(rows, return_inverse=True)
        values = list(self._values(unique))
        return self._arrow(values[k] for k in inverse.ravel().tolist())

    # -- lifetime -------------------------------------------------------------------
    def close(self):
        self._closed = True
        self._source.close()

    def __enter__(self) -> "BlobFileReader":
        return self

    def __exit__(self, *exc):
        self.close()
