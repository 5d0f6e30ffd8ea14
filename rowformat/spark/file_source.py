"""Bare ``.row`` files through ``paimon-row`` (a file, or a directory of
them): the schema comes from the user, a Spark partition is a run of whole
blocks of one file, sized as Spark sizes file partitions (or by
``rowsPerPartition``). Files (and bitmap files) are local paths or URLs,
opened with the store's settings resolved on the driver. With pushdown on
(:class:`FilteringRowReader`), predicates on the row-number columns plan and
read only the files and blocks they name."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import LongType, StringType, StructField, StructType

from .. import RowFileReader
from ..io import fileio
from ..errors import DatasetError
from .. import datatypes
from .options import (
    Sources, file_options, flag, int_option, normalize_path, parse_paimon_schema, requested_fields,
)
from .sizing import PartitionSizing
from .spark_types import ArrowConverter, from_spark_schema, spark_arrow_schema
from .worker import SourceReader

FILE_COLUMN, ROW_COLUMN = "_file", "_row"
DEFAULT_BATCH_ROWS = 65536


def load_bitmap(path: str, settings: dict | None = None):
    """A pyroaring BitMap from a file (a local path or a URL, ``settings``
    its store's) holding a serialized RoaringBitmap (the portable format
    Java's RoaringBitmap and pyroaring share)."""
    from pyroaring import BitMap
    try:
        return BitMap.deserialize(fileio.read_bytes(path, file_options(path, settings or {})))
    except OSError as e:
        raise DatasetError(f"cannot read the bitmap file {path}: {e}") from None
    except Exception as e:  # pyroaring raises ValueError/RuntimeError on bad bytes
        raise DatasetError(f"{path} is not a serialized RoaringBitmap: {e}") from None


def row_number_fields() -> list[StructField]:
    return [StructField(FILE_COLUMN, StringType(), False), StructField(ROW_COLUMN, LongType(), False)]


@dataclass
class BlockRange(InputPartition):
    """Rows [start, stop) of one file: whole blocks, picklable plain fields;
    ``rows``, when given, the row-number intervals within them that pushed
    ``_row`` predicates allow (int64 pairs, half-open)."""
    path: str
    start: int
    stop: int
    selection: str | None
    deletion_vector: str | None
    rows: bytes | None = None


class RowReader(SourceReader):
    """Bare ``.row`` files: the schema comes from the user."""

    def __init__(self, options, schema: StructType, sources: Sources, sizing: PartitionSizing):
        self.with_row_numbers = flag(options, "rowNumbers")
        explicit = options.get("paimonschema")
        extra = (FILE_COLUMN, ROW_COLUMN) if self.with_row_numbers else ()
        if explicit is not None:
            file_schema = parse_paimon_schema(explicit)
        else:
            file_schema = from_spark_schema(StructType([f for f in schema.fields
                                                         if f.name not in extra]))
        data_fields = requested_fields(schema, file_schema, options,
                                        sources.describe(options), extra)
        self.spark_schema_json = schema.json()
        self.file_schema = str(file_schema)
        self.columns = [f.name for f in data_fields]
        self.files = sources.files
        self.storage_options = sources.storage_options
        # a row count, when given, instead of Spark's byte sizing
        self.rows_per_partition = int_option(options, "rowsperpartition", 1) \
            if options.get("rowsperpartition") is not None else None
        self.sizing = sizing
        self.batch_rows = int_option(options, "batchrows", DEFAULT_BATCH_ROWS)
        self.selections = self._bitmap_option(options, "selection")
        self.deletion_vectors = self._bitmap_option(options, "deletionvector")

    def _bitmap_option(self, options, key: str) -> dict[str, str]:
        """{data file path: bitmap file path} from a path (one file) or a
        JSON object keyed by file name or path."""
        value = options.get(key)
        if value is None:
            return {}
        if value.lstrip().startswith("{"):
            out = {}
            for name, bitmap in json.loads(value).items():
                matches = [f for f in self.files if f == normalize_path(name)
                           or f.rsplit("/", 1)[-1] == name or os.path.basename(f) == name]
                if not matches:
                    raise DatasetError(f"option {key}: {name!r} is not one of the files read")
                out[matches[0]] = normalize_path(bitmap)
            return out
        if len(self.files) != 1:
            raise ValueError(f"option {key}: a single bitmap path needs a single file, but "
                             f"{len(self.files)} are read; use a JSON object per file")
        return {self.files[0]: normalize_path(value)}

    partition_type = BlockRange

    def _block_runs(self, schema, paths: list[str]) -> list[tuple[str, list[int]]]:
        """Each file's path and the bounds of its partitions: the first row
        of each run of blocks, then the file's row count."""
        files = []
        for path in paths:
            with RowFileReader(path, schema, cache_bytes=0,
                               storage_options=file_options(path, self.storage_options)) as r:
                files.append((path, r.block_index.row_starts.tolist() + [r.num_rows],
                              r.block_index.compressed_sizes.tolist()))
        cost = self.sizing.open_cost
        target = self.sizing.split_bytes(sum(sum(sizes) + cost for _, _, sizes in files))
        out = []
        for path, starts, sizes in files:
            cuts, size, rows = [0], cost, 0
            for b in range(len(starts) - 1):
                n = starts[b + 1] - starts[b]
                full = rows + n > self.rows_per_partition if self.rows_per_partition \
                    else size + sizes[b] > target
                if full and b > cuts[-1]:
                    cuts.append(b)
                    size, rows = cost, 0
                size += sizes[b]
                rows += n
            out.append((path, [starts[c] for c in cuts] + [starts[-1]]))
        return out

    def plan(self):
        return self._plan(self.files, None)

    def _plan(self, files: list[str], ranges: np.ndarray | None) -> list[BlockRange]:
        """Each file's block runs that hold a row ``ranges`` allows (every
        row when None), the selection picks and the deletion vector keeps."""
        schema = datatypes.schema(self.file_schema)
        parts = []
        for path, bounds in self._block_runs(schema, files):
            selection = self.selections.get(path)
            vector = self.deletion_vectors.get(path)
            sel_bm = load_bitmap(selection, self.storage_options) if selection else None
            dv_bm = load_bitmap(vector, self.storage_options) if vector else None
            for lo, hi in zip(bounds, bounds[1:]):
                if lo == hi:
                    continue
                rows = None
                if ranges is not None:
                    clipped = np.clip(ranges, lo, hi)
                    clipped = clipped[clipped[:, 0] < clipped[:, 1]]
                    if not len(clipped):
                        continue          # no row the predicates allow
                    rows = clipped.tobytes()
                if sel_bm is not None and not sel_bm.range_cardinality(lo, hi):
                    continue              # nothing selected: the blocks are never read
                if dv_bm is not None and dv_bm.range_cardinality(lo, hi) == hi - lo:
                    continue
                parts.append(BlockRange(path, lo, hi, selection, vector, rows))
        return parts

    def read_partition(self, partition, target):
        from pyroaring import BitMap
        file_schema = datatypes.schema(self.file_schema)
        converter = ArrowConverter([(file_schema[c].type, target.field(c)) for c in self.columns])
        rows: range | BitMap = range(partition.start, partition.stop)   # whole blocks: no row list
        if partition.selection or partition.deletion_vector or partition.rows:
            rows = BitMap(rows)
            if partition.rows:
                allowed = BitMap()
                for a, b in np.frombuffer(partition.rows, np.int64).reshape(-1, 2):
                    allowed.add_range(int(a), int(b))
                rows &= allowed
            if partition.selection:
                rows &= load_bitmap(partition.selection, self.storage_options)
            if partition.deletion_vector:
                rows -= load_bitmap(partition.deletion_vector, self.storage_options)
        numbers = None
        if self.with_row_numbers:
            numbers = np.arange(rows.start, rows.stop, dtype=np.int64) if isinstance(rows, range) \
                else np.frombuffer(rows.to_array(), dtype=np.uint32)
        done = 0
        # The reader streams blocks once: no block cache needed.
        with RowFileReader(partition.path, file_schema, cache_bytes=0,
                           storage_options=file_options(partition.path,
                                                        self.storage_options)) as reader:
            for batch in reader.iter_batches(self.columns, rows, self.batch_rows):
                data = dict(zip(self.columns, converter.convert(batch.columns)))
                if numbers is not None:
                    n = batch.num_rows
                    data[FILE_COLUMN] = pa.repeat(pa.scalar(partition.path, pa.string()), n)
                    data[ROW_COLUMN] = pa.array(numbers[done:done + n].astype(np.int64))
                    done += n
                yield pa.RecordBatch.from_arrays([data[f.name] for f in target], schema=target)


class FilteringRowReader(RowReader):
    """Bare ``.row`` files read with Spark's filters (``pushFilters``, as for
    tables): ``_file = ...`` and ``_file IN (...)`` pick the files,
    comparisons and ``IN`` on ``_row`` the blocks and rows read (a point is
    one block read); the filters rowformat evaluates exactly as Spark are
    applied to the decoded batches and not handed back."""

    def __init__(self, options, schema: StructType, sources: Sources, sizing: PartitionSizing):
        super().__init__(options, schema, sources, sizing)
        self.filters: list = []
        self.evaluated: list = []

    def pushFilters(self, filters):      # driver side, before partitions()
        from .filters import split_evaluated
        batch_schema = spark_arrow_schema(StructType.fromJson(json.loads(self.spark_schema_json)))
        self.filters = list(filters)
        self.evaluated, back = split_evaluated(self.filters, batch_schema)
        return back                      # the ones Spark must still apply

    def plan(self):
        if not self.with_row_numbers:
            return super().plan()
        from .filters import row_id_ranges
        return self._plan(self._named_files(), row_id_ranges(self.filters, ROW_COLUMN))

    def _named_files(self) -> list[str]:
        """The files read: those ``_file`` equalities name, or all."""
        from pyspark.sql.datasource import EqualTo, In
        from .filters import column_of
        files = self.files
        for f in self.filters:
            if column_of(f) != FILE_COLUMN or not isinstance(f, (EqualTo, In)):
                continue
            named = set(f.value) if isinstance(f, In) else {f.value}
            files = [p for p in files if p in named]
        return files

    def read_partition(self, partition, target):
        from .filters import filtered
        yield from filtered(super().read_partition(partition, target), self.evaluated)
