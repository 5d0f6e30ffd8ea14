import os
import pathlib

import pytest
from hypothesis import HealthCheck, settings

SHARED = pathlib.Path(__file__).resolve().parents[1].parent / "shared"
VECTORS = SHARED / "vectors"

settings.register_profile("ci", max_examples=60, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def fixture_path():
    path = VECTORS / "java-written-fixture.row"
    assert path.exists(), f"missing shared vector {path}"
    return path


@pytest.fixture(autouse=True)
def _no_ignored_exceptions(capfd):
    """Fails a test whose stderr shows an exception swallowed in a destructor."""
    yield
    err = capfd.readouterr().err
    assert "Exception ignored" not in err, err
