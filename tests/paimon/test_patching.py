"""accelerate()/restore()/accelerated(): what is patched, that restore() puts
pypaimon's own classes back, nesting and threads, and the refusal of an
untested pypaimon."""
import importlib.metadata
import threading

import pytest

import rowformat.paimon as rp
from rowformat import RowFormatError


def _stock():
    import pypaimon.read.split_read as split_read
    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.read.reader import format_row_reader
    from pypaimon.write.writer import format_row_writer
    return (split_read.FormatRowReader, format_row_writer.FormatRowWriter,
            LocalFileIO.__dict__["write_row"], format_row_reader.FormatRowReader)


def test_accelerate_patches_and_restore_puts_stock_back():
    reader, writer, write_row, defined = _stock()
    assert reader is defined
    rp.accelerate()
    assert rp.is_accelerated()
    now = _stock()
    assert now[0] is not reader and now[0].__module__ == "rowformat.paimon._reader"
    assert now[1] is not writer and now[2] is not write_row
    assert now[3] is defined            # pypaimon's own class is not touched, only the name
    rp.accelerate()                     # idempotent
    assert _stock() == now
    rp.restore()
    assert not rp.is_accelerated()
    assert _stock() == (reader, writer, write_row, defined)
    rp.restore()                        # idempotent
    assert _stock() == (reader, writer, write_row, defined)


def test_context_manager_nests_and_restores():
    stock = _stock()
    with rp.accelerated():
        with rp.accelerated():
            assert rp.is_accelerated()
        assert rp.is_accelerated()      # the outer block is still open
    assert not rp.is_accelerated() and _stock() == stock


def test_accelerate_inside_a_block_outlives_it_and_restore_is_immediate():
    stock = _stock()
    with rp.accelerated():
        rp.accelerate()
    assert rp.is_accelerated()
    with rp.accelerated():
        rp.restore()
        assert not rp.is_accelerated()
    assert not rp.is_accelerated() and _stock() == stock


def test_exception_in_block_restores():
    stock = _stock()
    with pytest.raises(KeyError):
        with rp.accelerated():
            raise KeyError("x")
    assert _stock() == stock


def test_blocks_in_many_threads():
    stock = _stock()
    barrier = threading.Barrier(8)
    seen = []

    def work():
        for _ in range(50):
            with rp.accelerated():
                seen.append(rp.is_accelerated())
                with rp.accelerated():
                    pass
        barrier.wait()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(seen) and len(seen) == 400
    assert not rp.is_accelerated() and _stock() == stock


@pytest.mark.parametrize("version", ["1.4.2", "2.1.1", "3.0.0.dev0"])
def test_untested_version_refused_and_nothing_patched(monkeypatch, version):
    stock = _stock()
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: version if name == "pypaimon" else real(name))
    with pytest.raises(rp.PaimonIntegrationError, match=f"pypaimon {version} is not a version"):
        rp.accelerate()
    with pytest.raises(RowFormatError):
        with rp.accelerated():
            pass
    assert not rp.is_accelerated() and _stock() == stock


def test_later_blocks_read_no_metadata_or_source(monkeypatch):
    """An accelerated() block opens in each Spark task: after the first, the
    pypaimon version and the checked functions' source are not read again."""
    import inspect
    with rp.accelerated():
        pass
    calls = []
    real_source = inspect.getsource
    monkeypatch.setattr(inspect, "getsource", lambda fn: calls.append(fn) or real_source(fn))
    with rp.accelerated():
        assert rp.is_accelerated()
    assert calls == [] and not rp.is_accelerated()
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",       # a new lookup is asked again
                        lambda name: "9.9" if name == "pypaimon" else real(name))
    with pytest.raises(rp.PaimonIntegrationError, match="pypaimon 9.9 is not a version"):
        rp.accelerate()


def test_missing_pypaimon_refused(monkeypatch):
    real = importlib.metadata.version

    def version(name):
        if name == "pypaimon":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)
    monkeypatch.setattr(importlib.metadata, "version", version)
    with pytest.raises(rp.PaimonIntegrationError, match="not installed"):
        rp.accelerate()


def test_changed_signature_refused(monkeypatch):
    from pypaimon.read.reader import format_row_reader

    stock = _stock()

    def init(self, file_io, file_path, read_fields, full_fields, push_down_predicate,
             batch_size=1024, row_indices=None, something_new=None):
        pass
    monkeypatch.setattr(format_row_reader.FormatRowReader, "__init__", init)
    with pytest.raises(rp.PaimonIntegrationError, match="FormatRowReader"):
        rp.accelerate()
    assert not rp.is_accelerated() and _stock()[1:3] == stock[1:3]


def test_someone_elses_patch_refused(monkeypatch):
    import pypaimon.read.split_read as split_read

    class Other:
        pass
    monkeypatch.setattr(split_read, "FormatRowReader", Other)
    with pytest.raises(rp.PaimonIntegrationError, match="another patch"):
        rp.accelerate()
    assert split_read.FormatRowReader is Other


def test_missing_attribute_refused(monkeypatch):
    from pypaimon.write.writer import format_row_writer
    monkeypatch.delattr(format_row_writer, "FormatRowWriter")
    with pytest.raises(rp.PaimonIntegrationError, match="FormatRowWriter"):
        rp.accelerate()
    assert not rp.is_accelerated()


def test_merged_read_patched_and_restored():
    from pypaimon.read.split_read import MergeFileSplitRead
    stock = MergeFileSplitRead.__dict__["create_reader"]
    with rp.accelerated():
        ours = MergeFileSplitRead.__dict__["create_reader"]
        assert ours is not stock and ours.__module__ == "rowformat.paimon._merge"
        assert ours._rowformat_stock is stock
    assert MergeFileSplitRead.__dict__["create_reader"] is stock


def test_merged_read_of_another_shape_refused(monkeypatch):
    from pypaimon.read.split_read import MergeFileSplitRead
    stock = _stock()

    def create_reader(self, extra=None):
        pass
    create_reader.__module__ = MergeFileSplitRead.__module__
    monkeypatch.setattr(MergeFileSplitRead, "create_reader", create_reader)
    with pytest.raises(rp.PaimonIntegrationError, match="create_reader"):
        rp.accelerate()
    assert not rp.is_accelerated() and _stock() == stock
    assert MergeFileSplitRead.__dict__["create_reader"] is create_reader


def test_someone_elses_merged_read_refused(monkeypatch):
    from pypaimon.read.split_read import MergeFileSplitRead

    def create_reader(self):
        pass
    monkeypatch.setattr(MergeFileSplitRead, "create_reader", create_reader)
    with pytest.raises(rp.PaimonIntegrationError, match="another patch"):
        rp.accelerate()
    assert MergeFileSplitRead.__dict__["create_reader"] is create_reader
