"""Replays every input that ever made a fuzz target fail
(tests/fuzz/regressions/<target>/) and the valid seed inputs: each must
decode or raise a rowformat.RowFormatError, nothing else."""
import pathlib

import pytest

from tests.fuzz import _schemas, _targets

FUZZ = pathlib.Path(__file__).resolve().parent / "fuzz"

TARGETS = {"row_reader": _targets.row_reader, "fory": _targets.fory, "fory_batch": _targets.fory_batch,
           "zstd_prefix": _targets.zstd_prefix}
REGRESSIONS = sorted((t, p) for t in TARGETS for p in (FUZZ / "regressions" / t).glob("*")
                     if p.is_file())


@pytest.mark.parametrize("target,path", REGRESSIONS, ids=[f"{t}/{p.name}" for t, p in REGRESSIONS])
def test_regression_input(target, path):
    TARGETS[target](path.read_bytes())


def test_regressions_exist():
    assert REGRESSIONS, "tests/fuzz/regressions/ is empty"


def test_row_reader_seeds():
    seeds = _schemas.row_reader_seeds()
    assert len(seeds) > 20
    for s in seeds:
        _targets.row_reader(s)


def test_zstd_prefix_seeds():
    seeds = _targets.zstd_prefix_seeds()
    assert len(seeds) == 5
    for s in seeds:
        _targets.zstd_prefix(s)


def test_row_reader_seeds_are_valid_files():
    import io

    import rowformat
    for k, data in _schemas.seed_files():
        report = rowformat.verify(io.BytesIO(data), _schemas.SCHEMAS[k])
        assert report.ok, str(report)


def test_fory_seeds():
    cases = _schemas.fory_cases()
    for s in _schemas.fory_seeds(cases):
        _targets.fory(s)


def test_truncations_and_bit_flips_of_seeds():
    """A cheap deterministic sweep, so the suite covers mutations even
    without atheris: every truncation and one flipped bit per byte of the
    smaller seeds."""
    for s in _schemas.row_reader_seeds()[:12]:
        for n in range(0, len(s), max(1, len(s) // 40)):
            _targets.row_reader(s[:n])
        for i in range(1, len(s), max(1, len(s) // 60)):
            _targets.row_reader(s[:i] + bytes([s[i] ^ 0x5A]) + s[i + 1:])
    for s in _schemas.fory_seeds(_schemas.fory_cases()):
        for i in range(1, len(s), max(1, len(s) // 30)):
            _targets.fory(s[:i] + bytes([s[i] ^ 0xA5]) + s[i + 1:])
