"""rowformat's one I/O layer: every read, write, listing and deletion of a
file, local or on a store, goes through here (tests/test_imports.py checks
that nothing else opens, lists or deletes files).

* :mod:`.urls`: names. The one test of local or remote
  (:func:`~.urls.local`), the one canonical key of a URL
  (:func:`~.urls.check_url`), :func:`~.urls.redact`.
* :mod:`.settings`: the one form of a store's settings (Paimon's catalog
  names), the one reader of the ``AWS_*`` environment, the one list of
  setting prefixes, the translation to pyarrow's arguments.
* :mod:`.stores`: the one choice of pyarrow.fs or fsspec, behind one
  :class:`~.stores.Store` interface.
* :mod:`.failures`: the one mapping of a store's exceptions.
* :mod:`.fileio`: operations by name (list, walk, size, kind, open, read,
  delete) with the same semantics on every store.
* :mod:`.local`: regular-file descriptors (``pread``/mmap) and local
  files that appear whole (temporary name, rename).
* :mod:`.ranges`: positional and concurrent ranged reads of an object.
* :mod:`.uploads`: writes to a store that appear only when committed.
* :mod:`.source`: the readers' byte source over all of these.
* :mod:`.output`: writers' outputs and their lifetime.
"""
