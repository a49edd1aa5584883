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
# Four lanes: the cluster crawls in two shards (CRAWLD_TEST_SHARD; they
# mostly wait on leases and politeness delays, little CPU), test_crawl, and
# the rest; each binary's output (a shard's: NAME@k) goes to its own file
# and is printed, in name order, once every lane is done.
# CRAWLD_TEST_JOBS=1 runs them one by one, unsharded.
logs=$(mktemp -d)
all=""
for t in "$B"/tests/test_* "$B"/tests/replay_*; do
    case "$t" in *.o|*.d|*'*'*) continue ;; esac
    [ -x "$t" ] && all="$all $t"
done
run_one() { # binary [shard k/n]
    n=$(basename "$1")
    [ -n "${2:-}" ] && n="$n@${2%/*}"
    t0=$(date +%s)
    CRAWLD_TEST_SHARD=${2:-} "$1" >"$logs/$n.log" 2>&1
    echo $? >"$logs/$n.rc"
    echo $(($(date +%s) - t0)) >"$logs/$n.s"
}
cluster=""
long=""
short=""
for t in $all; do
    case "$(basename "$t")" in
    test_cluster_crawl) cluster="$cluster $t" ;;
    test_crawl) long="$long $t" ;;
    *) short="$short $t" ;;
    esac
done
names=""
if [ "${CRAWLD_TEST_JOBS:-4}" -gt 1 ]; then
    for t in $cluster; do names="$names $(basename "$t")@0 $(basename "$t")@1"; done
    (for t in $cluster; do run_one "$t" 0/2; done) &
    lane1=$!
    (for t in $cluster; do run_one "$t" 1/2; done) &
    lane2=$!
    (for t in $long; do run_one "$t"; done) &
    lane3=$!
    for t in $short; do run_one "$t"; done
    wait $lane1
    wait $lane2
    wait $lane3
    for t in $long $short; do names="$names $(basename "$t")"; done
else
    for t in $all; do run_one "$t"; names="$names $(basename "$t")"; done
fi
for n in $(echo $names | tr ' ' '\n' | sort); do
    log="$logs/$n.log"
    echo "== $n ($(cat "$logs/$n.s" 2>/dev/null || echo '?') s)"
    cat "$log"
    rc=$(cat "$logs/$n.rc" 2>/dev/null || echo 1)
    p=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    f=$(sed -n 's/.*\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    if [ "$rc" -ne 0 ] || [ -z "$p$f" ]; then
        bad="$bad $n"
        [ -z "$f" ] && failed=$((failed + 1))
    fi
done
rm -rf "$logs"
[ -n "$bad" ] && echo "failing binaries:$bad"
echo "tests: $passed passed, $failed failed"
[ -z "$bad" ]
