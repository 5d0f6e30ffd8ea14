"""rowformat compact: the summary and its --json form, --dry-run,
--partition, --full, a progress bar over buckets, errors as exit codes."""
import json

import pyarrow as pa

from rowformat import cli

from ._tables import read, sort, write
from .test_compact import SCHEMA, _rows
from ._tables import needs_pypaimon_2_1


def run(capfd, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capfd.readouterr()
    return code, out, err


def _table(wh, commits=6):
    t = wh.create("c", SCHEMA, partition_keys=["p"], options={"bucket": "1", "bucket-key": "id"})
    for i in range(commits):
        write(t, pa.concat_tables([_rows(i, p="a"), _rows(i + 50, p="b")]))
    return t


def test_json_summary(capfd, wh):
    t = _table(wh)
    path = str(t.table_path)
    before = sort(read(t))
    code, out, _ = run(capfd, "compact", path, "--dry-run", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["dry_run"] is True and doc["snapshot"] is None
    assert (doc["files_before"], doc["files_after"], doc["rewritten"]) == (12, 12, 10)
    code, out, err = run(capfd, "compact", path, "--json", "--progress")
    doc = json.loads(out)
    assert code == 0 and doc["snapshot"] == 7 and doc["buckets"] == 2
    assert (doc["files_before"], doc["files_after"], doc["rewritten"], doc["written"]) == \
        (12, 4, 10, 2)
    assert doc["bytes_before"] > doc["bytes_after"] > 0
    assert "2/2" in err and "buckets" in err
    assert sort(read(wh.table("c"))).equals(before)
    code, out, _ = run(capfd, "compact", path)
    assert (code, out) == (0, "nothing to compact (4 data files)\n")


def test_text_partition_and_full(capfd, wh):
    t = _table(wh, commits=3)
    path = str(t.table_path)
    code, out, _ = run(capfd, "compact", path, "--partition", "p=b")
    assert (code, out) == (0, "nothing to compact (6 data files)\n")
    code, out, _ = run(capfd, "compact", path, "--partition", "p=b", "--full", "--dry-run")
    assert (code, out) == (0, "would rewrite 3 files in 1 bucket\n")
    code, out, _ = run(capfd, "compact", path, "--partition", "p=b", "--full")
    assert code == 0 and out.startswith("compacted 1 bucket: 3 files rewritten as 1; the table "
                                        "now has 4 data files (")
    assert out.endswith("snapshot 4 (COMPACT)\n")


def test_errors(capfd, wh, tmp_path):
    t = _table(wh, commits=1)
    code, _, err = run(capfd, "compact", str(t.table_path), "--partition", "p")
    assert code == 2 and "--partition p: expected KEY=VALUE" in err
    code, _, err = run(capfd, "compact", str(tmp_path))
    assert code == 2 and "is not a Paimon table directory" in err
    pk = wh.create("pk", SCHEMA, primary_keys=["id"],
                   options={"bucket": "1", "changelog-producer": "lookup"})
    code, _, err = run(capfd, "compact", str(pk.table_path))
    assert code == 1 and "changelog-producer = lookup is not supported yet" in err


pytestmark = needs_pypaimon_2_1
