"""The one command: rowformat against its peers and the ZSTD floor, in one run.

    python benchmarks/compare.py --rows 1000000

Generates the seeded dataset once, then for each format runs a child process
that times (medians of --repeat runs): write from Arrow, file size, full scan to
Arrow, 1,000 single-row lookups (file opened once, one call each; median and p99;
rowformat both with its block cache dropped before each call and cached), and one
batched lookup of 10,000 sorted random rows. Two more child processes per format
measure peak RSS (VmHWM, reset before the operation) of a write and of a scan above the
baseline RSS. The floor (floor.py) is measured on the rowformat file's own blocks,
interleaved run by run with rowformat's own operations (same machine load); the
bounded-memory scan check (memcheck.py) runs last. Prints a markdown table, the ratios
against the issue's targets, and writes it all to benchmarks/results.md.

Slow peers (pure-Python pypaimon, fastavro) are measured on a prefix of the data
and scaled linearly to --rows; the table marks those cells with "~".
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import peers as peers_mod  # noqa: E402
from peakmem import Peak  # noqa: E402

DEFAULT_PEERS = ["rowformat", "pypaimon", "parquet", "ipc", "ipc-zstd", "lance", "vortex", "avro"]


# ============================================================================ child side
def _load_table(a) -> pa.Table:
    # Each child regenerates the seeded table (about 2 s per million rows) rather than
    # reading a shared copy: an IPC file's buffers are only 8-byte aligned, which some
    # peers (Lance) reject for decimal128.
    import dataset
    return dataset.generate(a.rows, a.seed)


def _make_peer(key, threads):
    if key == "rowformat":
        return peers_mod.RowFormat(threads=threads)
    return peers_mod.make(key)


def _subset_rows(peer, rows):
    m = min(x for x in (peer.max_rows_write, peer.max_rows_scan, rows) if x)
    return min(m, rows)


def child_timing(a) -> dict:
    """Times one format. For rowformat, the ZSTD floor operations on the file's own blocks
    run interleaved with rowformat's (write | compress all, scan | decompress all, each
    lookup | decompress that row's block, batched lookup | decompress its blocks), so the
    ratios compare runs made under the same machine load."""
    peer = _make_peer(a.peer, a.threads)
    table = _load_table(a)
    n = _subset_rows(peer, table.num_rows)
    scale = table.num_rows / n
    if n < table.num_rows:
        table = table.slice(0, n)
    path = os.path.join(a.workdir, a.peer + peer.ext)
    reps = a.repeat if scale == 1 else max(1, min(a.repeat, 2))
    res = {"peer": a.peer, "name": peer.name, "note": peer.note, "version": peer.version(),
           "rows_measured": n, "scale": scale}
    fl = None
    fres = {}                      # floor results (rowformat only)

    def timed(fn, before=None, partners=None):
        """Median of reps runs of fn (scaled); each run is followed by one run of each
        partner (floor operation), whose medians go to fres."""
        times, ptimes = [], {k: [] for k in partners or {}}
        for _ in range(reps):
            if before:
                before()
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
            for k, pf in (partners or {}).items():
                t0 = time.perf_counter()
                pf()
                ptimes[k].append(time.perf_counter() - t0)
        for k, v in ptimes.items():
            fres[k] = statistics.median(v)
        return statistics.median(times) * scale, times

    peer.remove(path)
    peer.write(table, path)                          # warm-up write (untimed), same for every format
    partners = None
    if a.peer == "rowformat":
        import floor as floor_mod
        fl = floor_mod.Floor(path, 1)
        fres.update(fl.info)
        partners = {"comp_1t": lambda: fl.compress_blocks("1t"),
                    "comp_2t_pool": lambda: fl.compress_blocks("2t-pool"),
                    "comp_2t_multi": lambda: fl.compress_blocks("2t-multi"),
                    "comp_2t_java": lambda: fl.compress_blocks("2t-java")}
    res["write_s"], res["write_all"] = timed(lambda: peer.write(table, path), lambda: peer.remove(path),
                                             partners)
    res["size_bytes"] = peer.size(path) * scale
    out = {}

    def scan():
        out["t"] = peer.scan(path)
    if fl:
        partners = {"decomp_1t": lambda: fl.decompress_blocks(None, "1t"),
                    "decomp_2t_pool": lambda: fl.decompress_blocks(None, "2t-pool"),
                    "decomp_2t_multi": lambda: fl.decompress_blocks(None, "2t-multi")}
    # Each scan starts with the previous result freed, as the floor's decompressions
    # do (a live 1M-row result would have every format fault in fresh pages).
    res["scan_s"], res["scan_all"] = timed(scan, lambda: out.pop("t", None), partners)
    got = out.pop("t")
    got = got.cast(table.schema) if got.schema != table.schema else got
    res["scan_equal"] = bool(got.equals(table))
    del got

    rng = np.random.default_rng(a.seed)
    n_lookups = min(a.lookups, peer.lookups or a.lookups)
    rows = rng.integers(0, n, n_lookups)
    lk = peer.open(path)
    drop = getattr(lk, "drop_cache", None)
    for i in rows[:5]:
        lk.get(int(i))                           # warm up code paths, not the rows' blocks
    lat, flat, plat, xlat = [], [], [], []
    starts = lk.reader.block_index.row_starts if fl else None
    fd = os.open(path, os.O_RDONLY) if fl else None
    # rowformat with prefix_lookups=True, and the pread floor, each on rows of its own
    # (drawn alike): a block that get(i) has just read is in the CPU caches, and the
    # frame it reads from the file would be hot for them
    prefix = peer.open(path, prefix_lookups=True) if fl else None
    rows_pread, rows_prefix = (np.random.default_rng(a.seed + 1).integers(0, n, (2, n_lookups))
                               if fl else (None, None))
    for k, i in enumerate(rows):
        i = int(i)
        if drop:
            drop()
        t0 = time.perf_counter_ns()
        lk.get(i)
        lat.append(time.perf_counter_ns() - t0)
        if fl:                                   # floor: decompress this row's block (from memory)
            b = int(np.searchsorted(starts, i, side="right")) - 1
            t0 = time.perf_counter_ns()
            fl.decompress_block(b)
            flat.append(time.perf_counter_ns() - t0)
            b = int(np.searchsorted(starts, rows_pread[k], side="right")) - 1
            t0 = time.perf_counter_ns()          # read from the file and decompress
            fl.d.decompress(os.pread(fd, len(fl.frames[b]), int(fl.offsets[b])),
                            max_output_size=fl.sizes[b])
            plat.append(time.perf_counter_ns() - t0)
            j = int(rows_prefix[k])
            prefix.drop_cache()
            t0 = time.perf_counter_ns()
            prefix.get(j)
            xlat.append(time.perf_counter_ns() - t0)
    res["get_median_us"] = float(np.median(lat)) / 1e3
    res["get_p90_us"] = float(np.percentile(lat, 90)) / 1e3
    res["get_p99_us"] = float(np.percentile(lat, 99)) / 1e3
    res["lookups"] = n_lookups
    if fl:
        # where in its block each looked-up row fell (0: first row, 1: last),
        # and the lookups' median in the block's first and second half
        b = np.searchsorted(starts, rows, side="right") - 1
        ends = np.append(starts[1:], n)
        where = (rows - starts[b]) / np.maximum(ends[b] - starts[b] - 1, 1)
        res["in_block_quartiles"] = [float(q) for q in np.percentile(where, [25, 50, 75])]
        lat_a = np.asarray(lat)
        res["get_median_us_first_half"] = float(np.median(lat_a[where < 0.5])) / 1e3
        res["get_median_us_second_half"] = float(np.median(lat_a[where >= 0.5])) / 1e3
        b = np.searchsorted(starts, rows_prefix, side="right") - 1
        where = (rows_prefix - starts[b]) / np.maximum(ends[b] - starts[b] - 1, 1)
        xlat = np.asarray(xlat)
        for q in (50, 90, 99):
            res[f"get_prefix_p{q}_us"] = float(np.percentile(xlat, q)) / 1e3
        res["get_prefix_median_us_first_half"] = float(np.median(xlat[where < 0.5])) / 1e3
        res["get_prefix_median_us_second_half"] = float(np.median(xlat[where >= 0.5])) / 1e3
    if fl:
        os.close(fd)
        prefix.close()
        fres["one_block"] = float(np.median(flat)) / 1e9
        fres["one_block_p99"] = float(np.percentile(flat, 99)) / 1e9
        fres["one_block_pread"] = float(np.median(plat)) / 1e9
    if drop:                                     # cached: the row's block is in the cache
        lat = []
        for i in rows:
            i = int(i)
            lk.get(i)
            t0 = time.perf_counter_ns()
            lk.get(i)
            lat.append(time.perf_counter_ns() - t0)
        res["get_cached_median_us"] = float(np.median(lat)) / 1e3
        res["get_cached_p90_us"] = float(np.percentile(lat, 90)) / 1e3
        res["get_cached_p99_us"] = float(np.percentile(lat, 99)) / 1e3
        # take([i]): a one-row Arrow lookup, block not cached, then cached
        unc, cac = [], []
        for i in rows:
            i = [int(i)]
            drop()
            t0 = time.perf_counter_ns()
            lk.take(i)
            unc.append(time.perf_counter_ns() - t0)
            t0 = time.perf_counter_ns()
            lk.take(i)
            cac.append(time.perf_counter_ns() - t0)
        for key, lat in (("take1", unc), ("take1_cached", cac)):
            res[f"{key}_median_us"] = float(np.median(lat)) / 1e3
            res[f"{key}_p90_us"] = float(np.percentile(lat, 90)) / 1e3
            res[f"{key}_p99_us"] = float(np.percentile(lat, 99)) / 1e3

    # one batched lookup of 10k sorted random rows (scaled down with the subset: same density)
    k = max(1, int(round(a.take / scale)))
    take_rows = np.sort(rng.choice(n, size=min(k, n), replace=False))
    res["take_rows"] = len(take_rows)

    def take():
        out["t"] = lk.take(take_rows)
    partners = None
    if fl:
        ids = np.unique(np.searchsorted(starts, take_rows, side="right") - 1).tolist()
        fres["take_blocks"] = len(ids)
        partners = {"decomp_1t_take": lambda: fl.decompress_blocks(ids, "1t"),
                    "decomp_2t_take_pool": lambda: fl.decompress_blocks(ids, "2t-pool"),
                    "decomp_2t_take_multi": lambda: fl.decompress_blocks(ids, "2t-multi")}
    res["take_s"], res["take_all"] = timed(take, drop, partners)
    t = out.pop("t")
    t = t.cast(table.schema) if t.schema != table.schema else t
    res["take_equal"] = bool(t.equals(table.take(pa.array(take_rows))))
    if fl:
        r = lk.reader
        res["block_size_bytes"] = int(np.median(r.block_index.uncompressed_sizes))
        res["num_blocks"] = r.num_blocks
        res["rows_per_block"] = float(n / r.num_blocks)
        fres["decomp_2t"] = min(fres["decomp_2t_pool"], fres["decomp_2t_multi"])
        fres["comp_2t"] = min(fres["comp_2t_pool"], fres["comp_2t_multi"])
        fres["decomp_2t_take"] = min(fres["decomp_2t_take_pool"], fres["decomp_2t_take_multi"])
        fl.close()
        res["floor"] = fres
    lk.close()
    peer.remove(path)
    return res


def child_mem(a, op: str) -> dict:
    peer = _make_peer(a.peer, a.threads)
    path = os.path.join(a.workdir, a.peer + peer.ext)
    n = None
    if op == "write":
        table = _load_table(a)
        n = _subset_rows(peer, table.num_rows)
        table = table.slice(0, n) if n < table.num_rows else table
        peer.remove(path)
        with Peak() as pk:
            peer.write(table, path)
    else:
        if not os.path.exists(path):
            table = _load_table(a)
            n = _subset_rows(peer, table.num_rows)
            peer.write(table.slice(0, n), path)
            del table
        with Peak() as pk:
            t = peer.scan(path)
        n = t.num_rows
        del t
    return {"peak_extra_bytes": pk.extra, "base_bytes": pk.base, "rows": n, "method": pk.method}


# ============================================================================ parent side
def _run_child(args: list[str], timeout=3600) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__)] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:300]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def machine_info() -> dict:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        import psutil
        mem = f"{psutil.virtual_memory().total / 2**30:.0f} GiB"
    except ImportError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem,
            "os": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "loadavg": os.getloadavg()}


def package_version(pkg: str) -> str:
    """An installed package's version, or "not installed"."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(pkg)
    except PackageNotFoundError:
        return "not installed"


def machine_line(machine: dict, load_after) -> str:
    """The results files' line on the machine and its load before and after."""
    return (f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory']}, "
            f"{machine['os']}, Python {machine['python']}. Load average (1, 5, 15 min) before: "
            f"{', '.join(f'{x:.2f}' for x in machine['loadavg'])}; after: "
            f"{', '.join(f'{x:.2f}' for x in load_after)}.")


def library_commit() -> str:
    """HEAD, and the last commit that changed the library (rowformat/, src/)."""
    try:
        root = os.path.dirname(HERE)
        git = ["git", "-C", root]
        head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        lib = subprocess.run(git + ["log", "-1", "--format=%h %s", "--", "rowformat", "src"],
                             capture_output=True, text=True).stdout.strip()
        sha = f"{head} (library last changed in {lib[:90]})" if lib else head
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "rowformat", "src"],
                               capture_output=True, text=True).stdout.strip()
        return sha + (" (+ local changes)" if dirty else "")
    except OSError:
        return "?"


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version
    out = {}
    for pkg in ["rowformat", "numpy", "pyarrow", "zstandard", "pypaimon", "pylance", "vortex-data",
                "fastavro"]:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def _fmt_t(s, approx=False):
    if s is None:
        return "-"
    p = "~" if approx else ""
    return f"{p}{s * 1e3:,.0f} ms" if s < 10 else f"{p}{s:,.1f} s"


def _fmt_us(us, approx=False):
    if us is None:
        return "-"
    p = "~" if approx else ""
    return f"{p}{us:,.1f} us" if us < 1000 else f"{p}{us / 1e3:,.2f} ms"


def _fmt_mb(b, approx=False):
    if b is None:
        return "-"
    return f"{'~' if approx else ''}{b / 1e6:,.1f} MB"


def render(results: dict, floor: dict, mem: dict, memres: dict | None, meta: dict) -> str:
    rows = meta["rows"]
    L = []
    L.append(f"# rowformat benchmark: {rows:,} rows\n")
    L.append(f"- date: {meta['date']}")
    m = meta["machine"]
    L.append(f"- machine: {m['cpu']}, {m['cores']} cores, {m['memory']}, {m['os']}, Python {m['python']}")
    la0, la1 = meta["load_before"], meta["load_after"]
    L.append(f"- load average (1/5/15 min) before: {la0[0]:.2f} {la0[1]:.2f} {la0[2]:.2f}, "
             f"after: {la1[0]:.2f} {la1[1]:.2f} {la1[2]:.2f} (shared machine: other work ran alongside)")
    L.append(f"- library measured: rowformat {meta['versions'].get('rowformat', '?')} at commit "
             f"{meta['commit']}; reader/writer options: {meta['rf_note']}")
    L.append("- versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    L.append(f"- method: {meta['repeat']} runs per operation, median; {meta['lookups']} single-row "
             f"lookups at random rows (median, p90, p99), one call each on a file opened once; one batched "
             f"lookup of {meta['take']:,} sorted random rows; peak memory = peak RSS of a child "
             f"process during the operation (VmHWM, reset just before it) minus its RSS just before it (write: the table is already in "
             f"memory; scan: the result table is included)")
    L.append(f"- regenerate: `{meta['command']}`\n")

    L.append("| format | file size | write | full scan | lookup median | lookup p90 | lookup p99 | "
             "10k batched lookup | peak mem write | peak mem scan | notes |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for key, r in results.items():
        if "error" in r:
            L.append(f"| {key} | error: {r['error']} ||||||||||")
            continue
        ap = r["scale"] != 1
        notes = r["note"]
        if ap:
            notes += (f"; measured on {r['rows_measured']:,} rows, times and size scaled x{r['scale']:.0f}"
                      f", memory not scaled")
        if not r.get("scan_equal", True) or not r.get("take_equal", True):
            notes += "; RESULT MISMATCH"
        mw, ms = mem.get(key, {}).get("write", {}), mem.get(key, {}).get("scan", {})
        name = r["name"]
        lookup = _fmt_us(r["get_median_us"])
        p90 = _fmt_us(r["get_p90_us"]) if "get_p90_us" in r else ""
        p99 = _fmt_us(r["get_p99_us"])
        if "get_cached_median_us" in r:
            name += " (block not cached)"
        L.append(f"| {name} | {_fmt_mb(r['size_bytes'], ap)} | {_fmt_t(r['write_s'], ap)} | "
                 f"{_fmt_t(r['scan_s'], ap)} | {lookup} | {p90} | {p99} | {_fmt_t(r['take_s'], ap)} | "
                 f"{_fmt_mb(mw.get('peak_extra_bytes'))} | {_fmt_mb(ms.get('peak_extra_bytes'))} | {notes} |")
        if "get_cached_median_us" in r:
            L.append(f"| {r['name']} (block cached) | | | | {_fmt_us(r['get_cached_median_us'])} | "
                     f"{_fmt_us(r['get_cached_p90_us'])} | {_fmt_us(r['get_cached_p99_us'])} | | | | "
                     f"same reader, row's block in the LRU cache |")
        if "get_prefix_p50_us" in r:
            L.append(f"| {r['name']} get(i), prefix_lookups=True, block not cached | | | | "
                     f"{_fmt_us(r['get_prefix_p50_us'])} | {_fmt_us(r['get_prefix_p90_us'])} | "
                     f"{_fmt_us(r['get_prefix_p99_us'])} | | | | decompresses a block only up to the row "
                     f"when it sits in the block's first 60% |")
        for key, label in (("take1", "not cached"), ("take1_cached", "cached")):
            if f"{key}_median_us" in r:
                L.append(f"| {r['name']} take([i]), block {label} | | | | {_fmt_us(r[f'{key}_median_us'])} | "
                         f"{_fmt_us(r[f'{key}_p90_us'])} | {_fmt_us(r[f'{key}_p99_us'])} | | | | "
                         f"one-row Arrow lookup |")
    rf = results.get("rowformat", {})
    if "in_block_quartiles" in rf:
        q = rf["in_block_quartiles"]
        L.append("")
        L.append(f"Where the looked-up rows fell in their blocks (0 = a block's first row, 1 = its last): "
                 f"quartiles {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f}; rowformat's uncached get(i) median "
                 f"{_fmt_us(rf['get_median_us_first_half'])} for rows in a block's first half, "
                 f"{_fmt_us(rf['get_median_us_second_half'])} in its second half (each lookup "
                 f"decompresses its whole block: a block is one ZSTD frame of one compressed block, "
                 f"which yields no output before its end).")
        if "get_prefix_median_us_first_half" in rf:
            L.append(f"With prefix_lookups=True (on rows drawn alike): {_fmt_us(rf['get_prefix_median_us_first_half'])} "
                     f"in a block's first half, {_fmt_us(rf['get_prefix_median_us_second_half'])} in its second.")

    if floor:
        L.append("")
        L.append(f"**ZSTD floor** on the rowformat file's own {floor['blocks']:,} blocks "
                 f"({floor['uncompressed_bytes'] / 1e6:,.1f} MB uncompressed, "
                 f"{floor['compressed_bytes'] / 1e6:,.1f} MB compressed, level 1, python-zstandard), "
                 f"each run interleaved with the matching rowformat run above:\n")
        L.append("| floor | time |")
        L.append("|---|---:|")
        L.append(f"| decompress the looked-up row's block, from memory (median / p99 of the "
                 f"{meta['lookups']:,} lookups) | {_fmt_us(floor['one_block'] * 1e6)} / "
                 f"{_fmt_us(floor['one_block_p99'] * 1e6)} |")
        L.append(f"| pread + decompress the block of a random row (median; rows of their own, so that "
                 f"the file's bytes are not still in the CPU caches from a lookup) | "
                 f"{_fmt_us(floor['one_block_pread'] * 1e6)} |")
        L.append(f"| decompress all blocks, 1 thread | {_fmt_t(floor['decomp_1t'])} |")
        L.append(f"| decompress all blocks, 2 threads (pool / multi_decompress_to_buffer) | "
                 f"{_fmt_t(floor['decomp_2t_pool'])} / {_fmt_t(floor['decomp_2t_multi'])} |")
        if "decomp_2t_take" in floor:
            L.append(f"| decompress the {floor['take_blocks']:,} blocks the 10k lookup touches, 1 thread / "
                     f"2 threads (pool / multi) | {_fmt_t(floor['decomp_1t_take'])} / "
                     f"{_fmt_t(floor['decomp_2t_take_pool'])} / {_fmt_t(floor['decomp_2t_take_multi'])} |")
        L.append(f"| compress all blocks, 1 thread | {_fmt_t(floor['comp_1t'])} |")
        L.append(f"| compress all blocks, 2 threads (pool / multi_compress_to_buffer) | "
                 f"{_fmt_t(floor['comp_2t_pool'])} / {_fmt_t(floor['comp_2t_multi'])} |")
        L.append(f"| compress all blocks as the frames Java writes (streaming, no content size), "
                 f"2 threads | {_fmt_t(floor['comp_2t_java'])} |")

    L.append("")
    L.append("**Targets** (ratios from this run; a 2-thread floor is the best of its 1- and 2-thread "
             "timings, since on a loaded 2-core box two threads are not always faster):\n")
    L.append("| target | measured | status |")
    L.append("|---|---:|---|")
    for name, value, ok in targets(results, floor, memres):
        L.append(f"| {name} | {value} | {'meets' if ok else 'MISSES' if ok is not None else 'n/a'} |")
    return "\n".join(L) + "\n"


def targets(results, floor, memres):
    rf = results.get("rowformat", {})
    if "error" in rf or not rf:
        return []
    out = []

    def get(key, field):
        r = results.get(key)
        return None if not r or "error" in r else r.get(field)

    def add(name, num, den, limit, higher_is_better, unit="x"):
        if num is None or den is None or not den:
            out.append((name, "not measured", None))
            return
        ratio = num / den
        ok = ratio >= limit if higher_is_better else ratio <= limit
        out.append((name, f"{ratio:,.2f}{unit}", ok))

    d2 = min(floor["decomp_2t"], floor["decomp_1t"]) if floor else None
    c2 = min(floor["comp_2t"], floor["comp_1t"]) if floor else None
    add("write: pypaimon time / rowformat time >= 30x", get("pypaimon", "write_s"), rf["write_s"], 30, True)
    add("write: rowformat time / Parquet time < 1x", rf["write_s"], get("parquet", "write_s"), 0.99999, False)
    add("write: rowformat / compress-all-blocks floor (2 threads) <= 1.5x", rf["write_s"], c2, 1.5, False)
    add("write: rowformat / Java-identical compress floor (2 threads) <= 1.5x", rf["write_s"],
        floor.get("comp_2t_java") if floor else None, 1.5, False)
    add("scan: pypaimon time / rowformat time >= 90x", get("pypaimon", "scan_s"), rf["scan_s"], 90, True)
    add("scan: rowformat / decompress-all floor (2 threads) <= 1.5x", rf["scan_s"], d2, 1.5, False)
    one = floor["one_block"] * 1e6 if floor else None
    add("lookup, not cached: median / one-block decompress floor <= 1.2x", rf["get_median_us"], one, 1.2, False)
    for key, label in (("lance", "Lance"), ("vortex", "Vortex"), ("parquet", "Parquet")):
        add(f"lookup, not cached: rowformat median / {label} median < 1x", rf["get_median_us"],
            get(key, "get_median_us"), 0.99999, False)
    c = rf.get("get_cached_median_us")
    out.append(("lookup, cached: median <= 5 us", _fmt_us(c) if c is not None else "not measured",
                None if c is None else c <= 5.0))
    add("get(i), not cached: median / one-block decompress floor <= 0.75x", rf["get_median_us"], one,
        0.75, False)
    add("get(i), not cached: rowformat median / Arrow IPC (mmap, uncompressed) median < 1x",
        rf["get_median_us"], get("ipc", "get_median_us"), 0.99999, False)
    add("get(i) with prefix_lookups=True, not cached: median / one-block decompress floor <= 0.75x",
        rf.get("get_prefix_p50_us"), one, 0.75, False)
    add("get(i) with prefix_lookups=True, not cached: median / Arrow IPC (mmap, uncompressed) median < 1x",
        rf.get("get_prefix_p50_us"), get("ipc", "get_median_us"), 0.99999, False)
    t1 = rf.get("take1_median_us")
    add("take([i]), not cached: median / (get(i) median + 10 us) <= 1.15x", t1,
        rf["get_median_us"] + 10 if t1 is not None else None, 1.15, False)
    t1c = rf.get("take1_cached_median_us")
    out.append(("take([i]), cached: median <= 10 us", _fmt_us(t1c) if t1c is not None else "not measured",
                None if t1c is None else t1c <= 10.0))
    dt = (min(floor["decomp_2t_take"], floor["decomp_1t_take"]) if floor and "decomp_2t_take" in floor
          else d2)
    add("10k batched lookup / 2-thread decompress floor of its blocks <= 1.1x", rf["take_s"], dt, 1.1, False)
    if memres and "error" not in memres:
        out.append((f"memory: scan of a {memres['file_bytes'] / 1e6:,.0f} MB file "
                    f"({memres['file_bytes'] / memres['cache_bytes']:.0f}x the {memres['cache_bytes'] >> 20} MiB "
                    f"cache), batches of {memres['batch_size']:,} rows: peak RSS growth < cache + 2 batches "
                    f"({memres['limit_bytes'] / 1e6:,.1f} MB)",
                    f"{memres['peak_extra_bytes'] / 1e6:,.1f} MB", memres["ok"]))
    elif memres:
        out.append(("memory: bounded scan", "error: " + memres["error"], False))
    return out


def paimon_tables(a, work: str) -> str:
    """benchmarks/paimon_tables.py's table for the same rows (its own child
    process), without its title; or the error it ended with."""
    print("pypaimon tables (stock against accelerate()) ...", flush=True)
    out = os.path.join(work, "paimon.md")
    cmd = [sys.executable, os.path.join(HERE, "paimon_tables.py"), "--rows", str(a.rows),
           "--stock-rows", str(min(a.rows, 200_000)), "--pk-rows", str(min(a.rows, 200_000)),
           "--repeats", str(a.repeat), "--out", out]
    pr = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if pr.returncode != 0:
        return "error: " + ((pr.stderr.strip().splitlines() or ["?"])[-1])
    with open(out) as f:
        return f.read().split("\n", 1)[1].strip()      # drop its "# ..." title


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--lookups", type=int, default=1000)
    p.add_argument("--take", type=int, default=10_000)
    p.add_argument("--threads", type=int, default=2, help="threads= for rowformat, when it has it")
    p.add_argument("--peers", default=",".join(DEFAULT_PEERS))
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory children")
    p.add_argument("--no-paimon", action="store_true",
                   help="skip the pypaimon tables (benchmarks/paimon_tables.py: stock against accelerate())")
    p.add_argument("--workdir", help="scratch directory (default: a temporary one, removed)")
    p.add_argument("--out", default=os.path.join(HERE, "results.md"))
    # internal: child processes
    p.add_argument("--child", choices=["timing", "mem-write", "mem-scan"], help=argparse.SUPPRESS)
    p.add_argument("--peer", help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.child:
        r = child_timing(a) if a.child == "timing" else child_mem(a, a.child[4:])
        print(json.dumps(r))
        return

    load_before = os.getloadavg()
    commit = library_commit()           # before the run: what was installed and measured
    work = a.workdir or tempfile.mkdtemp(prefix="rowformat-bench-")
    os.makedirs(work, exist_ok=True)
    t_start = time.time()
    try:
        import dataset
        dataset.generate(min(a.rows, 1000), a.seed)
        print(f"{a.rows:,} rows (seed {a.seed}); each child process generates them", flush=True)
        common = ["--workdir", work, "--rows", str(a.rows), "--seed", str(a.seed), "--repeat", str(a.repeat),
                  "--lookups", str(a.lookups), "--take", str(a.take), "--threads", str(a.threads)]
        keys = [k.strip() for k in a.peers.split(",") if k.strip()]
        results, mem = {}, {}
        floor = None
        if "rowformat" in keys:
            keys.remove("rowformat")
            keys.insert(0, "rowformat")
        for key in keys:
            t0 = time.time()
            results[key] = _run_child(["--child", "timing", "--peer", key] + common)
            if not a.no_memory and "error" not in results[key]:
                mem[key] = {"write": _run_child(["--child", "mem-write", "--peer", key] + common),
                            "scan": _run_child(["--child", "mem-scan", "--peer", key] + common)}
            r = results[key]
            status = r.get("error") or (f"write {r['write_s']:.2f}s scan {r['scan_s']:.2f}s "
                                        f"get {r['get_median_us']:.0f}us take {r['take_s']:.2f}s")
            print(f"  {key:10} {status}  ({time.time() - t0:.0f}s)", flush=True)
            if key == "rowformat" and "floor" in r:
                floor = r.pop("floor")
                print(f"  {'floor':10} decompress one block {floor['one_block'] * 1e6:.0f}us, all "
                      f"{floor['decomp_1t']:.2f}s / {floor['decomp_2t']:.2f}s (1/2 threads), compress all "
                      f"{floor['comp_1t']:.2f}s / {floor['comp_2t']:.2f}s", flush=True)

        memres = None
        if not a.no_memory and "rowformat" in keys:
            print("bounded-memory scan check ...", flush=True)
            cmd = [sys.executable, os.path.join(HERE, "memcheck.py"), "--json", "--rows", str(a.rows),
                   "--seed", str(a.seed)]
            pr = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
            memres = (json.loads(pr.stdout.strip().splitlines()[-1]) if pr.returncode in (0, 1)
                      and pr.stdout.strip() else {"error": (pr.stderr.strip().splitlines() or ["?"])[-1]})
        paimon = None if a.no_paimon else paimon_tables(a, work)
    finally:
        if not a.workdir:
            shutil.rmtree(work, ignore_errors=True)

    rf_note = results.get("rowformat", {}).get("note", "?")
    meta = {"rows": a.rows, "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "machine": machine_info(), "load_before": load_before, "load_after": os.getloadavg(),
            "versions": versions(), "commit": commit, "rf_note": rf_note, "repeat": a.repeat,
            "lookups": a.lookups, "take": a.take,
            "command": f"python benchmarks/compare.py --rows {a.rows}"}
    text = render(results, floor, mem, memres, meta)
    if paimon:
        text += "\n## pypaimon tables with `file.format=row`: stock against `rowformat.paimon.accelerate()`\n\n"
        text += paimon + "\n"
    text += f"\n_Total run time {time.time() - t_start:,.0f} s._\n"
    print()
    print(text)
    with open(a.out, "w") as f:
        f.write(text)
    data = {"meta": meta, "results": results, "memory": mem, "floor": floor, "memcheck": memres,
            "paimon_tables": paimon}
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump(data, f, indent=1, default=str)
    print(f"wrote {a.out}")
    try:
        import chart
        print("wrote", chart.draw(data, os.path.splitext(a.out)[0] + ".png"))
    except ImportError as e:       # matplotlib is in the bench extra
        print(f"no chart: {e}")


if __name__ == "__main__":
    main()
