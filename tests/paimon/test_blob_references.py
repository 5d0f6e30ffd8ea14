"""BLOB values that are blob descriptor bytes, written by accelerated
pypaimon (issue 28, item 1). pypaimon takes any BLOB value that starts with
a descriptor's magic for a reference and copies the file it names into the
.blob file: user-supplied bytes could copy any local file (or /dev/zero,
until the disk is full). Accelerated writes follow a reference only when the
table says so -- ``blob-as-descriptor``, or ``rowformat.blob-reference-roots``
naming the directories references may point into -- and then copy exactly
the range named, of a regular file, inside its real size. Otherwise the
bytes are the value, as Paimon Java stores them."""
import os

import pyarrow as pa
import pytest

import rowformat.paimon as rp
from rowformat import BlobDescriptorError, CorruptFileError
from rowformat.blob import BlobDescriptor

from .._fifo import call_guarded, make_fifo
from ._tables import blob_accelerated, read, sort, write
from .test_blob_tables import BLOB_OPTIONS, blob_files

pytestmark = blob_accelerated

ROOTS = "rowformat.blob-reference-roots"
SECRET = b"executor secret " * 64


@pytest.fixture
def files(tmp_path):
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (inside / "ok.bin").write_bytes(bytes(range(256)) * 4)
    (outside / "secret").write_bytes(SECRET)
    os.symlink(outside / "secret", inside / "link-out")
    return inside, outside


def ref(path, offset=0, length=-1):
    return BlobDescriptor(str(path), offset, length).serialize()


def table_of(wh, name, options=None):
    schema = pa.schema([("id", pa.int64()), ("b", pa.large_binary())])
    return wh.create(name, schema, options={**BLOB_OPTIONS, **(options or {})})


def write_values(t, values):
    data = pa.table({"id": pa.array(range(len(values)), pa.int64()),
                     "b": pa.array(values, pa.large_binary())})
    with rp.accelerated():
        write(t, data)


def values_of(wh, name):
    return sort(read(wh.table(name))).column("b").to_pylist()


def test_descriptor_bytes_are_data_unless_the_table_says_otherwise(wh, files):
    inside, outside = files
    values = [ref(outside / "secret"), ref(outside / "secret", 0, 1 << 62),
              ref("/dev/null"), ref(inside / "ok.bin", 3, 10), b"plain"]
    write_values(table_of(wh, "plain"), values)
    assert values_of(wh, "plain") == values            # the bytes, byte for byte
    [blob] = blob_files(wh, "plain")
    assert SECRET[:32] not in open(blob, "rb").read()


def test_descriptor_mode_copies_exactly_the_range(wh, files):
    inside, outside = files
    t = table_of(wh, "desc", {"blob-as-descriptor": "true"})
    write_values(t, [ref(outside / "secret"), ref(inside / "ok.bin", 3, 10), b"plain"])
    got = read(wh.table("desc").copy({"blob-as-descriptor": "false"}))
    assert sort(got).column("b").to_pylist() == [SECRET, (bytes(range(256)) * 4)[3:13], b"plain"]


@pytest.mark.parametrize("target, error, message", [
    ("secret-too-long", BlobDescriptorError,
     r"secret: descriptor range \[0, 4611686018427387904\) passes the end of the 1024-byte file"),
    ("secret-past-end", BlobDescriptorError, r"secret: descriptor offset 2000 is past the end of the 1024-byte file"),
    ("/dev/null", CorruptFileError, r"^/dev/null: is a character device, not a regular file$"),
    ("dir", CorruptFileError, r"outside: is a directory, not a regular file$"),
])
def test_descriptor_mode_copies_only_what_the_file_holds(wh, files, target, error, message):
    """A length past the end (2^62, which used to copy until the file's end
    without a word) or a file that is not a regular one raises, and the
    write leaves no rows."""
    _, outside = files
    value = {"secret-too-long": ref(outside / "secret", 0, 1 << 62),
             "secret-past-end": ref(outside / "secret", 2000, -1),
             "/dev/null": ref("/dev/null"), "dir": ref(outside)}[target]
    t = table_of(wh, "bad", {"blob-as-descriptor": "true"})
    with pytest.raises(error, match=message):
        write_values(t, [b"first", value])
    assert read(wh.table("bad")).num_rows == 0


def test_descriptor_mode_does_not_block_on_a_named_pipe(wh, tmp_path):
    fifo = make_fifo(tmp_path / "pipe")
    t = table_of(wh, "pipe", {"blob-as-descriptor": "true"})
    error = call_guarded(lambda: write_values(t, [ref(fifo)]), fifo)
    assert isinstance(error, CorruptFileError)
    assert str(error) == f"{fifo}: is a named pipe, not a regular file"


def test_reference_roots_bound_where_references_point(wh, files):
    inside, outside = files
    t = table_of(wh, "roots", {ROOTS: f" {inside} ,{inside / 'nested'}"})
    write_values(t, [ref(inside / "ok.bin", 0, 4), b"plain"])
    assert values_of(wh, "roots") == [bytes(range(4)), b"plain"]
    for bad in (outside / "secret", inside / "link-out", inside / ".." / "outside" / "secret",
                "file://" + str(outside / "secret"), "http://example.com/x"):
        with pytest.raises(BlobDescriptorError, match=rf"descriptor of '{bad}', which is not "
                                                      rf"under the directories .*{ROOTS}"):
            write_values(wh.table("roots"), [ref(bad, 0, 4)])
    assert values_of(wh, "roots") == [bytes(range(4)), b"plain"]
    # a write may name them for itself (table.copy), leaving the table as it is
    t = table_of(wh, "once")
    write_values(t.copy({ROOTS: str(inside)}), [ref(inside / "ok.bin", 0, 2)])
    write_values(t, [ref(inside / "ok.bin", 0, 2)])
    assert sorted(values_of(wh, "once")) == [bytes(range(2)), ref(inside / "ok.bin", 0, 2)]


def test_file_io_write_blob_never_follows_a_reference(tmp_path, files):
    from pypaimon.filesystem.local_file_io import LocalFileIO
    from rowformat.blob import BlobFileReader
    _, outside = files
    value = ref(outside / "secret")
    path = str(tmp_path / "direct.blob")
    with rp.accelerated():
        LocalFileIO().write_blob(path, pa.table({"b": pa.array([value], pa.large_binary())}))
    with BlobFileReader(path, "BLOB") as r:
        assert r.get(0) == value
