"""Every Python code block of the README and of docs/ runs as written.

A page's ```python blocks run in order in one fresh interpreter, as a reader
would paste them one after the other, in an empty working directory; its
```pycon blocks are doctests (their printed output is checked). A page whose
code starts Spark needs pyspark, and one that imports torch needs torch: without
them the page is skipped, saying so. A page whose code uses ``s3://my-bucket/``
runs against the tests' S3 server on loopback, its ``AWS_*`` variables set."""
import doctest
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))] if p.exists()]
pytestmark = pytest.mark.source_tree        # the pages are not in a wheel's test directory
BLOCK = re.compile(r"^```(python|pycon)\n(.*?)^```$", re.M | re.S)
# what a page's code may need beyond the test extras, by the module it imports
OPTIONAL = ("pyspark", "torch", "pypaimon")


# the bucket the pages' object-store examples use (S3_BUCKET in their code)
S3_BUCKET = "s3://my-bucket/"


def _docs_bucket(request) -> dict:
    """The session's loopback S3 server with a fresh, empty ``my-bucket``:
    its AWS_* variables, which the examples read as a user's would be set."""
    import pyarrow.fs as pafs
    server = request.getfixturevalue("s3_server")
    fs = pafs.S3FileSystem(**server.storage_options())
    if fs.get_file_info("my-bucket").type != pafs.FileType.NotFound:
        fs.delete_dir_contents("my-bucket", missing_dir_ok=True)
    else:
        server.make_bucket("my-bucket")
    return server.env()


def blocks(page: pathlib.Path, kind: str) -> list[str]:
    return [code for k, code in BLOCK.findall(page.read_text()) if k == kind]


def test_the_pages_hold_code_to_run():
    if not PAGES:
        pytest.skip("no README.md beside tests/ (a wheel's test run)")
    # the extraction itself: a page renamed or a fence written differently fails here
    assert len(blocks(ROOT / "README.md", "python")) >= 4
    assert blocks(ROOT / "docs" / "row-files.md", "pycon")


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "python")],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_python_blocks_run(page, tmp_path, request):
    code = "\n".join(blocks(page, "python"))
    for module in OPTIONAL:
        if re.search(rf"^\s*(import|from) {module}\b", code, re.M):
            pytest.importorskip(module, reason=f"{page.name}'s code needs {module}")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    if S3_BUCKET in code:   # the page's object-store examples: a store on loopback, its AWS_* set
        env.update(_docs_bucket(request))
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{page.name}:\n{proc.stdout}\n{proc.stderr[-4000:]}"


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "pycon")],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_pycon_blocks_print_what_they_show(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    test = parser.get_doctest("\n".join(blocks(page, "pycon")), {}, page.name, str(page), 0)
    runner.run(test)
    assert runner.failures == 0, f"{page.name}: {runner.failures} examples printed otherwise"
