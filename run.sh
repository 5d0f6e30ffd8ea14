#!/usr/bin/env bash
# One entry point for people and CI.
#   bash run.sh demo   set up .venv, run the main job: a pipeline on local Spark
#   bash run.sh test   set up .venv, run the whole test suite (Spark included)
#   bash run.sh fuzz [seconds per target]   fuzz the readers (default 600 s each)
#   bash run.sh setup  only set up .venv
# Needs Python >= 3.11, a C compiler, and Java 17+ for Spark.
#
# The package is installed in editable mode: the compiled modules rebuild on
# import when their sources change, so `.venv/bin/python -m pytest` from the
# repository root tests the current tree. Setup reinstalls only when
# pyproject.toml, CMakeLists.txt or build_backend/ changed, a Python or Cython module was
# added, moved or removed, or .venv's rowformat no longer imports.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")" && pwd)"
cd "$ROOT"
VENV="${VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        echo "run.sh: creating $VENV (first run: then installing dependencies and compiling" \
             "the extensions, about 4 minutes on 2 cores)" >&2
        "$PY" -m venv "$VENV"
    fi
    local stamp="$VENV/.rowformat-setup" want
    # the editable install lists the package's files: a new or moved module (.py or .pyx) needs a reinstall
    want="$( (cat pyproject.toml CMakeLists.txt build_backend/*.py; find rowformat src \( -name '*.py' -o -name '*.pyx' \) | sort) \
        | sha256sum | cut -c1-16)"
    # a build directory broken behind the stamp's back (an old `pip install .`
    # from this checkout rewrote build/'s CMake cache) shows as a failing import
    if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] \
        && ! "$VENV/bin/python" -c "import rowformat._rowcodec" 2>/dev/null; then
        echo "run.sh: .venv's rowformat does not import; reinstalling" >&2
        rm -f "$stamp"
    fi
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "run.sh: installing the build tools into $VENV" >&2
        "$VENV/bin/python" -m pip install -q --upgrade pip
        # editable rebuilds run in this venv, so the build tools live here too;
        # without build isolation, dependencies published only as sdists
        # (pyspark) build here as well: setuptools and wheel
        "$VENV/bin/python" -m pip install -q "scikit-build-core>=0.10" "cython>=3.0" \
            "cython-cmake>=0.2" cmake ninja setuptools wheel
        echo "run.sh: installing rowformat[test,spark] editable: its dependencies, then compiling the extensions" >&2
        "$VENV/bin/python" -m pip install -q --no-build-isolation -e ".[test,spark]"
        echo "run.sh: $VENV is ready" >&2
        # Spark finds the paimon-row source by listing pyspark_* modules on
        # sys.path, which an editable install's import hook does not show it
        "$VENV/bin/python" -c "import site, sys; open(site.getsitepackages()[0] + '/rowformat-spark.pth', 'w').write(sys.argv[1] + '\n')" "$ROOT/src"
        # ROWFORMAT_ACCELERATE's start-up hook: a wheel installs this .pth itself
        cp src/rowformat-accelerate.pth "$("$VENV/bin/python" -c "import site; print(site.getsitepackages()[0])")/"
        echo "$want" > "$stamp"
    fi
    # tests/spark/test_cluster.py packs a venv with venv-pack; test_connect.py is a
    # Spark Connect client, which needs gRPC (pyspark[connect]'s client packages)
    if ! "$VENV/bin/python" -c "import venv_pack, grpc, grpc_status, google.rpc" 2>/dev/null; then
        echo "run.sh: installing venv-pack and Spark Connect's client packages" >&2
        "$VENV/bin/python" -m pip install -q venv-pack "grpcio>=1.76" "grpcio-status>=1.76" \
            "googleapis-common-protos>=1.71"
    fi
}

case "${1:-}" in
    setup)
        setup ;;
    demo)
        setup
        shift
        export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
        "$VENV/bin/python" docs/examples/spark_pipeline.py "$@" ;;
    test)
        setup
        shift
        export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
        "$VENV/bin/python" -m pytest "$@" ;;
    fuzz)
        setup
        shift
        "$VENV/bin/python" -m pip install -q atheris
        bash scripts/fuzz.sh "${1:-600}" ;;
    *)
        echo "usage: bash run.sh {demo|test|fuzz|setup}" >&2
        exit 2 ;;
esac
