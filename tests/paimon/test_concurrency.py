"""Two processes appending to one table with acceleration at the same time
lose no rows: pypaimon's commit (snapshot files written atomically, retried
on conflict) is untouched, only the data files are rowformat's."""
import multiprocessing
import os
import pyarrow as pa
import pytest

import rowformat.paimon as rp

from ._tables import Warehouse, read, write

COMMITS = 6
ROWS = 500


def _appender(root, worker, start_event, errors):
    try:
        import rowformat.paimon as rp
        rp.accelerate()
        wh = Warehouse(root)
        start_event.wait(30)
        for c in range(COMMITS):
            base = (worker * COMMITS + c) * ROWS
            write(wh.table("shared"), pa.table({
                "id": pa.array(range(base, base + ROWS), pa.int64()),
                "worker": pa.array([worker] * ROWS, pa.int32()),
                "v": [f"w{worker}c{c}r{i}" for i in range(ROWS)]}))
    except BaseException as e:     # reported to the parent
        errors.put(f"{worker}: {type(e).__name__}: {e}")
        raise


def run_workers(target, workers: int, *args, timeout: float = 300) -> None:
    """``target(*args, worker, start_event, errors)`` in ``workers`` spawned
    processes, started together; fails with what they reported if any failed."""
    ctx = multiprocessing.get_context("spawn")
    start, errors = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, w, start, errors)) for w in range(workers)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout)
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert all(p.exitcode == 0 for p in procs), problems


def test_two_processes_append_concurrently(tmp_path):
    root = str(tmp_path / "wh")
    wh = Warehouse(root)
    wh.create("shared", pa.schema([("id", pa.int64()), ("worker", pa.int32()), ("v", pa.string())]))
    run_workers(_appender, 2, root)
    total = 2 * COMMITS * ROWS
    stock = read(wh.table("shared"))
    assert sorted(stock.column("id").to_pylist()) == list(range(total))
    with rp.accelerated():
        fast = read(wh.table("shared"))
    assert fast.sort_by("id").equals(stock.sort_by("id"))
    assert len(wh.data_files("shared")) == 2 * COMMITS


RACERS = 4
ROUNDS = 12


def _racer(root, accelerate, worker, start_event, errors):
    try:
        import rowformat.paimon as rp
        if accelerate:
            rp.accelerate()
        table = Warehouse(root).table("race")
        start_event.wait(30)
        for r in range(ROUNDS):
            write(table, pa.table({"id": pa.array([worker * ROUNDS + r], pa.int64())}))
    except BaseException as e:     # reported to the parent
        errors.put(f"{worker}: {type(e).__name__}: {e}")
        raise


def race(root, accelerate):
    """(ids in the table, snapshot count) after RACERS processes committed
    ROUNDS one-row appends each to one table at the same time."""
    wh = Warehouse(root)
    wh.create("race", pa.schema([("id", pa.int64())]))
    run_workers(_racer, RACERS, root, accelerate)
    table = wh.table("race")
    ids = sorted(read(table).column("id").to_pylist())
    snapshots = [n for n in os.listdir(os.path.join(root, "db.db", "race", "snapshot"))
                 if n.startswith("snapshot-")]
    return ids, len(snapshots)


def test_processes_racing_commits_lose_no_snapshot(tmp_path):
    """Every commit is a snapshot of its own and every committed row is
    read back: LocalFileIO.rename refuses an existing snapshot across processes."""
    ids, snapshots = race(str(tmp_path / "wh"), accelerate=True)
    assert ids == list(range(RACERS * ROUNDS))
    assert snapshots == RACERS * ROUNDS


BARRIER_ROUNDS = 300


def _writer(table_dir, worker, barrier, results, accelerate):
    import rowformat.paimon as rp
    from pypaimon.common.file_io import FileIO
    from pypaimon.common.options import Options
    if accelerate:
        rp.accelerate()
    file_io = FileIO.get(table_dir, Options({}))
    won = []
    for r in range(BARRIER_ROUNDS):
        barrier.wait(60)
        if file_io.try_to_write_atomic(f"{table_dir}/snapshot/snapshot-{r}", f"{worker}"):
            won.append(r)
    results.put((worker, won))


def racing_atomic_writes(table_dir, accelerate):
    """{round: workers whose try_to_write_atomic of snapshot-<round> said it
    won}, and {round: the worker whose content the file holds}."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(RACERS), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(table_dir, w, barrier, results, accelerate))
             for w in range(RACERS)]
    for p in procs:
        p.start()
    winners: dict[int, list[int]] = {}
    for _ in procs:
        worker, won = results.get(timeout=300)
        for r in won:
            winners.setdefault(r, []).append(worker)
    for p in procs:
        p.join(60)
    held = {r: int(open(f"{table_dir}/snapshot/snapshot-{r}").read())
            for r in range(BARRIER_ROUNDS)}
    return winners, held


def test_one_writer_wins_each_snapshot_across_processes(tmp_path):
    """RACERS processes write snapshot-<r> at the same moment, BARRIER_ROUNDS
    times: exactly one wins each, and the file holds the winner's content
    (pypaimon's own rename let two win and kept the later one's)."""
    winners, held = racing_atomic_writes(str(tmp_path / "t"), accelerate=True)
    assert {r: len(w) for r, w in winners.items()} == {r: 1 for r in range(BARRIER_ROUNDS)}
    assert {r: w[0] for r, w in winners.items()} == held
    assert not [n for n in os.listdir(tmp_path / "t" / "snapshot") if not n.startswith("snapshot-")]


def test_a_commit_landing_after_the_check_is_not_replaced(tmp_path, monkeypatch):
    """The interleaving the races hit, made certain: another process writes
    snapshot-1 just after this one found it absent. pypaimon's rename
    (check, then rename(2)) replaced it and said it had won; this one fails."""
    from pypaimon.common.file_io import FileIO
    from pypaimon.common.options import Options
    rp.accelerate()
    file_io = FileIO.get(str(tmp_path), Options({}))
    target, mine = tmp_path / "snapshot-1", tmp_path / "mine.tmp"
    mine.write_text("mine")
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        try:
            return real_stat(path, *args, **kwargs)
        except FileNotFoundError:
            if os.fspath(path) == str(target) and not landed:
                landed.append(True)
                target.write_text("theirs")     # the other process's commit
            raise
    landed: list = []
    monkeypatch.setattr(os, "stat", stat)
    assert file_io.rename(str(mine), str(target)) is False
    monkeypatch.undo()
    assert landed and target.read_text() == "theirs" and mine.read_text() == "mine"


def _accelerated_file_io(path):
    from pypaimon.common.file_io import FileIO
    from pypaimon.common.options import Options
    rp.accelerate()
    return FileIO.get(str(path), Options({}))


def test_a_dangling_symlink_at_the_target_is_an_error_not_a_lost_race(tmp_path):
    """link(2) fails with EEXIST on a dangling symlink at snapshot-N, which
    pypaimon's exists() check does not see: the rename said "another writer
    won", every retry did the same, and the commit failed after 10 retries
    as "commit conflicts between multiple jobs" (issue 37, item 8)."""
    import errno
    file_io = _accelerated_file_io(tmp_path)
    target, mine = tmp_path / "snapshot-1", tmp_path / "mine.tmp"
    mine.write_text("mine")
    os.symlink(tmp_path / "nowhere", target)
    with pytest.raises(FileExistsError) as e:
        file_io.rename(str(mine), str(target))
    assert (e.value.errno, e.value.filename, e.value.strerror) == (
        errno.EEXIST, str(target), "the target is a symbolic link to a missing file, not a file "
                                   "another writer committed; refusing to commit")
    assert mine.read_text() == "mine" and os.path.islink(target)
    (tmp_path / "other").write_text("theirs")   # a real file there: another writer won
    os.unlink(target)
    os.link(tmp_path / "other", target)
    assert file_io.rename(str(mine), str(target)) is False


def test_an_unexpected_link_error_is_raised_naming_path_and_errno(tmp_path, monkeypatch):
    """Any other failure of link(2) (EIO, EACCES, ENOSPC...) used to return
    False as well, its errno nowhere: it is raised as it is."""
    import errno
    file_io = _accelerated_file_io(tmp_path)
    target, mine = tmp_path / "snapshot-1", tmp_path / "mine.tmp"
    mine.write_text("mine")

    def link(src, dst, *args, **kwargs):
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(src), None, str(dst))
    monkeypatch.setattr(os, "link", link)
    with pytest.raises(OSError) as e:
        file_io.rename(str(mine), str(target))
    assert str(e.value) == f"[Errno {errno.EIO}] Input/output error: '{mine}' -> '{target}'"
    assert mine.read_text() == "mine" and not os.path.lexists(target)
