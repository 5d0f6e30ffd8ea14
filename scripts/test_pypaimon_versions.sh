#!/usr/bin/env bash
# tests/paimon against every pypaimon release rowformat.paimon accelerates
# (rowformat/paimon/_patches.py: TESTED_VERSIONS), each in a virtualenv of
# its own: a copy of run.sh's .venv (the same build of rowformat, through the
# editable install) with that pypaimon installed over the one it has.
# Usage: bash scripts/test_pypaimon_versions.sh [--others | version ...]
#   (default: all tested; --others: all but the one .venv has, which
#   'bash run.sh test' already tests)
# Needs: bash run.sh setup (the .venv to copy). Extra pytest arguments: PYTEST_ARGS.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
[ -x .venv/bin/python ] || { echo "run 'bash run.sh setup' first" >&2; exit 2; }
if [ $# -eq 0 ] || [ "$1" = --others ]; then
    skip="$([ "${1:-}" = --others ] && .venv/bin/python -c "import importlib.metadata as m
print(m.version('pypaimon'))" || true)"
    set -- $(.venv/bin/python -c "import sys
from rowformat.paimon import TESTED_VERSIONS
print(' '.join(v for v in sorted(TESTED_VERSIONS) if v != sys.argv[1]))" "$skip")
fi
for version in "$@"; do
    venv="$ROOT/.venv-pypaimon-$version"
    start=$SECONDS
    # made again when run.sh set .venv up anew since
    if [ ! -f "$venv/.copied" ] || [ .venv/.rowformat-setup -nt "$venv/.copied" ]; then
        rm -rf "$venv"
        cp -a .venv "$venv"
        "$venv/bin/python" -m pip install -q "pypaimon==$version"
        touch "$venv/.copied"
    fi
    got="$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('pypaimon'))")"
    [ "$got" = "$version" ] || { echo "$venv has pypaimon $got, not $version" >&2; exit 1; }
    echo "== tests/paimon with pypaimon $version"
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pytest tests/paimon -q ${PYTEST_ARGS:-}
    echo "== pypaimon $version: $((SECONDS - start)) s"
done
