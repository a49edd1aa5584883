#!/bin/sh
# Runs every test binary of a build (tests/test_* and the fuzz-corpus
# replays), from the project root, and closes with the totals.
# usage: tests/run.sh BUILD_DIR BIN_DIR
B=$1
BIN=$2
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
CRAWLD_BIN="$root/$BIN/crawld"
CRAWLD_TESTSITE="$root/$BIN/testsite"
CRAWLD_FAULTS_BIN="$root/$BIN/crawld-faults"
CRAWLD_ROOT="$root"
: "${CRAWLD_CONFORMANCE:=$root/../shared/conformance}"
export CRAWLD_BIN CRAWLD_TESTSITE CRAWLD_FAULTS_BIN CRAWLD_ROOT CRAWLD_CONFORMANCE
passed=0
failed=0
bad=""
log=$(mktemp)
for t in "$B"/tests/test_* "$B"/tests/replay_*; do
    case "$t" in *.o|*.d|*'*'*) continue ;; esac
    [ -x "$t" ] || continue
    echo "== $(basename "$t")"
    "$t" >"$log" 2>&1
    rc=$?
    cat "$log"
    p=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    f=$(sed -n 's/.*\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    if [ $rc -ne 0 ] || [ -z "$p$f" ]; then
        bad="$bad $(basename "$t")"
        [ -z "$f" ] && failed=$((failed + 1))
    fi
done
rm -f "$log"
[ -n "$bad" ] && echo "failing binaries:$bad"
echo "tests: $passed passed, $failed failed"
[ -z "$bad" ]
