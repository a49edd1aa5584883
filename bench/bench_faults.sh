#!/bin/sh
# Fault soak: crawld against the local test site (FAULT_HOSTS hosts x
# FAULT_PAGES pages, default 20 x 10000 = 200k pages, zero delay) with its
# state folder on a small tmpfs that is filled (fallocate of all the free
# space) and freed FAULT_FILLS times (default 10) during the crawl, at even
# steps of progress. Each fill is held until crawld says the store stalls
# (or FAULT_HOLD_MAX_S passes), then FAULT_HOLD_S more seconds.
#
# Prints pages lost (the site's exact set, `testsite --print-expected`,
# minus what its request log shows fetched; goal 0), pages fetched twice
# against what crawld reported ("the last run ..." lines), requests served
# while the disk was full (and after crawld said it paused: in-flight
# only), and the time from freeing space to the next
# request (site log timestamps against the times space was freed). A run
# that ends in "storage failed" is resumed on the same state, as a user
# would. Needs root (mount); otherwise says why and exits 0. Uses bin/crawld
# (no fault hook: the disk really fills). Called by bench/run.sh (env BIN).
set -u
PAGES=${FAULT_PAGES:-10000}
HOSTS=${FAULT_HOSTS:-20}
FILLS=${FAULT_FILLS:-10}
PORT=${FAULT_PORT:-0} # 0: a free one
SIZE_MB=${FAULT_TMPFS_MB:-512}
HOLD_S=${FAULT_HOLD_S:-1}
HOLD_MAX_S=${FAULT_HOLD_MAX_S:-20}
DEPTH=${FAULT_DEPTH:-30}
CRAWLD="$BIN/crawld"
SITE="$BIN/testsite"

if [ "$(id -u)" != 0 ]; then
    echo "faults: skipped: mounting the small tmpfs the disk fills on needs root"
    exit 0
fi
for tool in fallocate df mount umount; do
    if ! command -v $tool > /dev/null 2>&1; then
        echo "faults: skipped: $tool is not installed"
        exit 0
    fi
done
tmp=$(mktemp -d)
mnt="$tmp/mnt"
mkdir "$mnt"
if ! mount -t tmpfs -o size="${SIZE_MB}m" none "$mnt" 2> "$tmp/mount.err"; then
    echo "faults: skipped: cannot mount a tmpfs: $(cat "$tmp/mount.err")"
    rm -rf "$tmp"
    exit 0
fi
site=""
crawl=""
cleanup() {
    [ -n "$crawl" ] && kill "$crawl" 2> /dev/null
    [ -n "$site" ] && kill "$site" 2> /dev/null
    wait 2> /dev/null
    umount "$mnt" 2> /dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

now_ms() { date +%s%3N; }

"$SITE" --port "$PORT" --pages "$PAGES" --hosts "$HOSTS" --delay-ms 100 --crawl-delay 0 \
    --big-bytes 200000 --bomb-mib 4 --log "$tmp/site.log" > "$tmp/site.out" 2>&1 &
site=$!
for i in $(seq 50); do
    grep -q listening "$tmp/site.out" 2> /dev/null && break
    sleep 0.1
done
if ! grep -q listening "$tmp/site.out"; then
    echo "faults: the test site did not start: $(cat "$tmp/site.out")"
    exit 1
fi
PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/site.out" | head -n 1)
hosts=$(awk -v n="$HOSTS" 'BEGIN { for (i = 0; i < n; i++) {
    name = ""; k = i
    do { name = sprintf("%c", 97 + k % 26) name; k = int(k / 26) - 1 } while (k >= 0)
    printf "%s ", name } }')
seeds=""; pins=""; froms=""
for h in $hosts; do
    seeds="$seeds\"http://$h.test:$PORT/\", "
    pins="$pins\"$h.test:$PORT:127.0.0.1\", "
    froms="$froms --from http://$h.test:$PORT/"
done
# shellcheck disable=SC2086
"$SITE" --pages "$PAGES" --hosts "$HOSTS" --port "$PORT" $froms --print-expected host \
    --max-depth "$DEPTH" --with-robots --fetch-requisites --max-path-depth 32 \
    --max-repeat-segment 3 --max-query-params 32 --max-url-length 2048 | sort -u > "$tmp/expected"
want=$(wc -l < "$tmp/expected")
cat > "$tmp/faults.toml" <<EOT
[crawl]
seeds = [${seeds%, }]
max_depth = $DEPTH
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
state_dir = "$mnt/state"
[dedup]
snapshot_interval_s = 15
[control]
listen = ""
EOT

# Fills the tmpfs; holds it until crawld reports a stall (or HOLD_MAX_S),
# then HOLD_S more; frees it, and waits until crawld says its writes
# succeed again. One line per fill into $tmp/fills:
# fill_ms stall_seen_ms(0: none) free_ms
fill_once() {
    before=$(grep -c "storage: .*fetching paused" "$tmp/crawl.err" 2> /dev/null)
    avail=$(df -B1 --output=avail "$mnt" | tail -n 1 | tr -d ' ')
    fill_ms=$(now_ms)
    fallocate -l "$avail" "$mnt/filler" 2> /dev/null || dd if=/dev/zero of="$mnt/filler" bs=1M 2> /dev/null
    stall_ms=0
    t=0
    while [ $t -lt $((HOLD_MAX_S * 10)) ] && kill -0 "$crawl" 2> /dev/null; do
        n=$(grep -c "storage: .*fetching paused" "$tmp/crawl.err" 2> /dev/null)
        if [ "$n" -gt "$before" ]; then
            stall_ms=$(now_ms)
            break
        fi
        sleep 0.1
        t=$((t + 1))
    done
    [ "$stall_ms" != 0 ] && sleep "$HOLD_S"
    resumed_before=$(grep -c "writes succeed again" "$tmp/crawl.err" 2> /dev/null)
    rm -f "$mnt/filler"
    echo "$fill_ms $stall_ms $(now_ms)" >> "$tmp/fills"
    # the next fill waits until crawld says it writes again (a bound: 120 s)
    t=0
    while [ "$stall_ms" != 0 ] && [ $t -lt 1200 ] && kill -0 "$crawl" 2> /dev/null; do
        [ "$(grep -c "writes succeed again" "$tmp/crawl.err")" -gt "$resumed_before" ] && break
        sleep 0.1
        t=$((t + 1))
    done
}

: > "$tmp/fills"
: > "$tmp/crawl.err"
runs=0
start_ms=$(now_ms)
while :; do
    runs=$((runs + 1))
    "$CRAWLD" run -c "$tmp/faults.toml" >> "$tmp/crawl.out" 2>> "$tmp/crawl.err" &
    crawl=$!
    done_fills=$(wc -l < "$tmp/fills")
    while [ "$done_fills" -lt "$FILLS" ] && kill -0 "$crawl" 2> /dev/null; do
        served=$(wc -l < "$tmp/site.log")
        if [ "$served" -ge $((want * (done_fills + 1) / (FILLS + 1))) ]; then
            fill_once
            done_fills=$((done_fills + 1))
        else
            sleep 0.2
        fi
    done
    wait "$crawl"
    rc=$?
    crawl=""
    echo "run $runs: crawld exit $rc: $(grep -E "frontier drained|stopped|storage failed" "$tmp/crawl.err" | tail -n 1)"
    if [ $rc -eq 0 ] || [ $runs -ge 5 ]; then
        break
    fi
done
wall_ms=$(($(now_ms) - start_ms))

awk -F '\t' -v p="$PORT" '{ print "http://" $2 ":" p $4 }' "$tmp/site.log" | sort -u > "$tmp/fetched"
lost=$(comm -23 "$tmp/expected" "$tmp/fetched" | wc -l)
extra=$(comm -13 "$tmp/expected" "$tmp/fetched" | wc -l)
# fetched twice with a final answer (5xx and 429 are retried by design;
# robots.txt is fetched once per run)
refetched=$(awk -F '\t' '$5 < 500 && $5 != 429 && $4 !~ /robots\.txt$/ { n[$2 $4]++ }
    END { s = 0; for (k in n) s += n[k] - 1; print s }' "$tmp/site.log")
reported=$(sed -n 's/.*crawld: the last run [^:]*: \([0-9]*\) URLs.*/\1/p' "$tmp/crawl.err" |
    awk '{ s += $1 } END { print s + 0 }')
stalls=$(grep -c "storage: .*fetching paused" "$tmp/crawl.err")
resumed=$(grep -c "writes succeed again" "$tmp/crawl.err")

echo "faults: $HOSTS hosts x $PAGES pages (expected set $want URLs), tmpfs ${SIZE_MB} MiB, $FILLS fills; $runs run(s), $((wall_ms / 1000)) s"
grep -E "^crawl:|frontier:|duplicates skipped|false-positive|the last run" "$tmp/crawl.err" | tail -n 6
echo
echo "| figure | value | goal |"
echo "|---|---:|---:|"
echo "| pages lost (expected, never fetched) | $lost | 0 |"
echo "| fetched but not expected | $extra | 0 |"
echo "| pages fetched twice | $refetched | $reported (reported) |"
echo "| stalls crawld reported / resumed | $stalls / $resumed | $FILLS / $FILLS |"
echo
echo "Per fill: requests served while the disk was full, and from freeing space to the next request:"
echo
echo "| fill | at request | stall seen after ms | requests while full | after the stall was seen | free -> next request ms |"
echo "|---:|---:|---:|---:|---:|---:|"
i=0
while read -r fill stall free; do
    i=$((i + 1))
    awk -F '\t' -v f="$fill" -v s="$stall" -v r="$free" -v i="$i" '
        $1 < f { before++ }
        $1 >= f && $1 < r { during++ }
        s > 0 && $1 >= s && $1 < r { paused++ }
        $1 >= r && next_ms == "" { next_ms = $1 }
        END { printf "| %d | %d | %s | %d | %s | %s |\n", i, before, s == 0 ? "none" : s - f,
                  during, s == 0 ? "-" : paused + 0, next_ms == "" ? "-" : next_ms - r }' "$tmp/site.log"
done < "$tmp/fills"
echo
gaps=$(while read -r fill stall free; do
    awk -F '\t' -v r="$free" '$1 >= r { print $1 - r; exit }' "$tmp/site.log"
done < "$tmp/fills" | sort -n)
if [ -n "$gaps" ]; then
    echo "$gaps" | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
        printf "free -> next request: median %d ms, max %d ms over %d fills\n", m, v[NR], NR }'
fi
if [ "${FAULT_KEEP:-}" != "" ]; then
    mkdir -p "$FAULT_KEEP" && cp "$tmp/crawl.err" "$tmp/site.log" "$tmp/fills" "$tmp/expected" "$FAULT_KEEP/"
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$lost" -eq 0 ]
