#!/bin/sh
# Runs every benchmark script bench/bench_*.sh in turn. Each prints its own
# table of ratios against the peer it compares with, measured in one run.
# usage: bench/run.sh BUILD_DIR BIN_DIR   (called by `make bench`)
B=$1
BIN=$2
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
export B BIN CRAWLD_ROOT="$root"
rc=0
for s in bench/bench_*.sh; do
    [ -f "$s" ] || continue
    if [ -n "$BENCH_ONLY" ] && [ "$s" != "bench/bench_$BENCH_ONLY.sh" ]; then continue; fi
    echo "## $(basename "$s" .sh)"
    sh "$s" || rc=1
done
exit $rc
