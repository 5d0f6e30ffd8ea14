"""Random access for training: 256-row random batches of the 1M-row benchmark
dataset, every contender side by side in one run, against the floor.

    .venv/bin/python benchmarks/random_access.py [--rows 1000000] [--batch 256]
        [--rounds 40] [--stock-rounds 3] [--loader-batches 400]
        [--out benchmarks/results-random.md]

The data is ``dataset.py``'s ``generate(rows)``, written once as a ``.row``
file (64 KiB blocks, zstd level 1: ``peers.RowFormat``; and again with 8 KiB
blocks, which the floor is not measured on), a Parquet file
(``peers.Parquet``: row groups of 10,000 rows), a Lance dataset
(``lance.write_dataset`` defaults; skipped when ``lance`` does not import)
and a Paimon table (``file.format=row``, ``row-tracking.enabled`` and
``data-evolution.enabled``, written by ``accelerate()`` in one commit).

* Random batches: ``--rounds`` rounds, each a fresh batch of ``--batch``
  distinct random rows, the same rows for every contender, each contender
  once per round in a rotating order (load that comes and goes falls on all
  alike); medians. Readers are opened once; rowformat's (the to_torch()
  dataset's too) with their block caches off (``cache_bytes=0``), so every
  batch decompresses its blocks; and RowDataset and the to_torch() dataset
  again with their default 64 MiB block caches, as training runs them. The floor
  is decompressing the batch's touched blocks from memory on 2 threads, the
  faster of a ThreadPoolExecutor and python-zstandard's
  ``multi_decompress_to_buffer`` (``floor.py``). pypaimon's ``to_torch()``
  map-style dataset returns rows as dicts (its API); stock pypaimon runs
  ``--stock-rounds`` rounds only.
* Epochs through a ``torch.utils.data.DataLoader`` (batch size ``--batch``,
  rows as a RecordBatch, ``RowDataset`` with its default 64 MiB block cache):
  a sequential epoch, a ``BlockShuffleSampler`` epoch (window 16), and
  ``shuffle=True`` with 0 and 2 workers over ``--loader-batches`` batches
  after 8 warm-up batches (the workers' start not counted); and, for
  reference, ``RowFileReader.iter_batches(batch_size)`` and ``read()`` of the
  whole file.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import peers  # noqa: E402
from compare import machine_info, machine_line, package_version  # noqa: E402
from dataset import SCHEMA_TEXT, generate  # noqa: E402
from floor import Floor  # noqa: E402
from paimon_tables import Bench, commit, versions  # noqa: E402

import rowformat  # noqa: E402
import rowformat.paimon as rp  # noqa: E402

SMALL_BLOCKS = 8192        # a second .row file: smaller blocks, less to decompress per row
FLOOR_8K = "the 8 KiB-block file's floor: decompress its touched blocks, 2 threads (pool)"
CACHED_DATASET = "RowDataset.take (one file), its 64 MiB block cache on"
CACHED_TORCH = "pypaimon to_torch() dataset, accelerate(), its 64 MiB block caches on (rows as dicts)"
ROW_TRACKING = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def _rounds(fns: dict, batches: list) -> dict:
    """{name: median seconds} of each fn(batch), interleaved round by round."""
    names = list(fns)
    times = {n: [] for n in names}
    for r, batch in enumerate(batches):
        for n in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            fns[n](batch)
            times[n].append(time.perf_counter() - t0)
    return {n: statistics.median(t) for n, t in times.items()}


def _epoch(loader, limit: int | None = None, warmup: int = 0) -> float:
    """Rows per second of iterating ``loader`` (``limit`` batches after ``warmup``)."""
    it = iter(loader)
    for _ in range(warmup):
        next(it)
    rows, t0 = 0, time.perf_counter()
    for k, batch in enumerate(it):
        rows += batch.num_rows
        if limit is not None and k + 1 >= limit:
            break
    return rows / (time.perf_counter() - t0)


def _identity(batch):
    return batch


def write_all(table: pa.Table, work: str) -> dict:
    paths = {"row": os.path.join(work, "data.row"), "parquet": os.path.join(work, "data.parquet"),
             "lance": os.path.join(work, "data.lance"), "warehouse": os.path.join(work, "wh")}
    peers.RowFormat().write(table, paths["row"])
    paths["row8k"] = os.path.join(work, "data-8k.row")
    with rowformat.RowFileWriter(paths["row8k"], rowformat.schema(SCHEMA_TEXT),
                                 block_size=SMALL_BLOCKS) as w:
        w.write(table)
    peers.Parquet().write(table, paths["parquet"])
    tables = Bench(paths["warehouse"], 1)
    name = tables.create(table.schema, options=ROW_TRACKING)
    with rp.accelerated():
        tables.write(name, table)
    paths["table"] = tables.table(name)
    return paths


def write_lance(table: pa.Table, paths: dict) -> None:
    """The Lance copy (after the epochs: lance is not fork-safe once imported)."""
    try:
        peers.Lance().write(table, paths["lance"])
    except ImportError as e:
        paths["lance"] = None
        paths["lance_why"] = str(e)


def random_batches(paths: dict, n: int, size: int, rounds: int, stock_rounds: int) -> dict:
    schema = rowformat.schema(SCHEMA_TEXT)
    rng = np.random.default_rng(7)
    batches = [np.sort(rng.choice(n, size, replace=False)) for _ in range(rounds)]
    for b in batches:
        rng.shuffle(b)          # distinct rows, in a random order (as a sampler asks)
    floor = Floor(paths["row"])
    take = rowformat.RowFileReader(paths["row"], schema, cache_bytes=0)
    prefix = rowformat.RowFileReader(paths["row"], schema, cache_bytes=0, prefix_lookups=True)
    mapped = rowformat.RowFileReader(paths["row"], schema, cache_bytes=0, prefix_lookups=True,
                                     memory_map=True)
    ds = rowformat.RowDataset([paths["row"]], schema=schema, cache_bytes=0)
    small = rowformat.RowFileReader(paths["row8k"], schema, cache_bytes=0)
    small_prefix = rowformat.RowFileReader(paths["row8k"], schema, cache_bytes=0,
                                           prefix_lookups=True, memory_map=True)
    pq = pads.dataset(paths["parquet"], format="parquet")

    floor8k = Floor(paths["row8k"])

    def blocks(rows, reader=take):
        return np.unique(reader._block_of(np.asarray(rows))).tolist()
    fns = {
        "floor: decompress the touched blocks, 2 threads (pool)":
            lambda rows: floor.decompress_blocks(blocks(rows), "2t-pool"),
        "floor: decompress the touched blocks, 2 threads (multi_decompress_to_buffer)":
            lambda rows: floor.decompress_blocks(blocks(rows), "2t-multi"),
        "RowFileReader.take": take.take,
        "RowFileReader.take, prefix_lookups=True": prefix.take,
        "RowFileReader.take, prefix_lookups=True, memory_map=True": mapped.take,
        "RowDataset.take (one file)": ds.take,
        "RowFileReader.take, a file of 8 KiB blocks": small.take,
        FLOOR_8K: lambda rows: floor8k.decompress_blocks(blocks(rows, small), "2t-pool"),
        "RowFileReader.take, a file of 8 KiB blocks, prefix_lookups=True, memory_map=True":
            small_prefix.take,
        "Parquet: pyarrow.dataset take": lambda rows: pq.take(pa.array(rows)),
    }
    if paths.get("lance"):
        import lance
        lds = lance.dataset(paths["lance"])
        fns["Lance: dataset.take"] = lambda rows: lds.take(rows.tolist())
    t = paths["table"]
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    rp.accelerate()
    cached = rb.new_read().to_torch(splits)
    cached.__getitems__([0])                # its readers open with their 64 MiB block caches
    # the other's block caches off, as the other readers' here: every batch decompresses
    # its blocks
    from rowformat.paimon import _torch
    _torch._CACHE_BYTES = 0
    fast = rb.new_read().to_torch(splits)
    stock_cls = type(fast).__mro__[1]       # pypaimon's own TorchDataset
    fns["pypaimon to_torch() dataset, accelerate() (rows as dicts)"] = fast.__getitems__
    fns[CACHED_TORCH] = cached.__getitems__
    fns[CACHED_DATASET] = rowformat.RowDataset([paths["row"]], schema=schema).take
    fns["pypaimon to_torch() dataset: its own batches, rowformat's reader (rows as dicts)"] = \
        lambda rows: stock_cls.__getitems__(fast, rows)
    med = _rounds(fns, batches)
    rp.restore()
    stock = rb.new_read().to_torch(splits)
    med["pypaimon to_torch() dataset, stock (rows as dicts)"] = _rounds(
        {"s": stock.__getitems__}, batches[:stock_rounds])["s"]
    info = {"blocks": statistics.median(len(blocks(b)) for b in batches),
            "files": len(splits), "rounds": rounds, "stock_rounds": stock_rounds}
    floor.close()
    floor8k.close()
    for r in (take, prefix, mapped, small, small_prefix):
        r.close()
    return {"batch": med, "info": info}


def epochs(path: str, size: int, loader_batches: int) -> dict:
    from torch.utils.data import DataLoader
    schema = rowformat.schema(SCHEMA_TEXT)
    ds = rowformat.RowDataset([path], schema=schema)
    out = {}
    with rowformat.RowFileReader(path, schema) as r:
        t0 = time.perf_counter()
        n = sum(b.num_rows for b in r.iter_batches(batch_size=size))
        out[f"sequential scan: RowFileReader.iter_batches(batch_size={size})"] = \
            n / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        n = r.read().num_rows
        out["sequential scan: RowFileReader.read() (2 threads)"] = n / (time.perf_counter() - t0)
    out["DataLoader, sequential (shuffle=False)"] = _epoch(
        DataLoader(ds, batch_size=size, collate_fn=_identity))
    ds.close()
    sampler = rowformat.BlockShuffleSampler(ds, window=16, seed=0)
    out["DataLoader, BlockShuffleSampler(window=16)"] = _epoch(
        DataLoader(ds, batch_size=size, sampler=sampler, collate_fn=_identity))
    for workers in (0, 2):
        ds.close()
        out[f"DataLoader, shuffle=True, num_workers={workers}"] = _epoch(
            DataLoader(ds, batch_size=size, shuffle=True, num_workers=workers,
                       collate_fn=_identity), loader_batches, warmup=8)
    return out


def markdown(res: dict, a, machine: dict, load_after) -> str:
    size = a.batch
    med, info = res["batch"], res["info"]
    floor = min(v for k, v in med.items() if k.startswith("floor"))
    lines = [f"## {size}-row random batches ({info['rounds']} rounds; stock pypaimon "
             f"{info['stock_rounds']}; median {info['blocks']:.0f} of the file's blocks touched "
             f"per batch)", "",
             "\"x floor\" is against the 64 KiB-block file's floor (the 8 KiB-block file's "
             "rows too; its own floor is a row of the table).", "",
             "| contender | ms per batch | rows/s | x floor |", "|---|---:|---:|---:|"]
    for name, t in sorted(med.items(), key=lambda kv: kv[1]):
        lines.append(f"| {name} | {t * 1e3:.1f} | {size / t:,.0f} | {t / floor:.2f} |")
    ep = res["epochs"]
    lines += ["", f"## Epochs ({size}-row batches, rows/s)", "", "| how | rows/s |", "|---|---:|"]
    lines += [f"| {name} | {v:,.0f} |" for name, v in ep.items()]
    take = med["RowFileReader.take"]
    mapped = med["RowFileReader.take, prefix_lookups=True, memory_map=True"]
    small = med["RowFileReader.take, a file of 8 KiB blocks, prefix_lookups=True, memory_map=True"]
    lance = med.get("Lance: dataset.take")
    stock = med["pypaimon to_torch() dataset, stock (rows as dicts)"]
    acc = med["pypaimon to_torch() dataset, accelerate() (rows as dicts)"]
    block = ep["DataLoader, BlockShuffleSampler(window=16)"]
    scan = ep[f"sequential scan: RowFileReader.iter_batches(batch_size={size})"]
    lines += ["", "## Targets", "",
              f"- `take` of {size} random rows within 1.3x of the floor: "
              f"{take / floor:.2f}x (prefix_lookups=True: "
              f"{med['RowFileReader.take, prefix_lookups=True'] / floor:.2f}x)",
              f"- `take` at least 2.5x faster than Lance take: " +
              (f"{lance / take:.2f}x (prefix_lookups=True, memory_map=True: {lance / mapped:.2f}x; "
               f"the same on a file of 8 KiB blocks: {lance / small:.2f}x, "
               f"{small / med[FLOOR_8K]:.2f}x that file's floor)"
               if lance else f"Lance not measured ({res['lance_why']})"),
              f"- block-shuffled epoch at least half the rows/s of a sequential scan "
              f"(iter_batches): {block / scan:.2f}x "
              f"(of the sequential DataLoader epoch: "
              f"{block / ep['DataLoader, sequential (shuffle=False)']:.2f}x)",
              f"- accelerated to_torch() at least 20x stock: {stock / acc:.0f}x "
              f"(its block caches on: {stock / med[CACHED_TORCH]:.0f}x)", "",
              "The block caches fill in the first rounds (about 4 batches of 240 blocks fill "
              "64 MiB) and then hold about half the file's decompressed blocks: the rows with "
              "\"block cache on\" are what a shuffled epoch sees after its first batches.", "",
              f"{machine_line(machine, load_after)} rowformat at {commit()}. "
              f"Versions: {versions()}, lance {package_version('pylance')}, torch {package_version('torch')}."]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--stock-rounds", type=int, default=3)
    ap.add_argument("--loader-batches", type=int, default=400)
    ap.add_argument("--out", help="also write the Markdown to this file")
    a = ap.parse_args(argv)
    machine = machine_info()
    work = tempfile.mkdtemp(prefix="rowformat-random-")
    try:
        table = generate(a.rows)
        paths = write_all(table, work)
        # the epochs first: their DataLoader workers fork before lance is imported (not fork-safe)
        loaders = epochs(paths["row"], a.batch, a.loader_batches)
        write_lance(table, paths)
        del table
        res = random_batches(paths, a.rows, a.batch, a.rounds, a.stock_rounds)
        res["lance_why"] = paths.get("lance_why")
        res["epochs"] = loaders
    finally:
        shutil.rmtree(work, ignore_errors=True)
    md = markdown(res, a, machine, os.getloadavg())
    print(md)
    if a.out:
        pathlib.Path(a.out).write_text(
            "# Random access for training\n\n"
            f"`.venv/bin/python benchmarks/random_access.py --rows {a.rows} --batch {a.batch} "
            f"--rounds {a.rounds} --stock-rounds {a.stock_rounds} "
            f"--loader-batches {a.loader_batches}`\n\n" + md + "\n")


if __name__ == "__main__":
    main()
