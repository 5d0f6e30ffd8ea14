"""Files that appear whole or not at all: written under a temporary name
beside the target (for a URL, in a local staging directory) and moved into
place only by commit(). A killed process leaves a hidden ``.<name>.*.tmp``
file, never a partial file at the target."""
from __future__ import annotations

import os
import tempfile

from . import fs


class AtomicOutput:
    def __init__(self, path: str, buffering: int = -1):
        self.path = path
        fd, self.tmp_path = tempfile.mkstemp(
            prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=fs.staging_dir(path))
        self.file = os.fdopen(fd, "wb", buffering=buffering)

    def commit(self, durable: bool = True) -> None:
        """Moves the bytes to the target: a rename, or an upload for a URL.
        ``durable`` fsyncs them first, so the target survives a power loss
        too (a killed process needs no fsync: the rename alone is atomic)."""
        self.file.flush()
        if durable:
            os.fsync(self.file.fileno())
        self.file.close()
        fs.replace(self.tmp_path, self.path)

    def discard(self) -> None:
        try:
            self.file.close()
        finally:
            try:
                os.unlink(self.tmp_path)
            except FileNotFoundError:
                pass


def write_atomically(path: str, data: bytes) -> None:
    """Replaces the file at ``path`` with ``data``: readers see the old or the new bytes."""
    out = AtomicOutput(path)
    try:
        out.file.write(data)
        out.commit()
    except BaseException:
        out.discard()
        raise
