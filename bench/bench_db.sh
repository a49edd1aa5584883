#!/bin/sh
# storage/db throughput: inserts/s async at batch sizes 1/100/1000/10000,
# sync from 1 and 4 threads and 1000 per call, re-inserts of existing URLs
# (the Bloom-MAYBE check), reader lookups, the Bloom-rebuild scan and the
# reopen time.
# Besides ops/s (wall clock, which depends on the machine's load) each line
# gives CPU microseconds and KB written to storage per operation.
# Env: B (build dir, from make bench), BENCH_DB_N (default 1000000 keys),
# BENCH_DB_SMALL (default 100000, for the slow batch 1/100 and sync runs).
B=${B:-build/default}
bin="$B/bench/bench_db"
N=${BENCH_DB_N:-1000000}
SMALL=${BENCH_DB_SMALL:-100000}
[ -x "$bin" ] || { echo "bench_db: $bin not built (run make bench)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/crawld-bench-db.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
n=0
run() {
    n=$((n + 1))
    "$bin" "$tmp/$n" "$@" || exit 1
    rm -rf "$tmp/$n"
}
echo "keys: URL-like, random over 1000 hosts unless 'clustered' (runs of 50 per host)"
echo "-- async inserts by batch size (queued rows)"
run async "$SMALL" 1
run async "$SMALL" 100
run async "$N" 1000
run async "$N" 10000
echo "-- async, other shapes"
BENCH_DB_SEEN_ONLY=1 run async "$N" 10000
BENCH_DB_BARE=1 run async "$N" 10000
BENCH_DB_CLUSTERED=1 run async "$N" 10000
echo "   vouched absent (a Bloom NO: the insert without its look-up), queued, seen_only, bare"
BENCH_DB_ABSENT=1 run async "$N" 10000
BENCH_DB_ABSENT=1 BENCH_DB_SEEN_ONLY=1 run async "$N" 10000
BENCH_DB_ABSENT=1 BENCH_DB_BARE=1 run async "$N" 10000
echo "-- sync: db_insert_url_wait (one per call), db_insert_urls_wait (1000 per call)"
echo "   new URLs, then existing ones (the Bloom-MAYBE check)"
run sync "$SMALL" 10000 1
run sync "$SMALL" 10000 4
run batch "$N" 10000
run dup "$SMALL" 10000 1
run dupbatch "$N" 10000
echo "-- readers on $N rows"
run read "$N" 10000
