"""Where acceleration patches pypaimon, as data (:data:`POINTS`), and the one
checker that turns those points into a plan.

Each :class:`Point` names an attribute of a pypaimon module or class, the
module that must define the stock value there (so that someone else's patch
is refused, not stacked on), the parameter lists it may have (one per tested
pypaimon release), what else the stock value or its class must offer, and
the function that builds rowformat's replacement from the stock value. The
checks are on signatures and attributes only; nothing reads pypaimon's
source text, so a pypaimon installed without ``.py`` files, or reformatted,
is checked the same way.

A plan is made once per process and reused: it is kept with the identity of
every checked object (module, class, function, ``__init__``), and checked
again (by identity only, microseconds) each time it is applied; when any of
them changed (pypaimon reloaded, or patched by someone else), it is made anew.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..errors import PaimonIntegrationError

TESTED_VERSIONS = frozenset({"2.0.0", "2.1.0"})

_ROW_READER_PARAMS = ("self", "file_io", "file_path", "read_fields", "full_fields",
                      "push_down_predicate", "batch_size", "row_indices")
_BLOB_READER_PARAMS = ("self", "file_io", "file_path", "read_fields", "full_fields",
                       "push_down_predicate", "blob_as_descriptor", "batch_size", "row_indices",
                       "blob_parallelism", "file_size", "index_cache")
_MANIFEST_READ_PARAMS = ("self", "manifest_file_name", "manifest_entry_filter", "drop_stats",
                         "early_entry_filter", "early_record_filter", "partition_filter")
_TRY_COMMIT_PARAMS = ("self", "commit_kind", "commit_identifier", "commit_entries_plan",
                      "detect_conflicts", "allow_rollback", "index_deletes", "index_adds",
                      "changelog_entries")
# pypaimon 2.0.0 writes .blob entries whose CRC32 leaves out their length
# fields (2.1.0 and Paimon Java include them), and reads them back without
# that check: its .blob files stay its own, read and written stock
_BLOB_VERSIONS = frozenset({"2.1.0"})
_BLOB_WRITER_NEEDS = ("write_value(col_data, fields, uri_reader_factory)", "add_element", "close",
                      "reach_target_size", "_map_entries")


@dataclass(frozen=True)
class Point:
    """One replaced attribute: ``module.attr`` (``attr`` may be ``Class.name``)."""
    module: str
    attr: str
    defined_in: str            # the module that defines pypaimon's own value
    signatures: tuple          # accepted parameter lists of the value (of __init__ for a
                               # class): one per tested pypaimon release that differs
    make: str                  # "module:function" of rowformat.paimon building the replacement
    needs: tuple = ()          # attributes of the value (a class) or of its owner class;
                               # "name(a, b)" also checks the parameters after self
    optional: bool = False     # a module that does not import, or an absent attribute,
                               # skips the point (a wrong shape is still refused)
    versions: Optional[frozenset] = None    # the releases it applies to, when not all
    what: str = ""

    @property
    def name(self) -> str:
        return f"{self.module}.{self.attr}"


POINTS: tuple[Point, ...] = (
    Point("pypaimon.read.split_read", "FormatRowReader",
          "pypaimon.read.reader.format_row_reader", (_ROW_READER_PARAMS,),
          "._reader:make_reader_class", needs=("read_arrow_batch()", "close()"),
          what="reads .row data files"),
    Point("pypaimon.read.split_read", "MergeFileSplitRead.create_reader",
          "pypaimon.read.split_read", (("self",),),
          "._merge:make_create_reader",
          needs=("file_reader_supplier", "_get_final_read_data_fields"),
          what="merges primary-key splits with Arrow"),
    Point("pypaimon.write.writer.format_row_writer", "FormatRowWriter",
          "pypaimon.write.writer.format_row_writer",
          (("self", "output_stream", "fields", "block_size", "zstd_level"),),
          "._writer:stream_row_writer", needs=("write_table",),
          what="writes .row data files to FileIO streams"),
    Point("pypaimon.filesystem.local_file_io", "LocalFileIO.write_row",
          "pypaimon.filesystem.local_file_io",
          (("self", "path", "data", "fields", "zstd_level", "kwargs"),),
          "._writer:make_local_write_row", needs=("_to_file",),
          what="writes local .row data files"),
    # a table's .row data files and sidecars: blocks of its file.block-size,
    # as Paimon Java cuts them (pypaimon's write_row passes no block size)
    Point("pypaimon.write.writer.data_writer", "DataWriter._write_data_to_file",
          "pypaimon.write.writer.data_writer", (("self", "data"),),
          "._writer:make_write_data_to_file", needs=("_should_write_row_sidecar",),
          what="writes .row files with the table's file.block-size"),
    # the ordinary columns' .row file of a table with BLOB or vector columns
    # (their own writer, which bypasses _write_data_to_file): the same block
    # size and value statistics; pypaimon 2.0.0 has two such writers, 2.1.0
    # one base class
    *(Point(module, f"{cls}._write_normal_data_to_file", module, (("self", "data"),),
            "._writer:make_write_normal_data_to_file", versions=versions,
            what="writes the ordinary columns' .row file of BLOB and vector tables with "
                 "statistics")
      for module, cls, versions in (
          ("pypaimon.write.writer.composite_data_writer", "CompositeDataWriter",
           frozenset({"2.1.0"})),
          ("pypaimon.write.writer.dedicated_format_writer", "DedicatedFormatWriter",
           frozenset({"2.0.0"})),
          ("pypaimon.write.writer.data_vector_writer", "DataVectorWriter",
           frozenset({"2.0.0"})))),
    # snapshot (and schema) commits: a rename that refuses an existing
    # target across processes, not only across threads (_rename)
    Point("pypaimon.filesystem.local_file_io", "LocalFileIO.rename",
          "pypaimon.filesystem.local_file_io", (("self", "src", "dst"),),
          "._rename:make_rename", needs=("_to_file",),
          what="renames without replacing a file another process committed"),
    # snapshot and schema commits on object stores: a conditional create
    # (S3 If-None-Match: *), or a refusal where the store has none (_commit)
    Point("pypaimon.filesystem.pyarrow_file_io", "PyArrowFileIO.try_to_write_atomic",
          "pypaimon.filesystem.pyarrow_file_io", (("self", "path", "content"),),
          "._commit:make_try_to_write_atomic",
          what="commits to object stores with an atomic create, or refuses"),
    Point("pypaimon.write.file_store_commit", "FileStoreCommit._try_commit",
          "pypaimon.write.file_store_commit",
          (_TRY_COMMIT_PARAMS + ("hash_index_base_snapshot",),                        # 2.0.0
           _TRY_COMMIT_PARAMS + ("snapshot_properties", "allow_empty_commit")),       # 2.1.0
          "._commit:make_try_commit",
          what="refuses a commit to a store without an atomic create before any retry"),
    # a table's local files (LATEST, snapshots, schemas, manifest lists, manifests): a
    # named pipe in place of one is refused, not opened (which blocked forever)
    Point("pypaimon.filesystem.local_file_io", "LocalFileIO.new_input_stream",
          "pypaimon.filesystem.local_file_io", (("self", "path"),),
          "._metadata:make_new_input_stream", needs=("_to_file",),
          what="opens only regular files (a named pipe blocked forever)"),
    # manifests: a damaged one fails naming itself, a data file name with '/' is refused
    Point("pypaimon.manifest.manifest_file_manager", "ManifestFileManager.read",
          "pypaimon.manifest.manifest_file_manager",
          (_MANIFEST_READ_PARAMS + ("selected_blocks", "file_size"), _MANIFEST_READ_PARAMS),
          "._metadata:make_manifest_read",
          what="reads manifests as untrusted input (names, damage)"),
    Point("pypaimon.manifest.manifest_list_manager", "ManifestListManager.read",
          "pypaimon.manifest.manifest_list_manager",
          (("self", "manifest_list_name", "file_size"), ("self", "manifest_list_name")),
          "._metadata:make_manifest_list_read",
          what="reads manifest lists as untrusted input (names, damage)"),
    Point("pypaimon.read.split_read", "FormatBlobReader",
          "pypaimon.read.reader.format_blob_reader",
          (_BLOB_READER_PARAMS,),
          "._blob_reader:make_blob_reader_class",
          needs=("read_arrow_batch(start_idx, end_idx)",), versions=_BLOB_VERSIONS,
          what="reads .blob files"),
    *(Point(module, "BlobFormatWriter", "pypaimon.write.blob_format_writer",
            (("self", "output_stream", "blob_consumer", "file_path", "copy_buffer_size"),),
            "._blob_writer:make_blob_writer_class", needs=_BLOB_WRITER_NEEDS,
            optional=optional, versions=_BLOB_VERSIONS, what="writes .blob files")
      for module, optional in (("pypaimon.write.writer.blob_file_writer", False),
                               ("pypaimon.filesystem.local_file_io", False),
                               # FileIOs whose own dependencies may be missing
                               ("pypaimon.filesystem.pyarrow_file_io", True),
                               ("pypaimon.filesystem.hdfs_native_file_io", True))),
    # a table write's BLOB values: descriptor bytes are followed as references
    # only as the table's options allow (_blob_writer.ReferencePolicy)
    Point("pypaimon.write.writer.blob_writer", "BlobWriter.open_current_writer",
          "pypaimon.write.writer.blob_writer", (("self",),),
          "._blob_writer:make_open_current_writer", versions=_BLOB_VERSIONS,
          what="hands the table's BLOB reference policy to its blob file writer"),
    Point("pypaimon.write.writer.blob_file_writer", "BlobFileWriter._to_blob",
          "pypaimon.write.writer.blob_file_writer", (("self", "col_data"),),
          "._blob_writer:make_to_blob", versions=_BLOB_VERSIONS,
          what="stores BLOB values that look like descriptors as bytes unless the policy "
               "follows them"),
    # pypaimon 2.1.0's map-style to_torch() dataset of a row-tracking table
    # fetches each batch by _ROW_ID through a new table read that reopens
    # every file: its dataset becomes one whose batches keep their readers
    # (_torch.py; the dataset's class is checked when one is made, as its
    # module imports torch)
    Point("pypaimon.read.table_read", "TableRead.to_torch", "pypaimon.read.table_read",
          (("self", "splits", "streaming", "prefetch_concurrency", "batch_format", "batch_size",
            "to_tensor_fn", "shuffle", "seed", "buffer_size", "max_buffer_input_splits",
            "auto_detect_rank", "sharding_rank", "sharding_world_size"),),
          "._torch:make_to_torch", versions=frozenset({"2.1.0"}),
          what="keeps the readers of to_torch()'s map-style dataset across its batches"),
    Point("pypaimon.read.reader.filter_record_batch_reader",
          "FilterRecordBatchReader._filter_batch_by_row",
          "pypaimon.read.reader.filter_record_batch_reader", (("self", "batch"),),
          "._batch_filter:make_filter_batch_by_row", optional=True,
          what="tests a split's rows against a predicate in Arrow compute, not row by row"),
    # pypaimon 2.1.0's read.native.enabled: .row and .blob files stay with
    # rowformat (pypaimon-rust 0.4.0 is slower, and wrong on primary-key
    # .row files of one-file buckets); optional, as releases without a
    # native reader lack it
    Point("pypaimon.read.table_read", "TableRead._native_split_files_supported",
          "pypaimon.read.table_read", (("split",),),
          "._native:make_split_check", optional=True,
          what="keeps .row/.blob reads off pypaimon-rust under read.native.enabled"),
)


@dataclass
class Patch:
    point: Point
    owner: Any                 # the module or class whose attribute is replaced
    attr: str
    stock: Any                 # the value as found (a staticmethod stays one)
    ours: Any
    holder: Any                # where the point's needs were found

    def needed(self) -> list:
        """The attributes the point needs, as they are now."""
        return [getattr(self.holder, need.partition("(")[0], None) for need in self.point.needs]


@dataclass
class Plan:
    version: str
    patches: list[Patch]
    skipped: dict[str, str]    # point name -> why it was skipped
    fingerprint: tuple


def _fail(version: str, what: str) -> PaimonIntegrationError:
    return PaimonIntegrationError(f"pypaimon {version} is not as rowformat.paimon expects: "
                                  f"{what}; pypaimon is left as it is")


def _params(fn: Any) -> tuple:
    return tuple(inspect.signature(fn).parameters)


# (lookup function, its answer for "pypaimon"): importlib.metadata.version
# parses the distribution's METADATA on every call (10-20 ms). The answer is
# kept per lookup function, so a replaced importlib.metadata.version is asked again.
_version_seen: Optional[tuple[Any, str]] = None


def pypaimon_version() -> Optional[str]:
    """pypaimon's installed version, None when it is not installed."""
    global _version_seen
    lookup = importlib.metadata.version
    seen = _version_seen
    if seen is None or seen[0] is not lookup:
        try:
            seen = _version_seen = (lookup, lookup("pypaimon"))
        except importlib.metadata.PackageNotFoundError:
            return None
    return seen[1]


def installed_version() -> str:
    """pypaimon's version; :class:`PaimonIntegrationError` when it is not
    installed or not a tested version."""
    version = pypaimon_version()
    if version is None:
        raise PaimonIntegrationError(
            "pypaimon is not installed: pip install 'rowformat[paimon]' (tested with "
            f"pypaimon {', '.join(sorted(TESTED_VERSIONS))})")
    if version not in TESTED_VERSIONS:
        raise PaimonIntegrationError(
            f"pypaimon {version} is not a version rowformat.paimon was tested with "
            f"({', '.join(sorted(TESTED_VERSIONS))}); pypaimon is left as it is")
    return version


def _check_needs(version: str, point: Point, holder: Any) -> None:
    for need in point.needs:
        name, _, rest = need.partition("(")
        fn = getattr(holder, name, None)
        ok = callable(fn)
        if ok and rest.rstrip(")"):
            ok = _params(fn)[1:] == tuple(p.strip() for p in rest.rstrip(")").split(","))
        if not ok:
            raise _fail(version, f"{getattr(holder, '__name__', holder)} lacks {need}")


def _check(version: str, point: Point) -> Optional[Patch]:
    """The patch of ``point``, None when an optional point is absent."""
    try:
        module = importlib.import_module(point.module)
    except ImportError as e:
        if point.optional:
            return None
        raise PaimonIntegrationError(f"cannot import {point.module}: {e}") from e
    owner_name, _, attr = point.attr.rpartition(".")
    owner: Any = module
    if owner_name:
        owner = getattr(module, owner_name, None)
        if not isinstance(owner, type):
            raise _fail(version, f"no class {owner_name} in {point.module}")
    raw = vars(owner).get(attr)              # pypaimon's own, not inherited
    if raw is None:
        if point.optional:
            return None
        raise _fail(version, f"{point.name} is missing")
    value = raw.__func__ if isinstance(raw, staticmethod) else raw
    if isinstance(value, type):
        defined = getattr(importlib.import_module(point.defined_in), attr, None)
        if value.__module__ != point.defined_in or value is not defined:
            raise _fail(version, f"{point.name} is not pypaimon's class (another patch?)")
        params = _params(getattr(value, "__init__"))     # (inherited ones too)
        holder = value
    else:
        if not inspect.isfunction(value) or value.__module__ != point.defined_in:
            raise _fail(version, f"{point.name} is not pypaimon's function (another patch?)")
        params = _params(value)
        holder = owner
    if params not in point.signatures:
        raise _fail(version, f"{point.name} takes ({', '.join(params)})")
    _check_needs(version, point, holder)
    ours = _made.get((point.make, value))
    if ours is None:        # one replacement per stock value, for the life of the process
        module_name, _, fn_name = point.make.partition(":")
        make: Callable[[Any], Any] = getattr(importlib.import_module(module_name, __package__),
                                             fn_name)
        ours = _made[(point.make, value)] = make(value)
    if isinstance(raw, staticmethod):
        ours = staticmethod(ours)
    return Patch(point, owner, attr, raw, ours, holder)


_made: dict[tuple[str, Any], Any] = {}


def _fingerprint(patches: list[Patch]) -> tuple:
    """The objects a plan rests on (compared by identity, and held, so that
    none is freed and another made at its address): each owner's current
    attribute, for a class its ``__init__``, and the attributes each point needs."""
    out = []
    for p in patches:
        value = vars(p.owner).get(p.attr)
        out.append(value if value is not p.ours else p.stock)
        if isinstance(p.stock, type):
            out.append(p.stock.__dict__.get("__init__"))
        out.extend(p.needed())
    return tuple(out)


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


_plan: Optional[Plan] = None


def plan() -> Plan:
    """The checked patches of this process's pypaimon (made once, reused while
    the objects it was made from are the same); PaimonIntegrationError when
    a required point is missing or not of a tested shape."""
    global _plan
    version = installed_version()
    current = _plan
    if current is not None and current.version == version \
            and _same(_fingerprint(current.patches), current.fingerprint):
        return current
    patches, skipped = [], {}
    for point in POINTS:
        if point.versions is not None and version not in point.versions:
            skipped[point.name] = f"not applied to pypaimon {version}"
            continue
        patch = _check(version, point)
        if patch is None:
            skipped[point.name] = f"not in pypaimon {version}"
        else:
            patches.append(patch)
    made = Plan(version, patches, skipped, ())
    made.fingerprint = _fingerprint(patches)
    _plan = made
    return made


def apply(p: Plan) -> None:
    for patch in p.patches:
        setattr(patch.owner, patch.attr, patch.ours)


def undo(p: Plan) -> None:
    for patch in reversed(p.patches):
        current = vars(patch.owner).get(patch.attr)
        if current is patch.ours:
            setattr(patch.owner, patch.attr, patch.stock)
