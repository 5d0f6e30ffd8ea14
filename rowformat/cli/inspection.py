"""``rowformat inspect`` and ``rowformat verify``: reports about one
``.row`` file as a whole. ``inspect`` reads only the footer and the block
index (no schema needed) and prints sizes, blocks and compression;
``verify`` decodes every block and row with the schema and lists the
problems it finds (exit code 1 when there is any).
"""
from __future__ import annotations

from typing import IO, Any

from .exit_codes import EXIT_BAD_FILE, EXIT_OK
from .output import counted, json_document, print_table, printable, problem_lines
from .schema_arg import load_schema, require_schema


def _stats(values) -> dict | None:
    if not len(values):
        return None
    return {"min": int(values.min()), "mean": round(float(values.mean()), 1), "max": int(values.max())}


def inspect_file(path: str, *, blocks: bool = False, storage_options: dict | None = None) -> dict:
    """The facts ``rowformat inspect`` prints, as a dict."""
    import numpy as np
    from ..row.reader import read_metadata
    meta = read_metadata(path, storage_options=storage_options)
    f, ix = meta.footer, meta.block_index
    comp, uncomp = ix.compressed_sizes, ix.uncompressed_sizes
    rows = np.diff(np.append(ix.row_starts, f.total_rows)) if len(ix) else np.zeros(0, np.int64)
    out: dict[str, Any] = {
        "file": path,
        "size": meta.size,
        "footer": {"total_rows": f.total_rows, "block_count": f.block_count,
                   "index_offset": f.index_offset, "index_length": f.index_length,
                   "version": f.version},
        "compressed_bytes": int(comp.sum()),
        "uncompressed_bytes": int(uncomp.sum()),
        "compression_ratio": round(float(uncomp.sum()) / float(comp.sum()), 3)
        if comp.sum() else None,
        "rows_per_block": _stats(rows),
        "uncompressed_block_bytes": _stats(uncomp),
    }
    if blocks:
        offsets = ix.offsets
        out["blocks"] = [
            {"block": b, "offset": int(offsets[b]), "compressed_bytes": int(comp[b]),
             "uncompressed_bytes": int(uncomp[b]), "first_row": int(ix.row_starts[b]),
             "rows": int(rows[b])}
            for b in range(len(ix))]
    return out


def cmd_inspect(args, out: IO[str]) -> int:
    from . import table_dirs as pt
    if pt.is_table_dir(args):
        return pt.cmd_inspect_table(args, out)
    pt.reject_snapshot(args)
    info = inspect_file(args.file, blocks=args.blocks, storage_options=pt.storage_options(args))
    if args.schema:
        info["schema"] = str(load_schema(args.schema))
    if args.json:
        out.write(json_document(info))
        return EXIT_OK
    f = info["footer"]

    def stats(s, unit=""):
        return "-" if s is None else f"min {s['min']}{unit}, mean {s['mean']}{unit}, max {s['max']}{unit}"
    ratio = info["compression_ratio"]
    summary = [
        ("file", info["file"]),
        ("size", f"{info['size']} bytes"),
        ("rows", str(f["total_rows"])),
        ("blocks", str(f["block_count"])),
        ("rows per block", stats(info["rows_per_block"])),
        ("block size", stats(info["uncompressed_block_bytes"], " bytes") + " (uncompressed)"),
        ("compressed", f"{info['compressed_bytes']} bytes"),
        ("uncompressed", f"{info['uncompressed_bytes']} bytes"),
        ("compression ratio", "-" if ratio is None else f"{ratio:.3f}"),
        ("block index", f"offset {f['index_offset']}, {f['index_length']} bytes"),
        ("format version", str(f["version"])),
    ]
    if "schema" in info:
        summary.append(("schema", info["schema"]))
    print_table(["field", "value"], [list(x) for x in summary], out)
    if args.blocks:
        out.write("\n")
        cols = ["block", "offset", "compressed_bytes", "uncompressed_bytes", "first_row", "rows"]
        print_table(cols, [[str(b[c]) for c in cols] for b in info["blocks"]], out,
                    right=[True] * len(cols))
    return EXIT_OK


def cmd_verify(args, out: IO[str]) -> int:
    from . import table_dirs as pt
    if pt.is_table_dir(args):
        return pt.cmd_verify_table(args, out)
    pt.reject_snapshot(args)
    from ..row.verify import verify
    report = verify(args.file, require_schema(args), storage_options=pt.storage_options(args))
    problems = report.problems
    ok = report.ok
    if args.json:
        out.write(json_document({
            "file": args.file, "ok": ok,
            "problems": [{"block": p.block, "row": p.row, "column": p.column,
                          "message": p.message} for p in problems],
        }))
    elif ok:
        rows, blocks = report.num_rows, report.num_blocks
        extra = f": {counted(rows, 'row')} in {counted(blocks, 'block')}" \
            if rows is not None and blocks is not None else ""
        out.write(f"ok {printable(args.file)}{extra}\n")
    else:
        for line in problem_lines(problems, report):
            out.write(f"{line}\n")
        out.write(f"FAILED {printable(args.file)}: {len(problems)} problem(s)\n")
    return EXIT_OK if ok else EXIT_BAD_FILE
