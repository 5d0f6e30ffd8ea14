"""``rowformat inspect/verify/head/cat`` on Paimon table directories."""
import csv
import io
import json
import os
import sys
import time

import pyarrow as pa
import pytest

import rowformat.paimon as rp
from rowformat import CorruptFileError, cli

from .._fifo import call_guarded, make_fifo
from ._tables import read, sort, write

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.float64()),
                    ("s", pa.string())])


def run(capfd, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capfd.readouterr()
    return code, out, err


def _data(ids, p):
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [p(i) for i in ids],
                     "v": [i * 0.5 for i in ids], "s": [f"s{i}" * 3 for i in ids]},
                    schema=SCHEMA)


@pytest.fixture
def append(wh):
    t = wh.create("app", SCHEMA, partition_keys=["p"],
                  options={"bucket": "2", "bucket-key": "id"})
    write(t, _data(range(0, 300), lambda i: "ab"[i % 2]))
    write(t, _data(range(300, 400), lambda i: "c"))
    return wh, os.path.join(wh.root, "db.db", "app")


@pytest.fixture
def pk(wh):
    t = wh.create("pk", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    write(t, _data(range(0, 50), lambda i: "x"))
    write(t, _data(range(25, 75), lambda i: "y"))
    return wh, os.path.join(wh.root, "db.db", "pk")


def _rows_of_jsonl(out):
    return [json.loads(line) for line in out.splitlines()]


def test_inspect_lists_the_snapshot_files(capfd, append):
    wh, path = append
    code, out, _ = run(capfd, "inspect", path, "--json")
    assert code == 0
    info = json.loads(out)
    assert info["snapshot"] == 2 and info["schema_id"] == 0
    assert info["partition_keys"] == ["p"] and info["primary_keys"] == []
    assert info["file_format"] == "row"
    assert sorted(f["path"] for f in info["files"]) == wh.data_files("app")
    assert {f["partition"] for f in info["files"]} == {"p=a", "p=b", "p=c"}
    assert {f["bucket"] for f in info["files"]} <= {0, 1}
    assert info["total_rows"] == 400
    assert all(f["size"] == os.path.getsize(f["path"]) for f in info["files"])
    code, out, _ = run(capfd, "inspect", path)
    assert code == 0 and "snapshot" in out and "p=c" in out and "bucket-" in out


def test_inspect_older_snapshot(capfd, append):
    _, path = append
    code, out, _ = run(capfd, "inspect", path, "--json", "--snapshot", "1")
    assert code == 0
    info = json.loads(out)
    assert info["snapshot"] == 1 and info["total_rows"] == 300
    assert {f["partition"] for f in info["files"]} == {"p=a", "p=b"}


def test_verify_ok(capfd, append, pk):
    for _, path in (append, pk):
        code, out, _ = run(capfd, "verify", path)
        assert code == 0, out
        assert out.splitlines()[-1].startswith(f"ok {path}")
    code, out, _ = run(capfd, "verify", pk[1], "--json")
    assert code == 0 and json.loads(out)["ok"] is True


def test_verify_names_a_corrupt_file(capfd, append):
    wh, path = append
    victim = wh.data_files("app")[0]
    data = bytearray(open(victim, "rb").read())
    for i in range(8, min(len(data), 40)):
        data[i] ^= 0xFF
    with open(victim, "wb") as f:
        f.write(bytes(data))
    code, out, _ = run(capfd, "verify", path)
    assert code == 1
    assert f"FAILED {victim}" in out
    assert out.splitlines()[-1].startswith(f"FAILED {path}")
    code, out, _ = run(capfd, "verify", path, "--json")
    assert code == 1
    report = json.loads(out)
    assert [f["file"] for f in report["files"] if not f["ok"]] == [victim]


@pytest.mark.parametrize("kind", ["named pipe", "directory"])
def test_data_file_that_is_not_a_regular_file(capfd, append, kind):
    """verify, cat and an accelerated read of a table whose data file is a
    named pipe (which used to block forever) or a directory: an error naming
    the file, at once (issue 28, item 3)."""
    wh, path = append
    victim = wh.data_files("app")[0]
    if kind == "named pipe":
        make_fifo(victim)
    else:
        os.unlink(victim)
        os.mkdir(victim)
    said = f"{victim}: is a {kind}, not a regular file"
    result = {}
    assert call_guarded(lambda: result.update(zip("coe", run(capfd, "cat", path))), victim) is None
    assert result["c"] == 1 and said in result["e"], result
    # verify reports it as that file's problem, and every other file's result
    assert call_guarded(lambda: result.update(zip("coe", run(capfd, "verify", path))),
                        victim) is None
    lines = result["o"].splitlines()
    assert result["c"] == 1 and f"{victim}: file: is a {kind}, not a regular file" in lines
    assert f"FAILED {victim}: 1 problem(s)" in lines
    assert sorted(line.split(" ")[1].rstrip(":") for line in lines if line.startswith("ok ")) \
        == sorted(set(wh.data_files("app")) - {victim})
    rp.accelerate()
    error = call_guarded(lambda: read(wh.table("app")), victim)
    assert isinstance(error, CorruptFileError) and said in str(error)


EVIL = "data-\x1b[2K\r\nok forged\u202e.row"
EVIL_SHOWN = "data-\\x1b[2K\\r\\nok forged\\u202e.row"


def test_names_from_table_metadata_are_printed_escaped(capfd, wh, monkeypatch):
    """Issue 28, item 10: whoever writes a table's metadata chooses its
    partition values and data file names; inspect and verify print them
    escaped, so they cannot forge result lines or drive the terminal."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = wh.create("evil", schema, partition_keys=["p"])
    write(t, pa.table({"id": [1], "p": ["a\x1b[31m\nok forged"]}, schema=schema))
    path = os.path.join(wh.root, "db.db", "evil")
    code, out, _ = run(capfd, "inspect", path)
    assert code == 0 and "p=a\\x1b[31m\\nok forged" in out
    # a data file name as the manifest could give it
    import dataclasses

    from rowformat.paimon import tables
    [real] = wh.data_files("evil")
    evil = os.path.join(os.path.dirname(real), EVIL)
    os.rename(real, evil)
    named = tables.data_files
    monkeypatch.setattr(tables, "data_files",
                        lambda *a: [dataclasses.replace(d, path=evil) for d in named(*a)])
    from rowformat.cli.output import printable
    # (pypaimon 2.0.0 keeps the partition value's control characters in its directory name)
    shown = printable(evil)
    assert shown.endswith(EVIL_SHOWN)
    code, out, _ = run(capfd, "verify", path)
    assert code == 0 and out.splitlines() == [f"ok {shown}: 1 row in 1 block",
                                              f"ok {path} (snapshot 1): 1 .row data file(s)"]
    code, out, _ = run(capfd, "inspect", path)
    assert code == 0 and EVIL_SHOWN in out
    size = os.path.getsize(evil)
    with open(evil, "r+b") as f:
        f.truncate(10)
    code, out, _ = run(capfd, "verify", path)
    lines = out.splitlines()
    assert code == 1 and len(lines) == 4 and lines[0].startswith(f"{shown}: file: ")
    assert lines[1] == f"{shown}: file: the manifest's _FILE_SIZE is {size}, but the file has " \
                       f"10 bytes"
    assert lines[2:] == [f"FAILED {shown}: 2 problem(s)",
                         f"FAILED {path} (snapshot 1): 1 of 1 .row data file(s) have problems"]
    assert not any(c in out for c in "\x1b\r\u202e")


def test_verify_pk_checks_the_system_fields(capfd, pk, monkeypatch):
    # Verifying with the bare columns (no _KEY_/_SEQUENCE_NUMBER/_VALUE_KIND)
    # must fail: the layout matters.
    from rowformat.paimon import _table_io    # where tables.file_schema finds the fields
    monkeypatch.setattr(_table_io, "file_fields",
                        lambda table, meta: list(table.schema_manager.get_schema(0).fields))
    code, out, _ = run(capfd, "verify", pk[1])
    assert code == 1


def test_head_and_cat_equal_pypaimon(capfd, append, pk):
    for (wh, path), name in ((append, "app"), (pk, "pk")):
        expected = sort(read(wh.table(name)), "id").to_pylist()
        code, out, _ = run(capfd, "cat", path)
        assert code == 0
        assert sorted(_rows_of_jsonl(out), key=lambda r: r["id"]) == expected
        code, out, _ = run(capfd, "head", path, "-n", "7", "-f", "jsonl", "-c", "s,id")
        assert code == 0
        rows = _rows_of_jsonl(out)
        assert len(rows) == 7 and all(list(r) == ["s", "id"] for r in rows)
        by_id = {r["id"]: r for r in expected}
        assert all(r["s"] == by_id[r["id"]]["s"] for r in rows)
    code, out, _ = run(capfd, "cat", pk[1], "-f", "csv", "-c", "id")
    assert code == 0
    assert sorted(int(r["id"]) for r in csv.DictReader(io.StringIO(out))) == list(range(75))


def test_cat_snapshot_picks_an_older_snapshot(capfd, pk):
    _, path = pk
    code, out, _ = run(capfd, "cat", path, "--snapshot", "1")
    assert code == 0
    rows = _rows_of_jsonl(out)
    assert sorted(r["id"] for r in rows) == list(range(50))
    assert {r["p"] for r in rows} == {"x"}
    code, out, _ = run(capfd, "cat", path)
    assert {r["p"] for r in _rows_of_jsonl(out) if r["id"] >= 25} == {"y"}


def test_usage_errors(capfd, append, tmp_path):
    _, path = append
    for argv in (["cat", path, "--rows", "1:3"], ["cat", path, "-c", "nope"],
                 ["inspect", path, "--snapshot", "9"], ["verify", path, "-s", "a INT"],
                 ["inspect", path, "--blocks"]):
        code, _, err = run(capfd, *argv)
        assert code == 2, argv
        assert "error" in err


def test_parquet_table(capfd, wh):
    t = wh.create("pq", SCHEMA, options={"file.format": "parquet", "bucket": "1",
                                         "bucket-key": "id"})
    write(t, _data(range(10), lambda i: "a"))
    path = os.path.join(wh.root, "db.db", "pq")
    code, out, _ = run(capfd, "inspect", path, "--json")
    assert code == 0
    info = json.loads(out)
    assert info["file_format"] == "parquet" and len(info["files"]) == 1
    assert info["files"][0]["path"].endswith(".parquet")
    code, _, err = run(capfd, "verify", path)
    assert code == 2 and "only .row" in err
    code, out, _ = run(capfd, "head", path, "-n", "3", "-f", "jsonl")
    assert code == 0 and len(out.splitlines()) == 3


def test_without_pypaimon_is_a_usage_error(capfd, append, monkeypatch):
    _, path = append
    monkeypatch.setitem(sys.modules, "pypaimon", None)
    code, _, err = run(capfd, "inspect", path)
    assert code == 2
    assert "pip install 'rowformat[paimon]'" in err


def test_snapshot_on_a_file_is_a_usage_error(capfd, append):
    wh, _ = append
    code, _, err = run(capfd, "inspect", wh.data_files("app")[0], "--snapshot", "1")
    assert code == 2 and "--snapshot" in err


def test_inspect_says_how_the_table_is_read_and_cat_is_right_either_way(capfd, pk, monkeypatch):
    import importlib.metadata

    import rowformat.paimon as rp
    wh, path = pk
    expected = sort(read(wh.table("pk")), "id").to_pylist()
    code, out, _ = run(capfd, "inspect", path, "--json")
    assert code == 0 and json.loads(out)["acceleration"] == {
        "on": True, "pypaimon": importlib.metadata.version("pypaimon"), "reason": None}
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: "9.9.9" if name == "pypaimon" else real(name))
    monkeypatch.setattr(rp, "_warned", False)
    with pytest.warns(rp.AccelerationWarning, match="9.9.9"):     # (its plan reads manifests)
        code, out, _ = run(capfd, "inspect", path)
    assert code == 0
    [line] = [x for x in out.splitlines() if "read with" in x]
    assert "stock pypaimon 9.9.9 (not accelerated: pypaimon 9.9.9 is not a version" in line
    monkeypatch.setattr(rp, "_warned", False)
    with pytest.warns(rp.AccelerationWarning, match="9.9.9"):
        code, out, _ = run(capfd, "cat", path)
    assert code == 0
    assert sorted(_rows_of_jsonl(out), key=lambda r: r["id"]) == expected


@pytest.mark.parametrize("scheme", ["file://localhost", "file://"])
def test_verify_a_table_with_external_data_paths(capfd, wh, tmp_path, scheme):
    """Data files that pypaimon writes under 'data-file.external-paths': the
    manifest holds a file: URI, which verify used to open as a local path
    ('//localhost/...': no such file) (issue 28, item 5)."""
    import glob
    external = tmp_path / "external"
    external.mkdir()
    wh.create("ext", SCHEMA, options={"data-file.external-paths": f"{scheme}{external}",
                                      "data-file.external-paths.strategy": "round-robin"})
    write(wh.table("ext"), _data(range(10), lambda i: "x"))
    path = os.path.join(wh.root, "db.db", "ext")
    [data] = glob.glob(str(external / "**" / "*.row"), recursive=True)
    assert not wh.data_files("ext")         # none in the table's own directory
    code, out, err = run(capfd, "verify", path)
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"ok {data}: 10 rows in 1 block",
                                f"ok {path} (snapshot 1): 1 .row data file(s)"]
    code, out, _ = run(capfd, "cat", path, "-f", "jsonl")
    assert code == 0 and sorted(r["id"] for r in _rows_of_jsonl(out)) == list(range(10))
    code, out, _ = run(capfd, "inspect", path, "--json")
    assert code == 0 and [f["path"] for f in json.loads(out)["files"]] == [data]


def _strict_json(text):
    """``text`` parsed as JSON proper: NaN, Infinity and -Infinity are not JSON."""
    def refuse(word):
        raise ValueError(f"not JSON: {word}")
    return json.loads(text, parse_constant=refuse)


def test_inspect_json_is_json_whatever_the_schema_file_holds(capfd, append):
    """A schema file's option values are whatever JSON-ish text its writer
    put there: Python's parser takes NaN and Infinity, and inspect --json
    printed them back, which no JSON parser accepts (issue 37, item 11)."""
    _, path = append
    schema_file = os.path.join(path, "schema", "schema-0")
    with open(schema_file) as f:
        schema = json.load(f)
    schema["options"].update({"nan": float("nan"), "inf": float("inf"),
                              "list": [float("-inf"), 1.5]})
    with open(schema_file, "w") as f:
        json.dump(schema, f)
    code, out, err = run(capfd, "inspect", path, "--json")
    assert (code, err) == (0, "")
    options = _strict_json(out)["options"]
    assert (options["nan"], options["inf"], options["list"]) == (None, None, [None, 1.5])


def test_expire(capfd, append):
    """rowformat expire: a dry run deletes nothing, then the oldest snapshot
    goes; bad arguments are usage errors."""
    wh, path = append
    before = sorted(os.listdir(os.path.join(path, "snapshot")))
    code, out, _ = run(capfd, "expire", path, "--retain-last", "1", "--dry-run")
    assert code == 0 and out.startswith("would expire 1 snapshot (1); earliest now 2; "
                                        "would delete ")
    assert sorted(os.listdir(os.path.join(path, "snapshot"))) == before
    code, out, _ = run(capfd, "expire", path, "--retain-last", "1", "--older-than", "1h")
    assert (code, out) == (0, "nothing to expire (earliest snapshot: 1)\n")
    code, out, _ = run(capfd, "expire", path, "--retain-last", "1", "--older-than",
                       "2999-01-01T00:00:00+00:00", "--json")
    assert code == 0
    got = json.loads(out)
    assert got["snapshots"] == [1] and got["earliest"] == 2 and got["dry_run"] is False
    assert got["files"] >= 2       # snapshot 1's manifest lists (its data files stay: appended)
    code, out, _ = run(capfd, "head", path, "-n", "400", "--format", "jsonl")
    assert code == 0 and len(out.splitlines()) == 400
    for argv, message in ((["--retain-last", "0"], "--retain-last 0: at least 1"),
                          (["--older-than", "soon"], "--older-than soon: expected a duration")):
        code, _, err = run(capfd, "expire", path, *argv)
        assert code == 2 and message in err, err
    code, _, err = run(capfd, "expire", wh.root, "--retain-last", "1")
    assert code == 2 and "is not a Paimon table directory" in err


def test_remove_orphans(capfd, append):
    """rowformat remove-orphans: young files stay by default; a dry run lists
    the file nothing names and deletes nothing; then it goes; bad arguments
    are usage errors."""
    wh, path = append
    stray = os.path.join(path, "p=c", "bucket-0", "data-never-committed.row")
    with open(stray, "wb") as f:
        f.write(b"x" * 123)
    assert run(capfd, "remove-orphans", path) == (0, "deleted 0 orphan files, 0 bytes\n", "")
    os.utime(stray, (time.time() - 7200,) * 2)                  # written two hours ago
    code, out, _ = run(capfd, "remove-orphans", path, "--older-than", "1h", "--dry-run")
    assert (code, out) == (0, f"{stray}\nwould delete 1 orphan file, 123 bytes\n")
    assert os.path.exists(stray)
    code, out, _ = run(capfd, "remove-orphans", path, "--older-than", "1h", "--json")
    assert code == 0 and json.loads(out) == {"files": [stray], "bytes": 123, "dry_run": False}
    assert not os.path.exists(stray)
    code, out, _ = run(capfd, "head", path, "-n", "400", "--format", "jsonl")
    assert code == 0 and len(out.splitlines()) == 400
    code, _, err = run(capfd, "remove-orphans", path, "--older-than", "soon")
    assert code == 2 and "--older-than soon: expected a duration" in err
    code, _, err = run(capfd, "remove-orphans", path, "--older-than", "2999-01-01")
    assert code == 1 and "is after now" in err
    code, _, err = run(capfd, "remove-orphans", wh.root)
    assert code == 2 and "is not a Paimon table directory" in err


@pytest.mark.parametrize("command", ["expire", "remove-orphans"])
@pytest.mark.parametrize("when", ["99999999999d", "0001-01-01", "0001-01-01T00:00:00"])
def test_older_than_too_far_back_is_a_usage_error(capfd, append, command, when):
    _, path = append
    code, out, err = run(capfd, command, path, "--older-than", when)
    assert (code, out) == (2, "")
    assert f"--older-than {when}: too far back (before year 1)" in err, err


def test_remove_orphans_prints_hostile_names_escaped(capfd, append):
    """An orphan's name with ESC, CR LF, C1 controls and U+202E cannot drive
    the terminal or forge a line of output."""
    _, path = append
    name = "data-\x1b[31mred\r\ndeleted 0 orphan files\x85\u202e.row"
    stray = os.path.join(path, "p=c", "bucket-0", name)
    with open(stray, "wb") as f:
        f.write(b"x")
    os.utime(stray, (time.time() - 7200,) * 2)
    code, out, _ = run(capfd, "remove-orphans", path, "--older-than", "1h", "--dry-run")
    shown = os.path.join(path, "p=c", "bucket-0", "data-\\x1b[31mred\\r\\ndeleted 0 orphan "
                                                   "files\\x85\\u202e.row")
    assert (code, out) == (0, f"{shown}\nwould delete 1 orphan file, 1 byte\n")
