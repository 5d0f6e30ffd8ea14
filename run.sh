#!/usr/bin/env bash
# One entry point for people and CI.
#   bash run.sh demo   set up .venv, build, run the main job (examples/demo.py)
#   bash run.sh test   set up .venv, build, run the whole test suite
#   bash run.sh setup  only set up .venv and build
set -euo pipefail
cd "$(dirname "$0")"
VENV="${VENV:-.venv}"
PY="${PYTHON:-python3}"

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # Build the wheel from source (Cython, C) and install it with the test
    # extras; tests import this installed package, never the source tree.
    "$VENV/bin/python" -m pip install -q ".[test]"
}

case "${1:-}" in
    setup)
        setup ;;
    demo)
        setup
        shift
        "$VENV/bin/python" examples/demo.py "$@" ;;
    test)
        setup
        shift
        # Run from tests/ so the source package in the repository root can
        # never shadow the installed one.
        "$VENV/bin/python" -P -c "import rowformat; print('testing', rowformat.__file__)"
        "$VENV/bin/pytest" "$@" ;;
    *)
        echo "usage: bash run.sh {demo|test|setup}" >&2
        exit 2 ;;
esac
