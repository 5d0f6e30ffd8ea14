"""The C wire helpers' fast paths (SSE2 and portable) agree with reference code."""
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.source_tree
@pytest.mark.parametrize("flags", [[], ["-DRF_NO_SIMD"]], ids=["simd", "portable"])
def test_wire_helpers_match_reference(tmp_path, flags):
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler builds this package, and this test"
    exe = tmp_path / "wire_check"
    subprocess.run([cc, "-O2", "-Wall", "-Werror", *flags, "-I", str(ROOT / "src" / "include"),
                    str(ROOT / "tests" / "c" / "wire_check.c"), "-o", str(exe)], check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout
