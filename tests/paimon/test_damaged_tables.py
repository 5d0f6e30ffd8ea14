"""Tables whose metadata is damaged or hostile (issue 28, items 2, 6, 7):
the ``rowformat`` command exits 1 with a message naming the snapshot,
schema or manifest file; accelerated pypaimon raises TableMetadataError;
``verify`` checks the manifests' counts against the files."""
import glob
import json
import os
import shutil

import pyarrow as pa
import pytest

import rowformat
import rowformat.paimon as rp
from rowformat.errors import DatasetError, TableMetadataError
from rowformat.paimon import tables as tb

from .._fifo import call_guarded, make_fifo
from ._tables import read, rewrite_manifests, write
from .test_cli_tables import run

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])
ESCAPE = "../../outside/x.row"


@pytest.fixture
def table(wh):
    """(warehouse, table directory) of a row-tracking append table of one
    data file, 3 rows."""
    t = wh.create("t", SCHEMA, options={"row-tracking.enabled": "true"})
    write(t, pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}, schema=SCHEMA))
    return wh, os.path.join(wh.root, "db.db", "t")


def manifest_of(path):
    [m] = [p for p in glob.glob(os.path.join(path, "manifest", "manifest-*"))
           if "manifest-list-" not in p]
    return m


def set_file(key, value):
    def edit(record):
        record["_FILE"][key] = value
    return edit


# ---------------------------------------------------------------- item 2

def test_a_data_file_name_with_a_slash_is_refused(capfd, table):
    """A manifest entry named ../../outside/x.row used to be read (and
    verified ok) from outside the table: now every reader refuses it,
    naming the manifest."""
    wh, path = table
    [data] = wh.data_files("t")
    outside = os.path.join(os.path.dirname(data), ESCAPE)
    os.makedirs(os.path.dirname(outside))
    shutil.copy(data, outside)              # a valid .row file: only the name is wrong
    rewrite_manifests(path, set_file("_FILE_NAME", ESCAPE))
    said = f"{manifest_of(path)}: data file name '{ESCAPE}' is not a file name (Paimon " \
           f"writes names without '/'); refusing to read it"
    for command in ("verify", "head", "cat", "inspect"):
        code, out, err = run(capfd, command, path)
        assert (code, out, err) == (1, "", f"rowformat {command}: {said}\n"), command
    rp.accelerate()
    with pytest.raises(TableMetadataError) as e:
        read(wh.table("t"))
    assert str(e.value) == said
    with pytest.raises(TableMetadataError) as e:     # lookup_row_ids' routing
        tb.RowIdRouter.from_table(tb.open_table(path), path)
    assert str(e.value) == said


def test_a_manifest_list_naming_a_path_is_refused(capfd, table):
    _, path = table
    snap_path = os.path.join(path, "snapshot", "snapshot-1")
    snap = json.load(open(snap_path))
    snap["baseManifestList"] = "../../../x"
    json.dump(snap, open(snap_path, "w"))
    code, out, err = run(capfd, "verify", path)
    assert (code, out) == (1, "")
    assert err == (f"rowformat verify: {path}/manifest: manifest list name '../../../x' is not "
                   f"a file name (Paimon writes names without '/'); refusing to read it\n")


# ---------------------------------------------------------------- item 6

def _damage_schema(path, text):
    with open(os.path.join(path, "schema", "schema-0"), "w") as f:
        f.write(text)
    return os.path.join(path, "schema", "schema-0"), "schema"


def _damage_snapshot(path, text):
    with open(os.path.join(path, "snapshot", "snapshot-1"), "w") as f:
        f.write(text)
    return os.path.join(path, "snapshot", "snapshot-1"), "snapshot"


def _truncate_manifest(path, _):
    m = manifest_of(path)
    with open(m, "r+b") as f:
        f.truncate(os.path.getsize(m) // 2)
    return m, "manifest"


def test_an_unknown_schema_id_is_named(capfd, table):
    """A manifest entry of a schema the table does not have: pypaimon fails
    on it with an AttributeError (rowformat said "a bug", exit 3)."""
    _, path = table
    rewrite_manifests(path, set_file("_SCHEMA_ID", 7))
    code, out, err = run(capfd, "verify", path)
    assert (code, out) == (1, "")
    assert err == (f"rowformat verify: {manifest_of(path)}: an entry names schema 7, but the "
                   f"table has no {path}/schema/schema-7\n")


DEEP = "[" * 5000 + "]" * 5000
DAMAGE = {
    "schema not JSON": (_damage_schema, "{not json"),
    "schema nested 5000 deep": (_damage_schema, DEEP),
    "snapshot not JSON": (_damage_snapshot, "{not json"),
    "snapshot nested 5000 deep": (_damage_snapshot, DEEP),
    "truncated manifest": (_truncate_manifest, None),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damaged_metadata_is_bad_input_naming_the_file(capfd, table, case):
    """Each used to exit 3 ("a bug in rowformat"), most without naming the
    file: now exit 1, the message naming the file and what pypaimon said."""
    wh, path = table
    damage, text = DAMAGE[case]
    where, what = damage(path, text)
    for command in ("verify", "head"):
        code, out, err = run(capfd, command, path)
        assert code == 1 and out == "", (command, err)
        assert err.startswith(f"rowformat {command}: {where}: damaged Paimon {what}"), err
        assert "bug in rowformat" not in err
    with pytest.raises(TableMetadataError, match=f"^{where}: damaged Paimon {what}"):
        t = tb.open_table(path)                 # the Spark source's way in
        list(tb.read_batches(t, tb.plan(t), ["id"]))
    if what == "manifest":                      # pypaimon's own scan, accelerated
        rp.accelerate()
        with pytest.raises(TableMetadataError, match=f"^{where}: damaged Paimon {what}"):
            read(wh.table("t"))


# ---------------------------------------------------------------- item 7

@pytest.mark.parametrize("key, field, said", [
    ("_ROW_COUNT", "rows", "the manifest's _ROW_COUNT is 2, but the file holds 3 rows"),
    ("_FILE_SIZE", "size", "the manifest's _FILE_SIZE is {}, but the file has {} bytes"),
])
def test_verify_checks_the_manifest_counts(capfd, table, key, field, said):
    """verify used to say ok when a manifest's _ROW_COUNT or _FILE_SIZE
    disagreed with the data file (a _ROW_ID lookup then misses a row a scan returns)."""
    wh, path = table
    [data] = wh.data_files("t")
    size = os.path.getsize(data)
    rewrite_manifests(path, set_file(key, 2 if key == "_ROW_COUNT" else size + 1))
    code, out, _ = run(capfd, "verify", path)
    assert code == 1
    assert out.splitlines() == [
        f"{data}: file: {said.format(size + 1, size)}",
        f"FAILED {data}: 1 problem(s)",
        f"FAILED {path} (snapshot 1): 1 of 1 .row data file(s) have problems"]


# ---------------------------------------------------------------- issue 37, item 1

def _three_files(wh):
    """The table directory of an append table of three data files of 1,000
    rows each (ids 0-999, 1000-1999, 2000-2999), and the files by first id."""
    t = wh.create("three", SCHEMA)
    for k in range(3):
        ids = range(1000 * k, 1000 * (k + 1))
        write(t, pa.table({"id": pa.array(ids, pa.int64()), "s": [str(i) for i in ids]},
                          schema=SCHEMA))
    path = os.path.join(wh.root, "db.db", "three")
    by_first = {}
    for data in wh.data_files("three"):
        with rowformat.RowFileReader(data, "id BIGINT, s STRING") as r:
            by_first[r.get(0)[0]] = data
    return path, [by_first[k] for k in (0, 1000, 2000)]


@pytest.mark.parametrize("count", [0, -500, 999, 1001])
def test_row_dataset_checks_each_manifest_row_count_against_its_file(wh, count):
    """A manifest _ROW_COUNT of 0 used to drop that file's 1,000 rows from
    RowDataset (len 2,000, no error; the file was never opened), and -500
    routed rows to the wrong file (row 0 was id 2000): every count is now
    checked against its file's footer when the dataset is made."""
    path, files = _three_files(wh)
    name = os.path.basename(files[1])

    def edit(record):
        if record["_FILE"]["_FILE_NAME"] == name:
            record["_FILE"]["_ROW_COUNT"] = count
    rewrite_manifests(path, edit)
    with pytest.raises(DatasetError) as e:
        rowformat.RowDataset(path)
    assert str(e.value) == (f"{path}: data file {files[1]} holds 1000 rows, but its manifest "
                            f"entry's _ROW_COUNT is {count}")


# ---------------------------------------------------------------- issue 37, item 5

def _metadata_file(path, which):
    snap = json.load(open(os.path.join(path, "snapshot", "snapshot-1")))
    return {"LATEST": os.path.join(path, "snapshot", "LATEST"),
            "snapshot": os.path.join(path, "snapshot", "snapshot-1"),
            "schema": os.path.join(path, "schema", "schema-0"),
            "manifest list": os.path.join(path, "manifest", snap["deltaManifestList"]),
            "manifest": manifest_of(path)}[which]


@pytest.mark.parametrize("which", ["LATEST", "snapshot", "schema", "manifest list", "manifest"])
def test_a_named_pipe_among_the_metadata_files_is_refused(capfd, table, which):
    """pypaimon opens a table's metadata files with a plain open(), which
    blocked forever on a named pipe: the table commands, RowDataset and
    accelerated reads hung. Now each raises TableMetadataError naming the file."""
    wh, path = table
    fifo = make_fifo(_metadata_file(path, which))
    said = f"{fifo}: is a named pipe, not a regular file"
    for command in ("verify", "cat", "inspect"):
        result = {}
        assert call_guarded(lambda: result.update(zip("coe", run(capfd, command, path))),
                            fifo) is None
        assert (result["c"], result["o"], result["e"]) == (1, "", f"rowformat {command}: {said}\n")
    error = call_guarded(lambda: rowformat.RowDataset(path), fifo)
    assert type(error) is TableMetadataError and str(error) == said
    rp.accelerate()
    error = call_guarded(lambda: read(wh.table("t")), fifo)
    while not isinstance(error, TableMetadataError):    # (pypaimon wraps a schema's error)
        error = error.__cause__
    assert str(error) == said


# ---------------------------------------------------------------- issue 37, item 13

def test_duplicate_field_names_in_the_schema_file_are_named(capfd, table):
    """A schema file naming a field twice: head and cat exited 2 with
    pypaimon's "Column id does not exist in schema" (a usage error, naming
    no file), inspect said nothing and verify blamed each data file. Every
    command now exits 1 naming the schema file, as for any damaged schema."""
    _, path = table
    where = os.path.join(path, "schema", "schema-0")
    with open(where) as f:
        schema = json.load(f)
    schema["fields"][1]["name"] = "id"
    with open(where, "w") as f:
        json.dump(schema, f)
    said = f"{where}: duplicate field name 'id'"
    for command in ("head", "cat", "verify", "inspect"):
        assert run(capfd, command, path) == (1, "", f"rowformat {command}: {said}\n"), command
    with pytest.raises(TableMetadataError) as e:
        rowformat.RowDataset(path)
    assert str(e.value) == said
