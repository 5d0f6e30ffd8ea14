#!/usr/bin/env bash
# One entry point for people and CI.
#   bash run.sh demo   set up .venv, build, run the main job: a pipeline on local Spark
#   bash run.sh test   set up .venv, build, run the whole test suite (Spark included)
#   bash run.sh fuzz [seconds per target]   fuzz the readers (default 600 s each)
#   bash run.sh setup  only set up .venv and build
# Needs Python >= 3.11, a C compiler, and Java 17+ for Spark.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")" && pwd)"
cd "$ROOT"
VENV="${VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # Build the wheel from source (Cython, C) and install it with the test and
    # Spark extras; tests import this installed package, never the source tree.
    "$VENV/bin/python" -m pip install -q ".[test,spark]"
}

# Spark's Python workers put the JVM's working directory on sys.path: run
# from a scratch directory so they import the installed package.
in_scratch() {
    local dir
    dir="$(mktemp -d)"
    (cd "$dir" && "$@")
    rm -rf "$dir"
}

case "${1:-}" in
    setup)
        setup ;;
    demo)
        setup
        shift
        export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
        in_scratch "$VENV/bin/python" "$ROOT/examples/spark_pipeline.py" "$@" ;;
    test)
        setup
        shift
        "$VENV/bin/python" -P -c "import rowformat; print('testing', rowformat.__file__)"
        export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
        "$VENV/bin/pytest" "$@" ;;
    fuzz)
        setup
        shift
        "$VENV/bin/python" -m pip install -q atheris
        bash scripts/fuzz.sh "${1:-600}" ;;
    *)
        echo "usage: bash run.sh {demo|test|fuzz|setup}" >&2
        exit 2 ;;
esac
