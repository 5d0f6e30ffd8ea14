"""rowformat/io is the one way to files: no module outside it opens, lists,
copies or deletes a file by other means, picks pyarrow.fs or fsspec, reads
the AWS_* environment or spells the list of store-setting prefixes."""
import ast
import pathlib
import re

import rowformat

PACKAGE = pathlib.Path(rowformat.__file__).resolve().parent
LAYER = PACKAGE / "io"

# calls that reach files by themselves (what the layer's modules wrap)
FILE_CALLS = re.compile(
    r"(?<![\w.])(?<!def )open\(|\bos\.(listdir|scandir|remove|unlink|rmdir|walk|rename|replace|link|"
    r"open|fdopen)\(|\bshutil\.(?!which\b)\w+|\.(read_bytes|write_bytes|read_text|write_text)\(\)"
    r"|\b(pyarrow\.fs|pafs|fsspec)\b")
# what is not a file's bytes: the process's own stdout (the CLI points a
# closed one at /dev/null), and a Spark worker's Python found on PATH and in
# Spark's working directory, with the links to an unpacked archive there
NOT_FILES = {("cli/__init__.py", "os.open("), ("spark/preflight.py", "os.remove("),
             ("spark/preflight.py", "_os.listdir(")}


def _code_lines(path: pathlib.Path):
    """(line number, text) of the code of ``path``: docstrings and comments left out."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(getattr(body[0], "value", None), ast.Constant) and \
                isinstance(body[0].value.value, str):
            docs.update(range(body[0].lineno, body[0].end_lineno + 1))
    for n, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split("#", 1)[0]
        if n not in docs and code.strip():
            yield n, code


def _outside_layer():
    for f in sorted(PACKAGE.rglob("*.py")):
        if LAYER not in f.parents:
            yield f, f.relative_to(PACKAGE).as_posix()


def test_no_module_outside_the_layer_reaches_files_itself():
    found = []
    for f, name in _outside_layer():
        for n, code in _code_lines(f):
            for m in FILE_CALLS.finditer(code):
                call = code[max(0, m.start() - 1):m.end()].strip()
                if not any(name == where and what in code for where, what in NOT_FILES):
                    found.append(f"{name}:{n}: {call}: {code.strip()}")
    assert not found, "\n".join(found)


def test_the_scan_sees_what_it_forbids():
    assert FILE_CALLS.search('with open(path, "rb") as f:')
    assert FILE_CALLS.search("os.listdir(d)") and FILE_CALLS.search("shutil.rmtree(d)")
    assert FILE_CALLS.search("import pyarrow.fs as pafs") and FILE_CALLS.search("fsspec.open(u)")
    assert FILE_CALLS.search("p.read_text()")
    assert not FILE_CALLS.search("reader.open(i)") and not FILE_CALLS.search("shutil.which(x)")
    assert not FILE_CALLS.search("fileio.read_bytes(path)")


def _modules_with(pattern: str) -> set[str]:
    rx = re.compile(pattern)
    return {name for f, name in [(f, f.relative_to(PACKAGE).as_posix())
                                 for f in PACKAGE.rglob("*.py")]
            if any(rx.search(code) for _, code in _code_lines(f))}


def test_one_module_each_picks_the_filesystem_reads_aws_and_lists_prefixes():
    assert _modules_with(r"\bS3FileSystem\(|fsspec\.core|url_to_fs") == {"io/stores.py"}
    assert _modules_with(r"[\"']AWS_[A-Z_]+[\"']") == {"io/settings.py"}
    assert _modules_with(r"[\"']fs\.s3a\.[\"']") == {"io/settings.py"}
    assert _modules_with(r"[\"']s3n\.[\"']") == {"io/settings.py"}


def test_one_test_of_local_or_remote():
    # "file://" is spelt once; callers ask urls.local() or urls.is_url()
    assert _modules_with(r"[\"']file://[\"']") == {"io/urls.py"}
