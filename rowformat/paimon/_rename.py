"""``LocalFileIO.rename`` while acceleration is on: a rename that refuses an
existing target across processes.

Paimon commits a snapshot by writing ``snapshot-N`` under a temporary name
and renaming it into place only if no ``snapshot-N`` exists yet; the loser
of a race sees the rename fail and retries with N + 1. pypaimon 2.0.0's and
2.1.0's ``LocalFileIO.rename`` checks that the target does not exist under a
``threading.Lock`` (one process only), then calls ``rename(2)``, which on
Linux replaces a file another process has just put there: two processes
committing to one local table could both "win" snapshot N, and one commit's
rows were lost without an error.

Here the move is ``link(2)`` then ``unlink(2)`` (io.local.link_new): ``link(2)``
fails with ``EEXIST`` when ``dst`` exists, atomically, so exactly one writer
wins and every other gets False, as Paimon's protocol expects. A file system
without hard links (or a directory source, which cannot be linked) gets
pypaimon's own rename.

Only ``EEXIST`` at a file means another writer won. A symbolic link to a
missing file at ``dst`` (which pypaimon's ``exists()`` check does not see,
so every retry would take the same id) and any other failure of ``link(2)``
raise their ``OSError``, naming the path and the errno: pypaimon retries a
commit that raised, then fails with it as the cause, instead of reporting
"commit conflicts between multiple jobs" with the errno nowhere.
"""
from __future__ import annotations

import errno
import os
from typing import Any

from ..io.local import link_new

# link(2) errors that mean "no hard links here", not "the target exists"
_NO_LINKS = frozenset({errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP,
                       errno.EMLINK, errno.ENOSYS})


def make_rename(stock: Any) -> Any:
    """``LocalFileIO.rename`` (``stock`` is pypaimon's)."""

    def rename(self, src: str, dst: str) -> bool:
        src_file, dst_file = self._to_file(src), self._to_file(dst)
        if dst_file.is_dir() or not src_file.is_file():
            return stock(self, src, dst)        # directories: pypaimon's own rename
        dst_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            link_new(os.fspath(src_file), os.fspath(dst_file))  # (str paths in its error)
        except FileExistsError:
            if os.path.islink(dst_file) and not os.path.exists(dst_file):
                raise FileExistsError(errno.EEXIST, "the target is a symbolic link to a missing "
                                      "file, not a file another writer committed; refusing "
                                      "to commit", str(dst_file)) from None
            return False                        # another writer won: the caller retries
        except OSError as e:
            if e.errno in _NO_LINKS:
                return stock(self, src, dst)
            raise
        return True

    rename._rowformat_stock = stock  # type: ignore[attr-defined]
    return rename
