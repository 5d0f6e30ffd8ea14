"""The merged read of a primary-key split whose files are sorted runs
(rowformat.paimon._merge): runs whose key ranges do not overlap are read in
key order with no sort, overlapping runs merged by a stable sort by key; the
rows, order and fallbacks exactly those of the sort by key and sequence
number, and of stock pypaimon's merged read, over random upsert and delete
histories that leave several runs (level-0 files and compacted levels),
overlapping and not."""
import contextlib

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rowformat.paimon as rp
from rowformat.paimon import _merge

from ._tables import read


@contextlib.contextmanager
def spied(name: str, record):
    """``_merge.<name>`` replaced, while inside, by a call of it that appends
    ``record(its result)`` (or a Fallback's message) to the list yielded."""
    seen: list = []
    real = getattr(_merge, name)

    def spy(*args):
        try:
            out = real(*args)
        except _merge.Fallback as e:
            seen.append(str(e))
            raise
        seen.append(record(out))
        return out
    setattr(_merge, name, spy)
    try:
        yield seen
    finally:
        setattr(_merge, name, real)


def _kv(keys, seqs, key_type=pa.int64()):
    return pa.table({"_KEY_k": pa.array(keys, key_type),
                     "_SEQUENCE_NUMBER": pa.array(seqs, pa.int64())})


def _by_sort(table, starts):
    """The sort by key then sequence number (the path for every other key type)."""
    saved = _merge._integer_keys
    _merge._integer_keys = lambda col: None
    try:
        return _merge.latest_per_key(table, 1, starts)
    finally:
        _merge._integer_keys = saved


def _both(table, starts):
    results = []
    for fn in (_by_sort, lambda t, s: _merge.latest_per_key(t, 1, s)):
        try:
            results.append(fn(table, starts).tolist())
        except _merge.Fallback:
            results.append("fallback")
    return results


@pytest.mark.parametrize("keys,seqs,starts,want", [
    # runs that do not overlap, in key order and in reverse: no merge, files in key order
    ([1, 2, 3, 7, 8], [0, 1, 2, 3, 4], [0, 3], [0, 1, 2, 3, 4]),
    ([7, 8, 1, 2, 3], [3, 4, 0, 1, 2], [0, 2], [2, 3, 4, 0, 1]),
    ([5, 9, 1, 3, 6, 8], [9, 9, 1, 2, 3, 4], [0, 2, 4], [2, 3, 0, 4, 5, 1]),
    # empty files (a start repeated, or at the end) change nothing
    ([1, 2, 3, 7, 8], [0, 1, 2, 3, 4], [0, 0, 3, 5], [0, 1, 2, 3, 4]),
    # overlapping: the newest version of each key, whichever file holds it
    ([1, 3, 5, 3, 4, 5], [0, 1, 2, 3, 4, 5], [0, 3], [0, 3, 4, 5]),
    ([3, 4, 5, 1, 3, 5], [3, 4, 5, 0, 1, 2], [0, 3], [3, 0, 1, 2]),
    # a newer version in the file that is older by its highest sequence number
    ([1, 2, 3, 2, 9], [10, 2, 3, 5, 99], [0, 3], [0, 3, 2, 4]),
    ([2, 3, 2], [1, 50, 10], [0, 2], [2, 1]),
    ([4], [0], [0], [0]),
])
def test_runs_give_the_sorts_answer(keys, seqs, starts, want):
    got = _merge.latest_per_key(_kv(keys, seqs), 1, np.array(starts))
    assert got.tolist() == want
    assert _by_sort(_kv(keys, seqs), np.array(starts)).tolist() == want


@pytest.mark.parametrize("key_type", [pa.int8(), pa.int16(), pa.int32(), pa.date32()])
def test_other_integer_key_types(key_type):
    keys = [-3, 0, 5, -3, 2] if key_type != pa.date32() else [1, 2, 5, 1, 3]
    table = _kv(keys, [0, 1, 2, 3, 4], key_type)
    assert _merge.latest_per_key(table, 1, np.array([0, 3])).tolist() == [3, 1, 4, 2]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(st.lists(st.integers(-30, 30), max_size=10), min_size=1, max_size=6),
       sorted_files=st.booleans(),
       seq_order=st.sampled_from(["file", "permuted", "random", "reverse"]),
       seed=st.integers(0, 2 ** 16))
def test_equals_the_sort_by_key_and_sequence(files, sorted_files, seq_order, seed):
    """Either both give the same rows or both fall back: keys within a file
    repeated or unsorted, sequence numbers repeated or older files newer."""
    rng = np.random.default_rng(seed)
    keys, starts = [], []
    for f in files:
        starts.append(len(keys))
        keys += sorted(set(f)) if sorted_files else f
    if not keys:
        return
    seqs = np.arange(len(keys))
    if seq_order == "permuted":
        seqs = rng.permutation(len(keys))
    elif seq_order == "random":
        seqs = rng.integers(0, len(keys), len(keys))     # repeats too
    elif seq_order == "reverse":
        seqs = seqs[::-1].copy()
    by_sort, by_runs = _both(_kv(keys, seqs.tolist()), np.array(starts))
    assert by_runs == by_sort


# -- random histories of several runs, against stock pypaimon ----------------------------------

# (the automatic compaction needs pypaimon 2.1.0: under 2.0.0, level-0 files only)
TRIGGERS = [2, 3, 5, None] if rp.status().pypaimon != "2.0.0" else [None]


def _commit_strategy():
    # a commit: a key range (disjoint from the others' when offset by its
    # index, or the shared 0..30) and (key, op) rows within it
    return st.tuples(st.booleans(),
                     st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["+I", "+I", "-D"])),
                              min_size=1, max_size=25))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(commits=st.lists(_commit_strategy(), min_size=3, max_size=7),
       trigger=st.sampled_from(TRIGGERS))
def test_histories_of_several_runs_equal_stock(tmp_path_factory, commits, trigger):
    """Automatic compaction (``num-sorted-run.compaction-trigger``) leaves
    runs at several levels; ``write-only`` only level-0 files."""
    from ._tables import Warehouse, write
    wh = Warehouse(tmp_path_factory.mktemp("wh"))
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                        ("op", pa.string())])
    options = {"bucket": "1", "rowkind.field": "op"}
    if trigger is None:
        options["write-only"] = "true"
    else:
        options["num-sorted-run.compaction-trigger"] = str(trigger)
    t = wh.create("runs", schema, primary_keys=["id"], options=options)
    for i, (disjoint, rows) in enumerate(commits):
        last = {}
        for k, op in rows:          # one row per key per commit (pypaimon merges within one)
            last[(k + 100 * (i + 1)) if disjoint else k] = op
        ks = sorted(last)
        with rp.accelerated():
            write(t, pa.table({"id": pa.array(ks, pa.int64()),
                               "v": [f"{i}.{k}" for k in ks],
                               "op": [last[k] for k in ks]}, schema=schema))
    rp.restore()
    stock = read(t)
    with spied("merged_values", lambda out: "fast") as seen, rp.accelerated():
        fast = read(t)
    assert fast.schema.equals(stock.schema, check_metadata=True)
    assert fast.equals(stock)            # rows in the same order
    # every split that was not raw-convertible was merged here
    assert set(seen) <= {"fast"}


# -- the compaction's merge (rowformat.paimon._compact_lsm) -----------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(st.lists(st.tuples(st.integers(-20, 20), st.integers(0, 3)), max_size=10),
                      min_size=1, max_size=6),
       sorted_files=st.booleans(), seq_order=st.sampled_from(["file", "permuted", "random"]),
       drop=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_compaction_merge_equals_the_sort_by_key_and_sequence(files, sorted_files, seq_order,
                                                              drop, seed):
    """The rows kept, in order, the same as the stable sort by key then
    sequence number keeps: of two versions with one sequence number the
    later row in the files' order, retractions dropped with ``drop``."""
    from rowformat.paimon import _compact_lsm
    rng = np.random.default_rng(seed)
    parts = []
    for f in files:
        if sorted_files:
            f = sorted({k: kind for k, kind in f}.items())
        parts.append(f)
    rows = [r for f in parts for r in f]
    if not rows:
        return
    n = len(rows)
    seqs = {"file": np.arange(n), "permuted": rng.permutation(n),
            "random": rng.integers(0, max(1, n // 2), n)}[seq_order]
    data = pa.table({"_KEY_k": pa.array([k for k, _ in rows], pa.int32()),
                     "_SEQUENCE_NUMBER": pa.array(seqs.tolist(), pa.int64()),
                     "_VALUE_KIND": pa.array([kind for _, kind in rows], pa.int8()),
                     "row": pa.array(range(n), pa.int64())})
    got = _compact_lsm.latest_per_key(data, ["_KEY_k"], drop, [len(f) for f in parts])
    saved = _merge._integer_keys
    _merge._integer_keys = lambda col: None
    try:
        want = _compact_lsm.latest_per_key(data, ["_KEY_k"], drop, [len(f) for f in parts])
    finally:
        _merge._integer_keys = saved
    assert got.column("row").to_pylist() == want.column("row").to_pylist()
    # and what that is, by hand
    best = {}
    for i, (k, kind) in enumerate(rows):
        if k not in best or seqs[i] >= seqs[best[k]]:
            best[k] = i
    expected = [best[k] for k in sorted(best) if not (drop and rows[best[k]][1] in (1, 3))]
    assert got.column("row").to_pylist() == expected


# -- runs that do not overlap, for keys of any type --------------------------------------------

def _by_sort_any(table, key_arity, starts):
    saved = _merge._integer_keys, _merge._disjoint_runs
    _merge._integer_keys = lambda col: None
    _merge._disjoint_runs = lambda cols, starts, n: None
    try:
        return _merge.latest_per_key(table, key_arity, starts).tolist()
    except _merge.Fallback:
        return "fallback"
    finally:
        _merge._integer_keys, _merge._disjoint_runs = saved


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(st.lists(st.tuples(st.sampled_from(["", "a", "ab", "b", "é", "z", "ü"]),
                                         st.integers(0, 3)), max_size=8), min_size=1, max_size=5),
       sorted_files=st.booleans(), two_columns=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_string_and_compound_keys_equal_the_sort(files, sorted_files, two_columns, seed):
    """Files of string (or string, int) keys, disjoint or not, sorted or not:
    the rows (or the fallback) of the sort by key and sequence number."""
    rng = np.random.default_rng(seed)
    parts = [sorted(set(f)) if sorted_files else f for f in files]
    if not two_columns:
        parts = [sorted({s for s, _ in f}) if sorted_files else [s for s, _ in f] for f in parts]
    if rng.integers(0, 2):
        parts.sort(key=lambda f: f[:1])              # often disjoint and in order
    rows = [r for f in parts for r in f]
    if not rows:
        return
    starts = np.cumsum([0] + [len(f) for f in parts[:-1]])
    seqs = pa.array(rng.permutation(len(rows)).tolist(), pa.int64())
    if two_columns:
        table = pa.table({"k0": [s for s, _ in rows],
                          "k1": pa.array([i for _, i in rows], pa.int32()),
                          "_SEQUENCE_NUMBER": seqs})
        arity = 2
    else:
        table = pa.table({"k0": rows, "_SEQUENCE_NUMBER": seqs})
        arity = 1
    try:
        got = _merge.latest_per_key(table, arity, starts).tolist()
    except _merge.Fallback:
        got = "fallback"
    assert got == _by_sort_any(table, arity, starts)


def test_disjoint_string_runs_are_read_in_key_order_without_a_sort():
    table = pa.table({"k": ["m", "n", "a", "b", "x"],
                      "_SEQUENCE_NUMBER": pa.array([5, 6, 1, 2, 9], pa.int64())})
    assert _merge._disjoint_runs([table.column(0)], np.array([0, 2, 4]), 5).tolist() == \
        [2, 3, 0, 1, 4]
    assert _merge.latest_per_key(table, 1, np.array([0, 2, 4])).tolist() == [2, 3, 0, 1, 4]
    # "b" in two files: they overlap, left to the sort
    overlapping = pa.table({"k": ["a", "b", "b", "c"],
                            "_SEQUENCE_NUMBER": pa.array([1, 2, 3, 4], pa.int64())})
    assert _merge._disjoint_runs([overlapping.column(0)], np.array([0, 2]), 4) is None
    assert _merge.latest_per_key(overlapping, 1, np.array([0, 2])).tolist() == [0, 2, 3]


@pytest.mark.parametrize("keys", [["name"], ["name", "n"]])
def test_disjoint_string_key_commits_equal_stock(tmp_path, keys):
    """Commits of string (and int) keys in increasing, disjoint ranges: each
    a level-0 run, read in key order with no sort; stock pypaimon's rows."""
    from ._tables import Warehouse, write
    wh = Warehouse(tmp_path)
    schema = pa.schema([pa.field("name", pa.string(), nullable=False),
                        pa.field("n", pa.int32(), nullable=False), ("v", pa.float64())])
    t = wh.create("s", schema, primary_keys=keys, options={"bucket": "1", "write-only": "true"})
    with rp.accelerated():
        for c, prefix in enumerate(["m", "b", "x", "é"]):      # commits not in key order
            names = [f"{prefix}{i:03d}" for i in range(50)]
            write(t, pa.table({"name": names, "n": pa.array([i % 3 for i in range(50)], pa.int32()),
                               "v": [c + i / 100 for i in range(50)]}, schema=schema))
    rp.restore()
    stock = read(t)
    with spied("_disjoint_runs", lambda out: out is not None) as seen, rp.accelerated():
        fast = read(t)
    assert fast.equals(stock) and fast.num_rows == 200
    assert fast.column("name").to_pylist() == sorted(fast.column("name").to_pylist())
    assert seen == [True]
