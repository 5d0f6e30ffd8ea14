#!/usr/bin/env bash
# Builds the extensions with AddressSanitizer + UndefinedBehaviorSanitizer
# (CMake option ROWFORMAT_SANITIZE) into their own virtualenv and runs the
# test suite under them.
#
#   scripts/sanitize.sh [pytest args...]
#
# Environment: VENV (default .venv-asan), PYTHON (default python3).
# CPython itself is not instrumented, so libasan is preloaded; leak checking
# is off (the interpreter's own allocations at exit are not leaks of ours).
# UBSan findings abort the run (halt_on_error), so a pass means none.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv-asan}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q scikit-build-core cython cython-cmake setuptools wheel
# editable, like run.sh's .venv: pytest runs from the repository root
"$VENV/bin/python" -m pip install -q --no-build-isolation \
    -C cmake.define.ROWFORMAT_SANITIZE=ON -C cmake.build-type=RelWithDebInfo \
    -C build-dir=build/asan -e ".[test]"
LIBASAN="$(${CC:-gcc} -print-file-name=libasan.so)"
LIBUBSAN="$(${CC:-gcc} -print-file-name=libubsan.so)"
export LD_PRELOAD="$LIBASAN${LIBUBSAN:+:$LIBUBSAN}"
# pytest captures fd 2 (capfd): reports go to files too, build/asan/report.<pid>
mkdir -p build/asan
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0:log_path=$PWD/build/asan/asan-report:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$PWD/build/asan/ubsan-report:${UBSAN_OPTIONS:-}"
export PYTHONMALLOC=malloc   # let ASan see every Python-side allocation too
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
"$VENV/bin/python" -c "import rowformat, rowformat._rowcodec; print('sanitized build:', rowformat._rowcodec.__file__)"
exec "$VENV/bin/python" -m pytest -p no:cacheprovider "$@"
