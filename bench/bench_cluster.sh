#!/bin/sh
# bench/bench_cluster.sh: two measurements against one redis-server that
# this script starts (Unix socket in a temp folder, appendonly yes,
# appendfsync always) and stops:
#
# 1. The link exchange alone (bench/bench_cluster.c): crawld's path
#    (storage/outbox + cluster/xchg + the seen-set) against bare
#    XADD/XREADGROUP/XACK, in the same run.
# 2. A crawl of the many-host latency site (as bench_broad.sh: CLUSTER_HOSTS
#    hosts, every answer CLUSTER_LATENCY_MS late, CLUSTER_DELAY_MS politeness
#    delay; CLUSTER_PAGES pages per host so that it ends) by one plain
#    crawld (no Redis) and by 1, 2 and 3 cluster nodes, to quiescence (each
#    node exits by itself). Per node count: pages/s (the site's requests over
#    the span from the first to the last), CPU ms per page (all nodes' user +
#    system, from GNU time, over the requests), and the link exchange Redis
#    sustained (XADD and XACK calls per second of crawl, INFO commandstats,
#    reset before each run). CLUSTER_ROUNDS rounds (default 3), the node
#    counts interleaved within each round; medians.
#
# A crawld that refuses cluster.redis (a build without the partitioned
# crawl) gets n/a cluster rows saying why; the plain row is still measured.
# env: B (build dir), BIN (bin dir), LINKS (default 20000), ROUNDS (default
# 3), CLUSTER_HOSTS (200), CLUSTER_PAGES (8), CLUSTER_LATENCY_MS (100),
# CLUSTER_DELAY_MS (1000), CLUSTER_ROUNDS (3), CLUSTER_PORT (18231),
# CLUSTER_TIMEOUT_S (300, per crawl), CLUSTER_NODES ("1 2 3").
set -u
B=${B:-build/default}
LINKS=${LINKS:-20000}
ROUNDS=${ROUNDS:-3}
HOSTS=${CLUSTER_HOSTS:-200}
PAGES=${CLUSTER_PAGES:-8}
LAT=${CLUSTER_LATENCY_MS:-100}
DELAY=${CLUSTER_DELAY_MS:-1000}
CROUNDS=${CLUSTER_ROUNDS:-3}
PORT=${CLUSTER_PORT:-18231}
TIMEOUT=${CLUSTER_TIMEOUT_S:-300}
NODES=${CLUSTER_NODES:-1 2 3}
root=${CRAWLD_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BINDIR=${BIN:-bin}
case "$BINDIR" in /*) ;; *) BINDIR="$root/$BINDIR" ;; esac
CRAWLD="$BINDIR/crawld"
SITE="$BINDIR/testsite"
MICRO="$B/bench/bench_cluster"
say() { echo "[bench-cluster] $*" >&2; }
[ -x "$MICRO" ] || { echo "bench_cluster: $MICRO missing (run through make bench)"; exit 1; }
command -v redis-server >/dev/null 2>&1 || { echo "bench_cluster: needs redis-server (apt-get install redis-server)"; exit 1; }
# GNU time measures each node's CPU; installed as root, as the other benches do
if [ ! -x /usr/bin/time ] && [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends time >/dev/null
fi
[ -x /usr/bin/time ] || { echo "bench_cluster: needs GNU time (apt-get install time)"; exit 1; }
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
site=""
nodepids=""
cleanup() {
    for p in $nodepids; do kill -KILL "$p" 2>/dev/null; done
    [ -n "$site" ] && kill "$site" 2>/dev/null
    kill $pid 2>/dev/null
    wait 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM
rcli() { redis-cli -s "$dir/redis.sock" "$@"; }
i=0
until rcli ping 2>/dev/null | grep -q PONG; do
    i=$((i + 1))
    [ $i -gt 200 ] && { echo "bench_cluster: redis-server did not start (see $dir/redis.log)"; exit 1; }
    sleep 0.05
done

# ---- 1. the link exchange alone ----
if [ -z "${CLUSTER_SKIP_MICRO:-}" ]; then
    "$MICRO" "unix:$dir/redis.sock" "$LINKS" "$ROUNDS" || exit 1
    echo
fi

# ---- 2. 1, 2 and 3 nodes crawling the many-host latency site ----
[ -x "$CRAWLD" ] && [ -x "$SITE" ] || { echo "bench_cluster: $CRAWLD or $SITE missing"; exit 1; }
# HOSTS + 1 site hosts, d.test (robots.txt 500) left out of the seeds
awk -v n="$((HOSTS + 1))" 'BEGIN { for (i = 0; i < n; i++) {
    name = ""; k = i
    do { name = sprintf("%c", 97 + k % 26) name; k = int(k / 26) - 1 } while (k >= 0)
    if (i != 3) print name } }' > "$dir/hosts"
if [ "$(wc -l < "$dir/hosts")" -ne "$HOSTS" ] || [ "$HOSTS" -gt 701 ]; then
    echo "bench_cluster: CLUSTER_HOSTS must be 1..701"; exit 1
fi

# config NAME NODE_INDEX CLUSTER(0/1) CRAWL_ID
config() {
    {
        echo "[crawl]"
        printf 'seeds = ['; sed "s|.*|\"http://&.test:$PORT/\"|" "$dir/hosts" | paste -sd, -; echo ']'
        echo "user_agent = \"crawld-bench-$2\""
        echo "[fetch]"
        printf 'resolve = ['; sed "s|.*|\"&.test:$PORT:127.0.0.1\"|" "$dir/hosts" | paste -sd, -; echo ']'
        echo "[politeness]"
        echo "delay_ms = $DELAY"
        echo "[storage]"
        echo "state_dir = \"$dir/state-$1\""
        if [ "$3" = 1 ]; then
            echo "[cluster]"
            echo "redis = \"unix:$dir/redis.sock\""
            echo "crawl_id = \"$4\""
            echo "node_id = \"node-$2\""
            echo "lease_ms = 5000"
        fi
    } > "$dir/$1.toml"
}

start_site() {
    rm -f "$dir/site.log"
    "$SITE" --port "$PORT" --hosts "$((HOSTS + 1))" --pages "$PAGES" --no-specials \
        --latency-ms "$LAT" --log "$dir/site.log" > "$dir/site.out" 2>&1 &
    site=$!
    for i in $(seq 1 50); do
        grep -q listening "$dir/site.out" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "bench_cluster: the test site did not start: $(cat "$dir/site.out")"; exit 1
}
stop_site() { kill "$site" 2>/dev/null; wait "$site" 2>/dev/null; site=""; }

# Does this crawld crawl as a cluster node? (one that cannot says so at once)
config probe 0 1 probe
supported=1
if timeout 10 "$CRAWLD" run -c "$dir/probe.toml" 2>&1 </dev/null | grep -q "cannot crawl as a cluster node"; then
    supported=0
fi
rm -rf "$dir/state-probe"

# run LABEL N CLUSTER: one crawl to its end; appends to $dir/results:
# label pages_per_s requests cpu_s xadd_per_s xack_per_s status
run=0
run() {
    label=$1; n=$2; cl=$3
    run=$((run + 1))
    start_site
    [ "$cl" = 1 ] && rcli config resetstat >/dev/null
    nodepids=""
    for k in $(seq 1 "$n"); do
        config "$run-$k" "$k" "$cl" "bench-$run"
        /usr/bin/time -f "%U %S" -o "$dir/time-$run-$k" "$CRAWLD" run -c "$dir/$run-$k.toml" \
            > "$dir/out-$run-$k" 2> "$dir/err-$run-$k" &
        nodepids="$nodepids $!"
    done
    t0=$(date +%s)
    st=ok
    for p in $nodepids; do
        while kill -0 "$p" 2>/dev/null; do
            if [ $(($(date +%s) - t0)) -gt "$TIMEOUT" ]; then
                st=timeout; kill -KILL "$p" 2>/dev/null
            fi
            sleep 0.2
        done
        wait "$p" || st=failed
    done
    nodepids=""
    stop_site
    xadd=0; xack=0
    if [ "$cl" = 1 ]; then
        xadd=$(rcli info commandstats | sed -n 's/^cmdstat_xadd:calls=\([0-9]*\),.*/\1/p')
        xack=$(rcli info commandstats | sed -n 's/^cmdstat_xack:calls=\([0-9]*\),.*/\1/p')
    fi
    cpu=$(cat "$dir"/time-$run-* | awk '{ c += $1 + $2 } END { printf "%.2f", c }')
    awk -F'\t' -v label="$label" -v cpu="$cpu" -v xadd="${xadd:-0}" -v xack="${xack:-0}" -v st="$st" '
        NR == 1 { t0 = $1 } { t1 = $1 }
        END {
            s = (t1 - t0) / 1000
            printf "%s %.1f %d %s %.1f %.1f %s\n", label, (s > 0 ? NR / s : 0), NR, cpu,
                (s > 0 ? xadd / s : 0), (s > 0 ? xack / s : 0), st
        }' "$dir/site.log" >> "$dir/results"
    [ "$st" = ok ] || say "$label (run $run): $st; stderr of its first node ends: $(tail -n 3 "$dir/err-$run-1")"
    rm -rf "$dir"/state-$run-*
}

: > "$dir/results"
for r in $(seq 1 "$CROUNDS"); do
    say "round $r of $CROUNDS: plain"
    run plain 1 0
    if [ "$supported" = 1 ]; then
        for n in $NODES; do
            say "round $r of $CROUNDS: $n node(s)"
            run "nodes$n" "$n" 1
        done
    fi
done

# one request per host at a time, starts spaced by the delay
# (frontier/frontier.c host_spacing): a host gives at most one page per
# max(delay, latency)
limit=$(awk -v h="$HOSTS" -v d="$DELAY" -v l="$LAT" 'BEGIN { printf "%.1f", h / ((d > l ? d : l) / 1000) }')
echo "cluster crawl: $HOSTS hosts x $PAGES pages, ${DELAY} ms politeness delay, every answer ${LAT} ms late," \
     "crawled to the end; medians of $CROUNDS interleaved rounds; politeness limit $limit pages/s;" \
     "$(nproc) cores shared by every node, the site and Redis"
echo
echo "| crawl | pages/s | share of the limit | requests | CPU s (all nodes) | CPU ms/page | pages/s vs 1 node | CPU/page vs 1 node | XADD/s | XACK/s |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
awk -v limit="$limit" -v supported="$supported" -v nodes="$NODES" '
    function median(a, n,    i, j, t) {
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { k = $1; n[k]++; rate[k, n[k]] = $2; req[k, n[k]] = $3; cpu[k, n[k]] = $4
      per[k, n[k]] = $3 > 0 ? 1000 * $4 / $3 : 0; xa[k, n[k]] = $5; xk[k, n[k]] = $6
      if ($7 != "ok") bad[k] = bad[k] " " $7 }
    END {
        split("plain " (supported ? nodes : ""), names, " ")
        for (x = 1; x in names; x++) {
            k = names[x]; if (k != "plain") k = "nodes" k
            if (!(k in n)) continue
            for (i = 1; i <= n[k]; i++) { a1[i] = rate[k, i]; a2[i] = req[k, i]; a3[i] = cpu[k, i]; a4[i] = per[k, i]; a5[i] = xa[k, i]; a6[i] = xk[k, i] }
            R[k] = median(a1, n[k]); Q[k] = median(a2, n[k]); C[k] = median(a3, n[k]); P[k] = median(a4, n[k]); XA[k] = median(a5, n[k]); XK[k] = median(a6, n[k])
        }
        base = ("nodes1" in R) ? "nodes1" : "plain"
        for (x = 1; x in names; x++) {
            k = names[x]; label = k == "plain" ? "1 node, no Redis" : k " node" (k == 1 ? "" : "s")
            if (k != "plain") k = "nodes" k
            if (!(k in n)) continue
            printf "| %s%s | %.1f | %.0f%% | %d | %.2f | %.2f | %.2fx | %.2fx | %s | %s |\n", label,
                ((k in bad) ? " (" substr(bad[k], 2) ")" : ""), R[k], 100 * R[k] / limit, Q[k], C[k], P[k],
                (R[base] > 0 ? R[k] / R[base] : 0), (P[base] > 0 ? P[k] / P[base] : 0),
                (k == "plain" ? "-" : sprintf("%.1f", XA[k])), (k == "plain" ? "-" : sprintf("%.1f", XK[k]))
        }
        if (!supported)
            printf "| 1, 2, 3 cluster nodes | n/a | | | | | | | | |\n\nn/a: this crawld refuses cluster.redis (the partitioned crawl is not wired into crawld run)\n"
        printf "per run (pages/s):"
        for (x = 1; x in names; x++) { k = names[x]; if (k != "plain") k = "nodes" k; if (!(k in n)) continue; printf " %s", k; for (i = 1; i <= n[k]; i++) printf " %.1f", rate[k, i]; printf ";" }
        printf "\n"
    }' "$dir/results"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
