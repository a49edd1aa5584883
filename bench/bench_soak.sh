#!/bin/sh
# Soak: crawld against the local test site, SOAK_PAGES pages per host
# (default 10000) over SOAK_HOSTS hosts (default 20: 200k pages), zero
# politeness delay. Reports pages/s, CPU per page and peak RSS, and samples
# RSS every 2 s against the pages fetched so far, so a frontier that grows
# while memory stays flat shows as flat. Called by bench/run.sh (env BIN).
set -u
PAGES=${SOAK_PAGES:-10000}
HOSTS=${SOAK_HOSTS:-20}
PORT=${SOAK_PORT:-18181}
CRAWLD="$BIN/crawld"
SITE="$BIN/testsite"
tmp=${SOAK_DIR:-$(mktemp -d)}
site=""
trap '[ -n "$site" ] && kill $site 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
"$SITE" --port "$PORT" --pages "$PAGES" --hosts "$HOSTS" --delay-ms 100 --crawl-delay 0 --big-bytes 200000 \
    --bomb-mib 4 --log "$tmp/site.log" > "$tmp/site.out" 2>&1 &
site=$!
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
    grep -q listening "$tmp/site.out" 2>/dev/null && break
    sleep 0.2
done
hosts=$(awk -v n="$HOSTS" 'BEGIN { for (i = 0; i < n; i++) {
    name = ""; k = i
    do { name = sprintf("%c", 97 + k % 26) name; k = int(k / 26) - 1 } while (k >= 0)
    printf "%s ", name } }')
seeds=""; pins=""
for h in $hosts; do
    seeds="$seeds\"http://$h.test:$PORT/\", "
    pins="$pins\"$h.test:$PORT:127.0.0.1\", "
done
cat > "$tmp/soak.toml" <<EOT
[crawl]
seeds = [${seeds%, }]
max_depth = 30
[fetch]
resolve = [${pins%, }]
connections = 64
timeout_ms = 10000
max_body_bytes = 1048576
[politeness]
delay_ms = 0
delay_factor = 0.0
backoff_ms = 100
max_retry_after_s = 2
[storage]
state_dir = "$tmp/state"
[control]
listen = ""
EOT
/usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$CRAWLD" run -c "$tmp/soak.toml" 2> "$tmp/crawl.err" &
crawl=$!
sleep 1
pid=$(pgrep -P $crawl crawld || echo $crawl)
: > "$tmp/samples"
t=0
while kill -0 $crawl 2>/dev/null; do
    rss=$(awk '/VmRSS/ { print $2 }' /proc/$pid/status 2>/dev/null)
    [ -n "$rss" ] && echo "$t $(wc -l < "$tmp/site.log") $rss" >> "$tmp/samples"
    sleep 2
    t=$((t + 2))
done
wait $crawl
rc=$?
read wall user sys maxrss < "$tmp/time"
pages=$(wc -l < "$tmp/site.log")
echo "soak: $HOSTS hosts x $PAGES pages, zero delay; crawld exit $rc"
grep -E "^crawl:|frontier:|duplicates skipped|false-positive" "$tmp/crawl.err"
echo
echo "| figure | value |"
echo "|---|---:|"
echo "| requests served | $pages |"
awk -v p="$pages" -v w="$wall" -v u="$user" -v s="$sys" -v m="$maxrss" 'BEGIN {
    printf "| wall s | %.1f |\n| pages/s | %.0f |\n| CPU ms per page | %.3f |\n| peak RSS MiB | %.1f |\n",
        w, p / w, 1000 * (u + s) / p, m / 1024 }'
echo
echo "RSS against progress (every 2 s; flat means the frontier's growth costs no memory):"
echo
echo "| elapsed s | requests | RSS MiB |"
echo "|---:|---:|---:|"
n=$(wc -l < "$tmp/samples")
awk -v n="$n" '{ if (NR == 1 || NR == n || NR % int(n / 8 + 1) == 0) printf "| %d | %d | %.1f |\n", $1, $2, $3 / 1024 }' "$tmp/samples"
awk '{ r[NR] = $3 } END { if (NR >= 4) { a = r[int(NR / 4)]; b = r[NR]; printf "\nRSS at 25%% of the run %.1f MiB, at the end %.1f MiB: growth %.0f%%\n", a / 1024, b / 1024, 100 * (b - a) / a } }' "$tmp/samples"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
