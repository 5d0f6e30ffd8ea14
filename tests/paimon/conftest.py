"""Fixtures of the rowformat.paimon tests: real pypaimon tables in temporary
warehouses, and pypaimon restored to stock around every test."""
import pytest

from tests._deps import importorskip_pypaimon

importorskip_pypaimon()

import rowformat.paimon as rp  # noqa: E402

from ._tables import Warehouse  # noqa: E402


@pytest.fixture(autouse=True)
def _stock_around_each_test():
    rp.restore()
    yield
    rp.restore()


@pytest.fixture
def wh(tmp_path):
    return Warehouse(tmp_path / "warehouse")
