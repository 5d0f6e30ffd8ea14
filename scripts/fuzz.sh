#!/usr/bin/env bash
# Runs every atheris fuzz target in tests/fuzz for a bounded time.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 60; CI uses 60)
#
# Environment: PYTHON (default .venv/bin/python), FUZZ_WORK (default
# .fuzz-work: corpora and findings, kept between runs so longer runs build on
# shorter ones), FUZZ_JOBS (parallel workers per target, default 1),
# FUZZ_RSS_MB (libFuzzer's -rss_limit_mb, default 384: the interpreter's
# ~150 MB plus what the targets' limits let one input allocate, with room;
# see tests/fuzz/_run.py).
#
# Each target's corpus starts from the valid seeds (written by the target
# itself when its corpus dir is empty). Findings (crash-*, timeout-*, oom-*)
# land in $FUZZ_WORK/<target>/findings; copy each into
# tests/fuzz/regressions/<target>/ once fixed: tests/test_fuzz_regressions.py
# replays them. Exit status is non-zero when any target found something.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
PY="${PYTHON:-.venv/bin/python}"
WORK="${FUZZ_WORK:-.fuzz-work}"
JOBS="${FUZZ_JOBS:-1}"
RSS_MB="${FUZZ_RSS_MB:-384}"
status=0
for script in tests/fuzz/fuzz_*.py; do
    target="$(basename "$script" .py)"
    target="${target#fuzz_}"
    corpus="$WORK/$target/corpus"
    findings="$WORK/$target/findings"
    mkdir -p "$corpus" "$findings"
    if [ -z "$(ls -A "$corpus")" ]; then
        "$PY" -c "from tests.fuzz import _schemas; import pathlib
for i, s in enumerate(_schemas.seeds_for('$target')): pathlib.Path('$corpus', f'seed{i:03d}').write_bytes(s)"
    fi
    echo "== $target: ${SECONDS_PER_TARGET}s, corpus $(ls "$corpus" | wc -l) inputs"
    extra=()
    if [ "$JOBS" -gt 1 ]; then extra=(-jobs="$JOBS" -workers="$JOBS"); fi
    "$PY" -m "tests.fuzz.fuzz_$target" "$corpus" -max_total_time="$SECONDS_PER_TARGET" -timeout=20 \
        -rss_limit_mb="$RSS_MB" -artifact_prefix="$findings/" -print_final_stats=1 "${extra[@]}" \
        2>&1 | grep -v '^INFO: Instrumenting' | tail -n 25
    rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$findings")" ]; then
        echo "!! $target: exit $rc, findings in $findings:" >&2
        ls "$findings" >&2
        status=1
    fi
done
exit $status
