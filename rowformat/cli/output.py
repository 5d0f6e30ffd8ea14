"""What the commands print: tables (drawn by ``rich`` on a terminal when it
is installed, plain aligned text otherwise), rows as JSON lines or CSV in
their exact text forms (:mod:`.textio`), and the progress bar ``convert``
shows on stderr. ``ROWFORMAT_NO_RICH=1`` turns ``rich`` off.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from collections import Counter
from typing import IO, Any, Iterator, Sequence

from .exit_codes import UsageError


def counted(n: int, noun: str) -> str:
    """``1 block``, ``2 blocks``: a count with its noun in number."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def printable(text: Any) -> str:
    """``text`` with every character that is not printable escaped as in a
    Python string literal (``\\n``, ``\\x1b``, ``\\u202e``): control characters,
    line and paragraph separators, format characters (bidirectional
    overrides) and undecodable bytes of a file name. Names and messages that
    come from files or a table's metadata go through it before they are
    printed, so they can neither start a line of their own (forging a result
    line) nor drive the terminal."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape",
                                                      "backslashreplace").decode("ascii")
                   for c in text)


def json_printable(line: str) -> str:
    """A line of JSON with every non-printable character that JSON leaves
    raw (C1 controls, line separators, format characters such as ``\\u202e``;
    JSON escapes C0 controls itself) escaped as ``\\uXXXX``: the same JSON
    value, keys and strings, with nothing that can drive a terminal."""
    if line.isprintable():
        return line
    return "".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in line)


def json_document(value: Any) -> str:
    """``value`` as the indented JSON text ``--json`` prints: NaN and the
    infinities (which a table's metadata may hold, and JSON has no words
    for) as null, so that any JSON parser reads it."""
    return json.dumps(_finite(value), indent=2, allow_nan=False) + "\n"


def _finite(v: Any) -> Any:
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def problem_line(p) -> str:
    """A verify problem as one printed line: where (block, row, column, or
    "file") and the message, escaped (:func:`printable`)."""
    where = ", ".join(f"{k} {v}" for k, v in (("block", p.block), ("row", p.row),
                                                ("column", p.column)) if v is not None)
    return printable(f"{where or 'file'}: {p.message}")


def columns_arg(values: Sequence[str] | None) -> list[str] | None:
    """The --columns options (each comma-separated) as one list; None for all."""
    if not values:
        return None
    out = [c.strip() for v in values for c in v.split(",") if c.strip()]
    return out or None


SAME_PROBLEM_SHOWN = 3


def problem_lines(problems: Sequence[Any], report: Any = None) -> Iterator[str]:
    """Verify problems as printed lines: a message that recurs (a wrong
    schema fails every row alike) is shown three times, then counted; a hint
    follows when ``report`` (the file's VerifyReport) suspects the schema."""
    seen: Counter[str] = Counter()
    for p in problems:
        seen[p.message] += 1
        if seen[p.message] <= SAME_PROBLEM_SHOWN:
            yield problem_line(p)
    for message, n in seen.items():
        if n > SAME_PROBLEM_SHOWN:
            yield printable(f"... and {n - SAME_PROBLEM_SHOWN} more rows: {message}")
    if report is not None and report.schema_suspect:
        yield (f"hint: {len(report.problems)} rows{' or more' if report.truncated else ''} do "
               f"not decode while the file's blocks are sound: the schema given is probably "
               f"not the one the file was written with")


def _cell(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False)


def _use_rich(stream: IO[str]) -> bool:
    if os.environ.get("ROWFORMAT_NO_RICH") or not stream.isatty():
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]], out: IO[str],
                *, right: Sequence[bool] | None = None, title: str | None = None) -> None:
    """A table: rich's on a terminal, plain aligned text otherwise."""
    right = right or [False] * len(header)
    header = [printable(h) for h in header]
    rows = [[printable(c) for c in row] for row in rows]
    if _use_rich(out):
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text
        table = Table(title=title, show_lines=False)
        for h, r in zip(header, right):
            table.add_column(Text(h), justify="right" if r else "left", overflow="fold")
        for row in rows:
            table.add_row(*(Text(c) for c in row))     # Text: no rich markup in cells
        Console(file=out).print(table)
        return
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def line(cells):
        return "  ".join((c.rjust(w) if r else c.ljust(w))
                         for c, w, r in zip(cells, widths, right)).rstrip()
    if title:
        out.write(title + "\n")
    out.write(line(header) + "\n")
    out.write(line(["-" * w for w in widths]) + "\n")
    for row in rows:
        out.write(line(row) + "\n")


def _numeric(t) -> bool:
    import pyarrow.types as pat
    return pat.is_integer(t) or pat.is_floating(t) or pat.is_decimal(t)


def csv_check(schema) -> None:
    """A :class:`UsageError` unless every column of the Arrow ``schema`` is flat."""
    from . import textio
    nested = [f"{f.name} ({f.type})" for f in schema if textio.is_nested(f.type)]
    if nested:
        raise UsageError(f"CSV holds no nested values: {', '.join(nested)}; select other "
                         f"--columns or use jsonl, parquet or arrow")


def csv_text(batch, header: bool) -> str:
    import io
    import pyarrow.csv as pacsv
    from . import textio
    csv_check(batch.schema)
    buf = io.BytesIO()
    text = textio.text_batch(batch)     # the header's names escaped as every printed name
    text = text.rename_columns([printable(n) for n in text.schema.names])
    pacsv.write_csv(text, buf,
                    write_options=pacsv.WriteOptions(include_header=header))
    return buf.getvalue().decode("utf-8")


class TextRows:
    """Writes batches to the text stream ``out`` as JSON lines or as CSV
    (``fmt`` "jsonl" or "csv"), each value in its exact text form; a CSV
    gets one header line, even when no batch comes (see :meth:`finish`)."""

    def __init__(self, fmt: str, out: IO[str]):
        self.fmt, self.out = fmt, out
        self._csv_header = False

    def write(self, batch) -> None:
        if self.fmt == "jsonl":
            from . import textio
            for line in textio.json_lines(batch):
                self.out.write(json_printable(line) + "\n")
        else:
            self.out.write(csv_text(batch, header=not self._csv_header))
            self._csv_header = True

    def finish(self, schema) -> None:
        """Writes the header of a CSV that got no batch (columns of ``schema``)."""
        if self.fmt == "csv" and not self._csv_header:
            import pyarrow as pa
            self.write(pa.RecordBatch.from_pylist([], schema=schema))


class RowPrinter:
    """Prints batches to ``out`` as a table (built in memory, printed by
    :meth:`close`), JSON lines or CSV (both streamed)."""

    def __init__(self, fmt: str, out: IO[str]):
        self.out = out
        self._text = TextRows(fmt, out) if fmt != "table" else None
        self._table_rows: list[list[str]] = []
        self._schema = None

    def write(self, batch) -> None:
        if self._schema is None:
            self._schema = batch.schema
        if self._text is not None:
            self._text.write(batch)
            return
        from . import textio
        for row in textio.text_batch(batch).to_pylist():
            self._table_rows.append([_cell(v) for v in row.values()])

    def close(self, schema) -> None:
        """Ends the output; ``schema`` is the columns' when no batch came."""
        schema = self._schema or schema
        if self._text is not None:
            self._text.finish(schema)
        else:
            print_table(schema.names, self._table_rows, self.out,
                        right=[_numeric(f.type) for f in schema])


class Progress:
    """A progress bar over rows (or another ``unit``) on stderr: rich's when
    installed, else a plain line rewritten in place. Off unless stderr is a
    terminal or ``--progress`` asks for it."""

    def __init__(self, enabled: bool, total: int | None, label: str, unit: str = "rows"):
        label = printable(label)
        self.enabled, self.total, self.label, self.done = enabled, total, label, 0
        self.unit = unit
        self._rich = None
        self._last = 0.0
        if not enabled:
            return
        try:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
        except ImportError:
            return
        from rich.console import Console
        self._rich = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TextColumn(unit), TimeElapsedColumn(), TimeRemainingColumn(),
                              console=Console(file=sys.stderr), transient=False)
        from rich.markup import escape
        self._task = self._rich.add_task(escape(label), total=total)
        self._rich.start()

    def advance(self, rows: int) -> None:
        self.done += rows
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.update(self._task, advance=rows)
            return
        now = time.monotonic()
        if now - self._last >= 0.5:
            self._last = now
            self._plain(end="\r")

    def _plain(self, end: str) -> None:
        of = f"/{self.total}" if self.total is not None else ""
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        sys.stderr.write(f"{self.label}: {self.done}{of} {self.unit}{pct}{end}")
        sys.stderr.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.stop()
        else:
            self._plain(end="\n")
