import os
import pathlib

import pytest
from hypothesis import HealthCheck, settings

DATA = pathlib.Path(__file__).resolve().parent / "data"

settings.register_profile("ci", max_examples=60, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def fixture_path():
    """A .row file written by Paimon Java's RowFileFormat writer."""
    return DATA / "java-written-fixture.row"


@pytest.fixture(autouse=True)
def _no_ignored_exceptions(capfd):
    """Fails a test whose stderr shows an exception swallowed in a destructor."""
    yield
    err = capfd.readouterr().err
    assert "Exception ignored" not in err, err
