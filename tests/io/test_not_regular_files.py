"""A named pipe, a device or a directory where a .row or .blob file, or
the target of a blob descriptor, should be: refused at once with a
CorruptFileError naming it, never a hang or a bare OS error (issue 28,
item 3). The table-level cases are in tests/paimon/test_cli_tables.py and
tests/paimon/test_blob_tables.py."""
import os
import re

import pytest

import rowformat
from rowformat import CorruptFileError, RowFileReader
from rowformat.blob import BlobDescriptor, BlobFileReader

from .._fifo import call_guarded, make_fifo

OPENERS = {
    "RowFileReader": lambda p: RowFileReader(p, "a INT"),
    "verify": lambda p: rowformat.verify(p, "a INT"),
    "BlobFileReader": lambda p: BlobFileReader(p, "BLOB"),
    "BlobDescriptor.open": lambda p: BlobDescriptor(p, 0, -1).open(),
    "BlobDescriptor.open (file: uri)": lambda p: BlobDescriptor("file://" + p, 0, 10).open(),
}


@pytest.mark.parametrize("opener", OPENERS)
def test_named_pipe_is_refused_without_blocking(tmp_path, opener):
    fifo = make_fifo(tmp_path / "data.row")
    error = call_guarded(lambda: OPENERS[opener](fifo), fifo)
    assert isinstance(error, CorruptFileError)
    assert str(error) == f"{fifo}: is a named pipe, not a regular file"


@pytest.mark.parametrize("opener", OPENERS)
def test_directory_is_refused_naming_it(tmp_path, opener):
    d = tmp_path / "data.row"
    d.mkdir()
    with pytest.raises(CorruptFileError, match=f"^{re.escape(str(d))}: is a directory, not a "
                                               f"regular file$"):
        OPENERS[opener](str(d))


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("opener", OPENERS)
def test_device_is_refused(opener):
    with pytest.raises(CorruptFileError, match="^/dev/zero: is a character device, not a "
                                               "regular file$"):
        OPENERS[opener]("/dev/zero")


def test_missing_file_is_still_the_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        RowFileReader(tmp_path / "none.row", "a INT")
