"""Committed files: their mode, and what durable=True fsyncs."""
import os
import stat

import pytest

import rowformat
from rowformat import BlobFileWriter, RowFileWriter
from rowformat.io.output import write_atomically

SCHEMA = rowformat.schema("id BIGINT")


def _write_row(path, durable=False):
    with RowFileWriter(path, SCHEMA, durable=durable) as w:
        w.write_rows([(1,), (2,)])


def _write_blob(path, durable=False):
    with BlobFileWriter(path, "BLOB", durable=durable) as w:
        w.write(b"abc")


def _write_small(path, durable=True):
    write_atomically(str(path), b"{}")


WRITERS = [_write_row, _write_blob, _write_small]


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


@pytest.mark.skipif(not hasattr(os, "fchmod"), reason="POSIX file modes")
@pytest.mark.parametrize("write", WRITERS)
@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077, 0o002])
def test_committed_file_has_the_mode_open_gives(tmp_path, umask, write, mask):
    umask(mask)
    path = tmp_path / "f.out"
    write(path)
    with open(tmp_path / "reference", "wb"):
        pass
    want = stat.S_IMODE(os.stat(tmp_path / "reference").st_mode)
    assert want == 0o666 & ~mask
    assert stat.S_IMODE(os.stat(path).st_mode) == want


def _record_fsyncs(monkeypatch):
    synced = []
    real = os.fsync

    def fsync(fd):
        st = os.fstat(fd)
        synced.append("dir" if stat.S_ISDIR(st.st_mode) else "file")
        real(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    return synced


@pytest.mark.skipif(os.name == "nt", reason="directories cannot be fsynced on Windows")
@pytest.mark.parametrize("write", WRITERS)
def test_durable_fsyncs_the_file_then_the_directory(tmp_path, monkeypatch, write):
    synced = _record_fsyncs(monkeypatch)
    write(tmp_path / "f.out", durable=True)
    assert synced == ["file", "dir"]


@pytest.mark.parametrize("write", [_write_row, _write_blob])
def test_default_fsyncs_nothing(tmp_path, monkeypatch, write):
    synced = _record_fsyncs(monkeypatch)
    write(tmp_path / "f.out")
    assert synced == []
