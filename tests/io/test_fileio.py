"""rowformat.io.fileio: one semantics for every operation, on a local
directory and on the loopback S3 server alike."""
import os

import pytest

from rowformat.errors import CorruptFileError, StorageError, StorageNotFoundError
from rowformat.io import fileio
from rowformat.io.output import write_atomically


@pytest.fixture(params=["local", "s3"])
def where(request, tmp_path):
    """(a directory's name, its storage_options) with a file ``d/f`` in it."""
    if request.param == "local":
        root = str(tmp_path)
        os.makedirs(os.path.join(root, "d"))
        options = None
    else:
        s3 = request.getfixturevalue("s3")
        root, options = f"s3://{s3.bucket}", s3.server.catalog_options()
    write_atomically(f"{root}/d/f", b"bytes", options)
    return root, options


def test_what_is_there(where):
    root, o = where
    assert fileio.list_names(f"{root}/d", o) == ["f"]
    assert [(p, n) for p, n, _ in fileio.walk(f"{root}/d", o)] == [(f"{root}/d/f", 5)]
    assert fileio.file_size(f"{root}/d/f", o) == 5
    assert fileio.kind(f"{root}/d/f", o) == "file" and fileio.kind(f"{root}/d", o) == "dir"
    assert fileio.read_bytes(f"{root}/d/f", o) == b"bytes"
    with fileio.open_file(f"{root}/d/f", storage_options=o) as f:
        f.seek(2)
        assert f.read() == b"tes"
    assert fileio.delete(f"{root}/d/f", o) is True
    assert fileio.file_size(f"{root}/d/f", o) is None


def test_nothing_there(where):
    root, o = where
    missing = f"{root}/nothing/here"
    assert fileio.list_names(missing, o) == []
    assert fileio.walk(missing, o) == []
    assert fileio.file_size(missing, o) is None
    assert fileio.kind(missing, o) is None
    assert fileio.delete(missing, o) is False
    for read in (lambda: fileio.read_bytes(missing, o),
                 lambda: fileio.open_file(missing, storage_options=o)):
        with pytest.raises(StorageNotFoundError) as e:
            read()
        assert str(e.value).startswith(f"{missing}: opening for reading: ")
        assert isinstance(e.value, FileNotFoundError)


def test_a_file_where_a_directory_is_listed_is_an_error_naming_it(where):
    root, o = where
    with pytest.raises(StorageError) as e:
        fileio.list_names(f"{root}/d/f", o)
    assert str(e.value).startswith(f"{root}/d/f: exists but cannot be listed as a directory (")
    assert str(e.value).endswith("): nothing is read as empty")
    assert fileio.walk(f"{root}/d/f", o) == []       # no files under a file, on every store


def test_a_local_file_that_is_not_a_regular_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    for name, kind in (("pipe", "a named pipe"), ("", "a directory")):
        with pytest.raises(CorruptFileError, match=f": is {kind}, not a regular file"):
            fileio.read_bytes(str(tmp_path / name))
    # a CLI's input is read from start to end: a pipe may be one (a writer opened first)
    writer = os.open(tmp_path / "pipe", os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(writer, b"piped")
        with fileio.open_file(str(tmp_path / "pipe"), stream=True) as f:
            assert f.read(5) == b"piped"
    finally:
        os.close(writer)


def test_a_directory_name_where_a_file_is_read_on_a_store(s3):
    for read in (lambda u: fileio.read_bytes(u), lambda u: fileio.file_size(u),
                 lambda u: fileio.delete(u)):
        with pytest.raises(StorageError, match=r"/d/: ends with '/', a directory's name"):
            read(f"s3://{s3.bucket}/d/")


def test_one_key_per_url_for_every_operation(s3):
    for bad in ("a//f", "a/./f", "a/../f"):
        url = f"s3://{s3.bucket}/{bad}"
        for op in (fileio.list_names, fileio.walk, fileio.file_size, fileio.read_bytes,
                   fileio.delete, fileio.kind):
            with pytest.raises(StorageError, match="in the key: a store keeps such a key"):
                op(url)
    assert s3.log() == []            # refused before any request


def test_no_credentials_in_any_message(s3):
    url = f"s3://AKIAEXAMPLE:se/cr+et@{s3.bucket}/d/f"
    for op in (fileio.list_names, fileio.walk, fileio.file_size, fileio.read_bytes,
               fileio.delete, fileio.kind):
        with pytest.raises(StorageError) as e:
            op(url)
        assert "se/cr+et" not in str(e.value) and "AKIAEXAMPLE" not in str(e.value)
        assert "credentials in the URL are refused" in str(e.value)
