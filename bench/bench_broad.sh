#!/bin/sh
# Broad crawl: BROAD_HOSTS hosts of the test site (default 500), each
# answering every request BROAD_LATENCY_MS late (default 100, as a far server
# would), crawled politely with a BROAD_DELAY_MS delay per host (default
# 1000): crawld with its defaults (fetch.connections = "auto") against
# Scrapy (one request per host at a time, DOWNLOAD_DELAY 1 s,
# CONCURRENT_REQUESTS 1024). Each crawl runs BROAD_SECONDS (default 30) and
# is then stopped with SIGTERM; pages/s is counted from the site's request log
# over the steady part (from BROAD_WARM_S, default 5, after the crawler's
# first request until the signal). The politeness limit is
# hosts / (delay + latency): crawld waits the delay after each answer, so one
# host gives at most one page per delay + latency; crawld's goal is 90% of it.
# BROAD_RUNS rounds (default 3), crawld and Scrapy interleaved; medians and
# ratios; CPU and peak RSS from GNU time. Called by bench/run.sh (env BIN).
set -u
HOSTS=${BROAD_HOSTS:-500}
LAT=${BROAD_LATENCY_MS:-100}
DELAY=${BROAD_DELAY_MS:-1000}
SECS=${BROAD_SECONDS:-30}
WARM=${BROAD_WARM_S:-5}
RUNS=${BROAD_RUNS:-3}
PORT=${BROAD_PORT:-18191}
root=${CRAWLD_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BIN=${BIN:-bin}
case "$BIN" in /*) ;; *) BIN="$root/$BIN" ;; esac
CRAWLD="$BIN/crawld"
SITE="$BIN/testsite"
say() { echo "[bench-broad] $*" >&2; }

if [ ! -x /usr/bin/time ]; then say "needs GNU time (apt-get install time)"; exit 1; fi
if [ ! -x /usr/bin/scrapy ]; then
    if [ "$(id -u)" = 0 ]; then
        say "installing python3-scrapy (apt-get)"
        DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-scrapy >/dev/null ||
            say "apt-get failed; Scrapy will show as n/a"
    else
        say "Scrapy is missing (shown as n/a); as root: apt-get install -y --no-install-recommends python3-scrapy"
    fi
fi

tmp=$(mktemp -d /tmp/crawld-bench-broad-XXXXXX)
site=""
trap '[ -n "$site" ] && kill $site 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM

# HOSTS + 1 site hosts; d.test (the fourth) answers robots.txt with 500, which
# shuts a polite crawler out, so it is left out of the seeds.
awk -v n="$((HOSTS + 1))" 'BEGIN { for (i = 0; i < n; i++) {
    name = ""; k = i
    do { name = sprintf("%c", 97 + k % 26) name; k = int(k / 26) - 1 } while (k >= 0)
    if (i != 3) print name } }' > "$tmp/hosts"
if [ "$(wc -l < "$tmp/hosts")" -ne "$HOSTS" ] || [ "$HOSTS" -gt 701 ]; then
    say "BROAD_HOSTS must be 1..701"; exit 1
fi
sed "s|.*|http://&.test:$PORT/|" "$tmp/hosts" > "$tmp/seeds"
{
    echo "[crawl]"
    printf 'seeds = ['; sed 's|.*|"&"|' "$tmp/seeds" | paste -sd, -; echo ']'
    echo "[fetch]"
    printf 'resolve = ['; sed "s|.*|\"&.test:$PORT:127.0.0.1\"|" "$tmp/hosts" | paste -sd, -; echo ']'
    echo "[politeness]"
    echo "delay_ms = $DELAY"
    echo "[storage]"
    echo "state_dir = \"$tmp/state\""
} > "$tmp/crawld.toml"

start_site() {
    rm -f "$tmp/site.log"
    "$SITE" --port "$PORT" --hosts "$((HOSTS + 1))" --pages 5000 --no-specials --latency-ms "$LAT" \
        --log "$tmp/site.log" > "$tmp/site.out" 2>&1 &
    site=$!
    for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        grep -q listening "$tmp/site.out" 2>/dev/null && return 0
        sleep 0.2
    done
    say "the test site did not start: $(cat "$tmp/site.out")"; exit 1
}
stop_site() { kill "$site" 2>/dev/null; wait "$site" 2>/dev/null; site=""; }
now_ms() { date +%s%3N; }

# run NAME CMD...: one crawl of SECS seconds; appends a line to $tmp/results:
# name pages_per_s requests cpu_s rss_kib
run() {
    name=$1; shift
    start_site
    rm -rf "$tmp/state"
    /usr/bin/time -v -o "$tmp/time" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" &
    tpid=$!
    sleep 0.5
    cpid=$(pgrep -P $tpid | head -n 1)
    sleep "$SECS"
    end=$(now_ms)
    kill -TERM "${cpid:-$tpid}" 2>/dev/null
    # a graceful stop gets 20 s (Scrapy's may wait for its whole queue);
    # then a second signal (Scrapy: "force") and, 10 s later, SIGKILL
    for i in $(seq 1 40); do kill -0 $tpid 2>/dev/null || break; sleep 0.5; done
    kill -0 $tpid 2>/dev/null && { say "$name: still running 20 s after SIGTERM; a second SIGTERM"; kill -TERM "${cpid:-$tpid}" 2>/dev/null; }
    for i in $(seq 1 20); do kill -0 $tpid 2>/dev/null || break; sleep 0.5; done
    kill -0 $tpid 2>/dev/null && kill -KILL "${cpid:-$tpid}" 2>/dev/null
    wait $tpid
    stop_site
    awk -F'\t' -v end="$end" -v warm="$WARM" -v name="$name" '
        NR == 1 { t0 = $1 } { t[NR] = $1 }
        END {
            from = t0 + warm * 1000; n = 0
            for (i = 1; i <= NR; i++) if (t[i] >= from && t[i] < end) n++
            s = (end - from) / 1000
            printf "%s %.1f %d", name, (s > 0 ? n / s : 0), NR
        }' "$tmp/site.log" >> "$tmp/results"
    awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { m = $2 }
        END { printf " %.2f %d\n", u + s, m }' "$tmp/time" >> "$tmp/results"
}

: > "$tmp/results"
for r in $(seq 1 "$RUNS"); do
    say "round $r of $RUNS: crawld"
    run crawld "$CRAWLD" run -c "$tmp/crawld.toml"
    if [ -x /usr/bin/scrapy ]; then
        say "round $r of $RUNS: scrapy"
        run scrapy env PYTHONPATH="$root/bench/broad" /usr/bin/scrapy runspider \
            "$root/bench/broad/scrapy_broad.py" -s DNS_RESOLVER=scrapy_broad.PinResolver \
            -a seeds="$tmp/seeds" --nolog
    fi
done

limit=$(awk -v h="$HOSTS" -v d="$DELAY" -v l="$LAT" 'BEGIN { printf "%.1f", h / ((d + l) / 1000) }')
echo "broad crawl: $HOSTS hosts, ${DELAY} ms politeness delay, every answer ${LAT} ms late;" \
     "$SECS s per crawl, pages/s counted from ${WARM} s after the first request;" \
     "medians of $RUNS; politeness limit $HOSTS / $(awk -v d="$DELAY" -v l="$LAT" 'BEGIN { print (d + l) / 1000 }') s = $limit pages/s"
echo
echo "| crawler | pages/s | share of the limit | requests | CPU s | CPU ms/page | peak RSS MiB | pages/s vs Scrapy | CPU/page vs Scrapy |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
awk -v limit="$limit" '
    function median(a, n,    i, j, t) {
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { k = $1; n[k]++; rate[k, n[k]] = $2; req[k, n[k]] = $3; cpu[k, n[k]] = $4; rss[k, n[k]] = $5
      per[k, n[k]] = $3 > 0 ? 1000 * $4 / $3 : 0 }
    END {
        split("crawld scrapy", names, " ")
        for (x = 1; x <= 2; x++) {
            k = names[x]
            if (!(k in n)) { printf "| %s | n/a | | | | | | | |\n", k; continue }
            for (i = 1; i <= n[k]; i++) { a1[i] = rate[k, i]; a2[i] = req[k, i]; a3[i] = cpu[k, i]; a4[i] = rss[k, i]; a5[i] = per[k, i] }
            R[k] = median(a1, n[k]); Q[k] = median(a2, n[k]); C[k] = median(a3, n[k]); M[k] = median(a4, n[k]); P[k] = median(a5, n[k])
        }
        for (x = 1; x <= 2; x++) {
            k = names[x]
            if (!(k in n)) continue
            vs = ("scrapy" in n) && R["scrapy"] > 0 ? sprintf("%.2fx", R[k] / R["scrapy"]) : "n/a"
            cvs = ("scrapy" in n) && P["scrapy"] > 0 ? sprintf("%.2fx", P[k] / P["scrapy"]) : "n/a"
            printf "| %s | %.1f | %.0f%% | %d | %.2f | %.2f | %.1f | %s | %s |\n", k, R[k], 100 * R[k] / limit, Q[k], C[k], P[k], M[k] / 1024, vs, cvs
        }
        goal = 0.9 * limit
        printf "\ncrawld goal: at least 90%% of the limit, %.1f pages/s: %s (%.1f pages/s, %.0f%%)\n",
            goal, (R["crawld"] >= goal ? "met" : "MISSED"), R["crawld"], 100 * R["crawld"] / limit
        printf "per run (pages/s):"
        for (x = 1; x <= 2; x++) { k = names[x]; if (!(k in n)) continue; printf " %s", k; for (i = 1; i <= n[k]; i++) printf " %.1f", rate[k, i]; printf ";" }
        printf "\n"
    }' "$tmp/results"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -h "capped" "$tmp/crawld.err" 2>/dev/null || true
