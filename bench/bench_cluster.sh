#!/bin/sh
# bench/bench_cluster.sh: the link-exchange rate one redis-server sustains,
# crawld's link exchange (storage/outbox + cluster/xchg + the seen-set)
# against bare XADD/XREADGROUP/XACK in the same run (bench/bench_cluster.c).
# Starts its own redis-server on a Unix socket in a temp folder with
# appendonly yes and appendfsync always, and stops it.
# Not measured yet: pages/s of 1, 2 and 3 crawling nodes (the partitioned
# crawl is not wired into crawld run; see cluster/README.md).
# env: B (build dir), LINKS (default 20000), ROUNDS (default 3).
set -u
B=${B:-build/default}
LINKS=${LINKS:-20000}
ROUNDS=${ROUNDS:-3}
BIN="$B/bench/bench_cluster"
[ -x "$BIN" ] || { echo "bench_cluster: $BIN missing (run through make bench)"; exit 1; }
command -v redis-server >/dev/null 2>&1 || { echo "bench_cluster: needs redis-server (apt-get install redis-server)"; exit 1; }
dir=$(mktemp -d /tmp/crawld-bench-redis-XXXXXX) || exit 1
cat >"$dir/redis.conf" <<CONF
port 0
unixsocket $dir/redis.sock
dir $dir
logfile $dir/redis.log
save ""
appendonly yes
appendfsync always
CONF
redis-server "$dir/redis.conf" </dev/null >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
i=0
until redis-cli -s "$dir/redis.sock" ping 2>/dev/null | grep -q PONG; do
    i=$((i + 1))
    [ $i -gt 200 ] && { echo "bench_cluster: redis-server did not start (see $dir/redis.log)"; exit 1; }
    sleep 0.05
done
"$BIN" "unix:$dir/redis.sock" "$LINKS" "$ROUNDS"
