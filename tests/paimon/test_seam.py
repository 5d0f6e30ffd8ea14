"""The seam to pypaimon: status() and the one warning when acceleration
cannot apply, pypaimon's native switch, ROWFORMAT_ACCELERATE in processes
nobody told, and the README's own forms."""
import importlib.metadata
import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import pyarrow as pa
import pytest

import rowformat
import rowformat.paimon as rp
from rowformat.paimon import _patches, _reader
from rowformat.paimon import tables as tb

from ._tables import read, sort, write

PACKAGE = pathlib.Path(rp.__file__).resolve().parent.parent


def _append_table(wh, name="t", n=1000, **options):
    data = pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"v{i}" for i in range(n)]})
    t = wh.create(name, data.schema, options=options)
    write(t, data)
    return t, data


def _untested(monkeypatch, version="9.9.9"):
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: version if name == "pypaimon" else real(name))
    monkeypatch.setattr(rp, "_warned", False)


def test_status_names_every_patch_and_says_when_it_is_on():
    version = importlib.metadata.version("pypaimon")
    off = rp.status()
    assert off.pypaimon == version and off.reason is None and not off.accelerated
    assert set(off.patched) | set(off.skipped) == {p.name for p in _patches.POINTS}
    assert "pypaimon.read.split_read.FormatRowReader" in off.patched
    # 2.0.0 has no native reader, and its .blob files stay its own (_patches._BLOB_VERSIONS)
    skipped = {"pypaimon.read.table_read.TableRead._native_split_files_supported":
               "not in pypaimon 2.0.0"}
    skipped.update({p.name: "not applied to pypaimon 2.0.0" for p in _patches.POINTS
                    if "Blob" in p.attr or p.attr == "TableRead.to_torch"
                    or p.attr.startswith("CompositeDataWriter.")})
    # the writers of BLOB and vector tables' ordinary columns differ by release
    only_2_0 = {f"pypaimon.write.writer.{m}._write_normal_data_to_file": "not applied to "
                f"pypaimon {version}" for m in ("dedicated_format_writer.DedicatedFormatWriter",
                                                "data_vector_writer.DataVectorWriter")}
    assert off.skipped == (only_2_0 if version != "2.0.0" else skipped)
    rp.accelerate()
    on = rp.status()
    assert on.accelerated and on.patched == off.patched
    assert on.as_dict()["pypaimon"] == version


def test_untested_pypaimon_gives_one_warning_and_stock_rows(monkeypatch, wh):
    t, data = _append_table(wh)
    _untested(monkeypatch)
    status = rp.status()
    assert not status.accelerated and "pypaimon 9.9.9 is not a version" in status.reason
    opened = _reader.files_opened()
    with pytest.warns(rp.AccelerationWarning, match="9.9.9") as caught:
        for _ in range(3):          # each read asks; the process hears it once
            batches = list(tb.read_batches(t, tb.plan(t), ["id", "s"]))
    assert len(caught) == 1
    assert sort(pa.Table.from_batches(batches), "id").equals(data)
    assert _reader.files_opened() == opened and not rp.is_accelerated()


def test_read_batches_holds_no_patch_between_batches(wh):
    t, data = _append_table(wh, n=200_000)
    it = tb.read_batches(t, tb.plan(t), ["id"])
    first = next(it)
    assert not rp.is_accelerated()      # a paused generator leaves pypaimon stock
    rest = list(it)
    assert sum(b.num_rows for b in [first, *rest]) == 200_000


def test_plan_is_made_once_and_remade_when_pypaimon_changes(monkeypatch):
    first = _patches.plan()
    assert _patches.plan() is first
    from pypaimon.read.reader import format_row_reader
    monkeypatch.setattr(format_row_reader.FormatRowReader, "__init__",
                        lambda self, file_io, file_path, read_fields, full_fields,
                        push_down_predicate, batch_size=1, row_indices=None, new=None: None)
    with pytest.raises(rp.PaimonIntegrationError, match="FormatRowReader takes"):
        _patches.plan()


def test_no_source_text_checks_and_no_private_imports_from_outside():
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        assert "getsource" not in text, path
        if "paimon" not in path.relative_to(PACKAGE).parts[:2]:
            for line in text.splitlines():
                assert not (("rowformat.paimon" in line or "..paimon" in line)
                            and "import _" in line), (path, line)


# -- read.native.enabled ------------------------------------------------------------
def test_native_switch_reads_row_files_with_rowformat(wh):
    pytest.importorskip("pypaimon_rust")
    # one commit: every bucket holds one file, where pypaimon-rust 0.4.0
    # decodes a primary-key .row file with the wrong field layout
    data = pa.table({"k": pa.array(range(40), pa.int64()), "a": pa.array(range(40), pa.int64()),
                     "x": pa.array([i / 3 for i in range(40)], pa.float64())})
    schema = pa.schema([pa.field("k", pa.int64(), False), ("a", pa.int64()), ("x", pa.float64())])
    t = wh.create("pk", schema, primary_keys=["k"], options={"bucket": 2})
    write(t, data.cast(schema))
    stock = sort(read(t), "k")
    assert stock.equals(data.cast(schema))
    native = t.copy({"read.native.enabled": "true"})
    opened = _reader.files_opened()
    rp.accelerate()
    assert sort(read(native), "k").equals(stock)
    assert _reader.files_opened() - opened == 2          # both buckets' files, by rowformat
    rp.restore()


# -- ROWFORMAT_ACCELERATE -------------------------------------------------------------
def _hook_installed() -> bool:
    import site
    dirs = site.getsitepackages() + [site.getusersitepackages()]
    return any(os.path.exists(os.path.join(d, "rowformat-accelerate.pth")) for d in dirs)


needs_hook = pytest.mark.skipif(
    not _hook_installed(),
    reason="rowformat-accelerate.pth is not in site-packages: a wheel installs it, and so "
           "does run.sh for its editable install; a plain 'pip install -e .' does not")


def _run(code: str, env_value=None, **env):
    full = {k: v for k, v in os.environ.items() if k != rp.ENV_VAR}
    if env_value is not None:
        full[rp.ENV_VAR] = env_value
    full.update(env)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


READ_WITH_PYPAIMON_ONLY = """
    import sys
    from pypaimon import CatalogFactory
    t = CatalogFactory.create({{"warehouse": {warehouse!r}}}).get_table("db.t")
    rb = t.new_read_builder()
    n = rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows
    loaded = sorted(m for m in sys.modules if m == "rowformat" or m.startswith("rowformat."))
    opened = sys.modules["rowformat.paimon._reader"].files_opened() \\
        if "rowformat.paimon._reader" in sys.modules else 0
    print(n, opened, len(loaded))
"""


@needs_hook
def test_env_var_accelerates_a_process_that_never_calls_rowformat(wh):
    _, data = _append_table(wh, n=500)
    code = READ_WITH_PYPAIMON_ONLY.format(warehouse=wh.root)
    rows, opened, loaded = _run(code, "1")
    assert (rows, opened) == ("500", "1") and int(loaded) > 0
    assert _run(code, None) == ["500", "0", "0"]           # unset: no rowformat module at all
    assert _run(code, "0") == ["500", "0", "0"]


@needs_hook
def test_env_var_with_an_untested_pypaimon_warns_once_and_reads_stock(wh):
    _append_table(wh, n=50)
    code = """
        import importlib.metadata, warnings
        real = importlib.metadata.version
        importlib.metadata.version = lambda n: "9.9.9" if n == "pypaimon" else real(n)
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as caught:
    """ + textwrap.indent(textwrap.dedent(READ_WITH_PYPAIMON_ONLY.format(warehouse=wh.root)),
                          " " * 12) + """
        print(sum(w.category.__name__ == "AccelerationWarning" for w in caught))
    """
    # (the hook runs at pypaimon's import, after the version lookup was replaced)
    rows, opened, _, warned = _run(code, "1")
    assert (rows, opened, warned) == ("50", "0", "1")


@needs_hook
def test_env_var_survives_a_find_spec_before_the_import(wh):
    """importlib.util.find_spec("pypaimon") (an optional-dependency check)
    used to uninstall the hook, so the import after it was stock, silently
    (issue 37, item 6); a first import that fails keeps it too."""
    _append_table(wh, n=50)
    code = textwrap.dedent("""
        import importlib.util, sys, warnings
        warnings.simplefilter("error")
        assert importlib.util.find_spec("pypaimon") is not None
        sys.modules["pypaimon"] = None          # a first import that fails
        try:
            import pypaimon
        except ImportError:
            pass
        del sys.modules["pypaimon"]
    """) + textwrap.dedent(READ_WITH_PYPAIMON_ONLY.format(warehouse=wh.root))
    rows, opened, _ = _run(code, "1")
    assert (rows, opened) == ("50", "1")


@needs_hook
def test_env_var_warns_when_pypaimon_loads_without_the_hook():
    """A pypaimon that another finder (ahead of the hook) loads is stock: an
    AccelerationWarning says so at the next import, not silence."""
    code = """
        import importlib.machinery, sys, warnings
        warnings.simplefilter("always")
        class Ahead:                # finds pypaimon before the hook does
            @staticmethod
            def find_spec(name, path=None, target=None):
                return importlib.machinery.PathFinder.find_spec(name, path, target) \
                    if name == "pypaimon" else None
        sys.meta_path.insert(0, Ahead)
        with warnings.catch_warnings(record=True) as caught:
            import pypaimon
            import pypaimon.table.file_store_table, json.tool
        import rowformat.paimon as rp
        print(rp.is_accelerated())
        print(*[w.message for w in caught], sep="\\n")
    """
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, rp.ENV_VAR: "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "False", "rowformat cannot accelerate pypaimon, which reads and writes .row files "
        "itself (about 100x slower): ROWFORMAT_ACCELERATE is set, but pypaimon was "
        "imported without rowformat's import hook (another finder ahead of it on "
        "sys.meta_path?)"]


# -- worker processes ---------------------------------------------------------------
WORKER_PROBE = '''
import os, sys

def report(rows):
    """DataLoader collate_fn: runs in the worker process."""
    reader = sys.modules.get("rowformat.paimon._reader")
    return (len(rows), os.getpid(), reader.files_opened() if reader else 0,
            [r["id"] for r in rows])
'''


@needs_hook
@pytest.mark.parametrize("context", ["spawn", "fork"])
def test_torch_dataloader_workers_decode_with_rowformat(wh, tmp_path, context):
    pytest.importorskip("torch")
    # four files of a split each: both workers get splits
    t, data = _append_table(wh, n=3000, **{"source.split.target-size": "1 b"})
    for i in range(3):
        write(t, data.slice(0, 10).set_column(0, "id", pa.array(range(3000 + 10 * i,
                                                                  3010 + 10 * i), pa.int64())))
    (tmp_path / "probe.py").write_text(WORKER_PROBE)
    code = f"""
        import collections, os
        from torch.utils.data import DataLoader
        from pypaimon import CatalogFactory
        import probe
        t = CatalogFactory.create({{"warehouse": {wh.root!r}}}).get_table("db.t")
        rb = t.new_read_builder()
        ds = rb.new_read().to_torch(rb.new_scan().plan().splits(), streaming=True)
        loader = DataLoader(ds, batch_size=256, num_workers=2, collate_fn=probe.report,
                            multiprocessing_context={context!r})
        ids, opened = [], collections.defaultdict(int)
        for rows, pid, n, batch_ids in loader:
            assert pid != os.getpid()
            opened[pid] = max(opened[pid], n)
            ids += batch_ids
        print(len(ids), len(set(ids)), sum(opened.values()), len(opened))
    """
    rows, unique, opened, workers = _run(code, "1", PYTHONPATH=str(tmp_path))
    assert (rows, unique, opened, workers) == ("3030", "3030", "4", "2")


RAY_PROBE = '''
import os, sys

def report(batch):
    """map_batches after the read: Ray fuses it into the read task's worker."""
    reader = sys.modules.get("rowformat.paimon._reader")
    n = len(batch["id"])
    return {"rows": [n], "pid": [os.getpid()], "opened": [reader.files_opened() if reader else 0]}
'''


@needs_hook
def test_ray_read_paimon_tasks_decode_with_rowformat(wh, tmp_path):
    pytest.importorskip("ray.data")
    _append_table(wh, n=2000)
    (tmp_path / "probe.py").write_text(RAY_PROBE)
    code = f"""
        import os, sys
        import ray
        from pypaimon.ray import read_paimon
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={{"env_vars": {{"ROWFORMAT_ACCELERATE": "1"}},
                               "py_modules": [{str(tmp_path / "probe.py")!r}]}})
        import probe
        ds = read_paimon("db.t", {{"warehouse": {wh.root!r}}}).map_batches(probe.report)
        out = ds.take_all()
        rows = sum(r["rows"] for r in out)
        pids = {{r["pid"] for r in out}}
        opened = max(r["opened"] for r in out)
        driver = any(m.startswith("rowformat") for m in sys.modules)
        print(rows, int(os.getpid() in pids), int(opened > 0), int(driver))
        ray.shutdown()
    """
    rows, in_driver, opened, driver_loaded = _run(code, None, PYTHONPATH=str(tmp_path))
    # every row read in Ray's workers, by rowformat, which the driver never imported
    assert (rows, in_driver, opened, driver_loaded) == ("2000", "0", "1", "0")


def test_readme_paimon_example_writes_and_reads_through_rowformat(tmp_path):
    """The README's example, as written (its warehouse moved into tmp_path):
    the data file is rowformat's (Paimon Java's frames, no content size)."""
    readme = (PACKAGE.parent / "README.md")
    if not readme.exists():
        pytest.skip("the README is not beside the tests (an installed wheel's test run)")
    text = readme.read_text()
    start = text.index("<!-- readme-example: paimon -->")
    code = text[text.index("```python", start) + len("```python"):text.index("```\n", start + 40)]
    code = code.replace("/tmp/rowformat-readme-warehouse", str(tmp_path / "w"))
    out = _run(code, None)
    assert out == ["3", "1"]
    [path] = list((tmp_path / "w").rglob("data-*.row"))
    with open(path, "rb") as f:
        head = f.read(6)
    # a ZSTD frame header without Frame_Content_Size (pypaimon's own writer sets one)
    # (the FCS flag bits and Single_Segment clear, else a content size follows)
    assert head[:4] == b"\x28\xb5\x2f\xfd" and head[4] & 0xE0 == 0



def test_row_dataset_over_an_append_table_is_pypaimons_rows(wh):
    t, _ = _append_table(wh, n=900)
    extra = pa.table({"id": pa.array(range(900, 1000), pa.int64()),
                      "s": [f"v{i}" for i in range(900, 1000)]})
    write(t, extra)
    stock = read(t)                        # pypaimon's rows, in its file order
    ds = rowformat.RowDataset(os.path.join(wh.root, "db.db", "t"))
    assert len(ds) == 1000
    rows = ds.take(list(range(999, -1, -1)))
    assert sorted(rows.to_pylist(), key=lambda r: r["id"]) == sort(stock, "id").to_pylist()
    pk = wh.create("pk", pa.schema([pa.field("k", pa.int64(), False)]), primary_keys=["k"],
                   options={"bucket": 1})
    write(pk, pa.table({"k": pa.array([1], pa.int64())}))
    with pytest.raises(rowformat.RowFormatError, match="primary-key"):
        rowformat.RowDataset(os.path.join(wh.root, "db.db", "pk"))


def test_row_dataset_of_a_row_tracking_table_goes_by_row_id(wh):
    n = 300
    data = pa.table({"id": pa.array(range(3 * n), pa.int64()), "s": [f"v{i}" for i in range(3 * n)]})
    t = wh.create("rt", data.schema, options={"row-tracking.enabled": "true"})
    with rp.accelerated():
        for k in range(3):
            write(t, data.slice(k * n, n))
    by_id = {r["_ROW_ID"]: r for r in read(t, ["_ROW_ID", "id", "s"]).to_pylist()}
    ds = rowformat.RowDataset(os.path.join(wh.root, "db.db", "rt"))
    assert list(ds.first_row_ids) == sorted(ds.first_row_ids)
    ids = ds.row_ids(range(len(ds)))
    assert sorted(ids.tolist()) == sorted(by_id)
    # dataset row i is the row whose _ROW_ID is row_ids(i), by pypaimon's read
    rows = ds.take(range(len(ds))).to_pylist()
    assert all(by_id[i]["id"] == r["id"] and by_id[i]["s"] == r["s"] for i, r in zip(ids, rows))
    pick = [int(ids[5]), int(ids[-1]), int(ids[5]), int(ids[n])]
    assert [r["id"] for r in ds.take_row_ids(pick).to_pylist()] == [by_id[i]["id"] for i in pick]
    with pytest.raises(rowformat.RowIndexError, match="_ROW_ID"):
        ds.take_row_ids([int(ids.max()) + 1])
    plain = wh.create("plain", data.schema)
    write(plain, data.slice(0, 10))
    with pytest.raises(rowformat.RowFormatError, match="row-tracking"):
        rowformat.RowDataset(os.path.join(wh.root, "db.db", "plain")).row_ids([0])
