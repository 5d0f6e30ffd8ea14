"""What ``rowformat convert`` reads: an :class:`InputTable` is one input
file opened in any of the formats (``.row``, Parquet, Arrow IPC file or
stream, CSV, JSON lines) as its Paimon schema, its Arrow schema and an
iterator of record batches, so that convert streams it without holding the
whole file. (Not to be confused with :class:`rowformat.source.Source`, the
byte source under the readers.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .exit_codes import InputError, UsageError
from .formats import stored_schema
from .output import csv_check


@dataclass
class InputTable:
    """One input of convert, open: close() closes the file under it."""
    schema: Any                      # RowType
    arrow_schema: Any                # pa.Schema the batches have
    total: int | None                # rows, when the format tells before reading them
    batches: Iterator[Any]
    close: Callable[[], None]


def _open_binary(path: str, storage_options: dict | None):
    from ..io import fileio
    return fileio.open_file(path, storage_options=storage_options, stream=True)


def open_input_table(path: str, fmt: str, schema, batch_size: int,
                     threads: int | None, storage_options: dict | None = None) -> InputTable:
    """``path`` in the format ``fmt``, read as ``schema`` (``--schema``, None
    for none), in batches of about ``batch_size`` rows."""
    if fmt == "row":
        from ..row.reader import RowFileReader
        if schema is None:
            raise UsageError(f"{path}: a .row file stores no schema: give --schema")
        r = RowFileReader(path, schema, threads=threads, storage_options=storage_options)
        return InputTable(r.schema, r.arrow_schema, r.num_rows,
                          r.iter_batches(batch_size=batch_size), r.close)
    f = _open_binary(path, storage_options)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq
            pf = pq.ParquetFile(f)
            arrow = pf.schema_arrow
            return InputTable(stored_schema(arrow, schema), arrow, pf.metadata.num_rows,
                              pf.iter_batches(batch_size=batch_size), f.close)
        if fmt in ("arrow", "arrows"):
            import pyarrow.ipc as ipc
            if fmt == "arrow":
                fr = ipc.open_file(f)
                batches: Iterator[Any] = (fr.get_batch(i) for i in range(fr.num_record_batches))
                arrow = fr.schema
            else:
                sr = ipc.open_stream(f)
                batches, arrow = iter(sr), sr.schema
            return InputTable(stored_schema(arrow, schema), arrow, None, batches, f.close)
        if fmt == "csv":
            return _csv_input(f, schema)
        if fmt == "jsonl":
            return _jsonl_input(f, schema, batch_size)
    except BaseException:
        f.close()
        raise
    raise UsageError(f"unknown format {fmt!r}")


def _csv_input(f, schema) -> InputTable:
    import pyarrow.csv as pacsv
    from . import textio
    from ..arrow_types import from_arrow_schema, to_arrow_schema
    read = pacsv.ReadOptions(block_size=1 << 22)
    if schema is None:
        # Empty unquoted fields are null; "" is the empty string.
        conv = pacsv.ConvertOptions(null_values=[""], strings_can_be_null=True,
                                    quoted_strings_can_be_null=False)
        reader = pacsv.open_csv(f, read_options=read, convert_options=conv)
        arrow = reader.schema
        return InputTable(from_arrow_schema(arrow), arrow, None, (b for b in reader), f.close)
    arrow = to_arrow_schema(schema)
    csv_check(arrow)
    text = textio.text_schema(arrow)
    conv = pacsv.ConvertOptions(column_types={fl.name: fl.type for fl in text},
                                include_columns=text.names, null_values=[""],
                                strings_can_be_null=True, quoted_strings_can_be_null=False)
    reader = pacsv.open_csv(f, read_options=read, convert_options=conv)
    return InputTable(schema, arrow, None,
                      (textio.batch_from_text(b, arrow) for b in reader), f.close)


def _jsonl_input(f, schema, batch_size: int) -> InputTable:
    import io
    import pyarrow.json as pajson
    from . import textio
    from ..arrow_types import from_arrow_schema, to_arrow_schema
    if schema is None:
        table = pajson.read_json(f)
        return InputTable(from_arrow_schema(table.schema), table.schema, table.num_rows,
                          iter(table.to_batches(max_chunksize=batch_size)), f.close)
    arrow = to_arrow_schema(schema)
    text = io.TextIOWrapper(f, encoding="utf-8")

    def convert(chunk, first):
        try:
            return textio.batch_from_json(chunk, arrow, first)
        except (ValueError, TypeError, OverflowError) as e:
            raise InputError(f"{getattr(f, 'name', 'input')}: {e}") from None

    def batches() -> Iterator[Any]:
        chunk: list[str] = []
        first = 1
        for n, line in enumerate(text, 1):
            chunk.append(line)
            if len(chunk) >= batch_size:
                yield convert(chunk, first)
                chunk, first = [], n + 1
        if chunk:
            yield convert(chunk, first)
    return InputTable(schema, arrow, None, batches(), text.close)
