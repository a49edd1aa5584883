#!/bin/sh
# Forget: a perpetual crawl with and without dedup.retention_s.
#
# The test site's epoch mode (tests/site/epoch.h) serves, per host, a fixed
# set of pages plus FORGET_ADD new pages per epoch (/new/K-J.html); with
# --keep-epochs the home page links only the last FORGET_KEEP epochs' new
# pages, so older URLs stop being linked (about 10% of the linked URLs are
# replaced per epoch). crawld runs as a daemon that re-crawls every page
# twice per epoch (recrawl.after_s), so it sees each epoch's links: a URL
# is "linked" when a page fetched links to it. Every FORGET_EPOCH_S seconds the site moves to the
# next epoch (restarted on the same port; the fetches that hit the gap are
# retried, max_attempts = 100). Two runs, interleaved in time
# only by order (one machine): retention off, then on (retention_s = 2
# epochs in 2 generations). Printed per epoch: Bloom memory (with
# retention: the live generations and the dropped ones kept to count
# "found again"), database size (live pages: page_count - freelist_count;
# SQLite reuses freed pages, and the WAL is the same in both runs), rows,
# RSS; and CPU per page of both runs.
# The measure: each figure is sampled every FORGET_SAMPLE_MS (500) during
# an epoch and the epoch's row is the largest sample. With retention, rows
# and DB pages are a sawtooth: they climb through a window as new URLs
# come and fall when the expired window's rows are deleted. One sample
# per epoch lands at whatever phase of the window the loop has drifted
# to, so a ratio of two samples measures the phase as much as the growth
# (the last report's 1.34x had epoch 5 near a low). An epoch is one
# window (retention_s = 2 epochs in 2 generations), so every epoch holds
# a whole tooth and its maximum is the same phase every time: the peak,
# which is what a user provisions disk and memory for, and the measure by
# which "stays flat" means "does not grow". (The mean would flatter the
# sawtooth by half its height; the minimum would hide the growth.)
# Goals: with retention the last epoch within 1.2x of epoch 5 (each
# figure); without it, growing; retention's CPU per page <= 1.10x.
# Called by bench/run.sh (env BIN); FORGET_EPOCHS (default 20),
# FORGET_EPOCH_S (default 4), FORGET_PORT (default 18282), FORGET_SAMPLE_MS
# (default 500), FORGET_ROUNDS (default 3: the unchanging site's rounds).
set -u
EPOCHS=${FORGET_EPOCHS:-20}
ESEC=${FORGET_EPOCH_S:-4}
PORT=${FORGET_PORT:-18282}
HOSTS=2
PAGES=${FORGET_PAGES:-150}
ADD=${FORGET_ADD:-30}
KEEP=${FORGET_KEEP:-3}
SAMPLE_MS=${FORGET_SAMPLE_MS:-500}
ROUNDS=${FORGET_ROUNDS:-3}
CRAWLD="$BIN/crawld"
SITE="$BIN/testsite"
# the figures are read with jq (status JSON) and sqlite3 (database size)
missing=""
for t in jq sqlite3 curl; do command -v "$t" >/dev/null 2>&1 || missing="$missing $t"; done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
    fi
    for t in $missing; do
        command -v "$t" >/dev/null 2>&1 || { echo "bench_forget: needs $t (apt-get install $t); cannot run"; exit 1; }
    done
fi
tmp=$(mktemp -d)
site=""
crawl=""
cleanup() {
    [ -n "$site" ] && kill "$site" 2>/dev/null
    [ -n "$crawl" ] && kill "$crawl" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

start_site() { # epoch
    "$SITE" --port "$PORT" --hosts "$HOSTS" --pages "$PAGES" --no-specials --crawl-delay 0 \
        --epoch "$1" --change-pct 0 --remove-pct 0 --add-pages "$ADD" --keep-epochs "$KEEP" \
        --log "$tmp/site.log" > "$tmp/site.out" 2>&1 &
    site=$!
    for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        grep -q listening "$tmp/site.out" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "bench_forget: the test site did not start" >&2
    return 1
}

stop_site() {
    kill "$site" 2>/dev/null
    wait "$site" 2>/dev/null
    site=""
}

# sample STATE PID: one line "bloom_bytes db_bytes rows rss_kib" (0 for a
# figure that cannot be read just now)
sample() {
    st=$(curl -s --unix-socket "$1/control.sock" http://crawld/v1/status)
    bloom=$(printf '%s' "$st" | jq '(.retention.memory_bytes // .dedup.bloom.memory_bytes)' 2>/dev/null)
    dbb=$(sqlite3 -readonly "file:$1/crawld.db?mode=ro" \
        "SELECT (p.page_count - f.freelist_count) * s.page_size FROM pragma_page_count p,"\
" pragma_freelist_count f, pragma_page_size s" 2>/dev/null)
    rows=$(sqlite3 -readonly "file:$1/crawld.db?mode=ro" "SELECT count(*) FROM urls" 2>/dev/null)
    rss=$(awk '/VmRSS/ { print $2 }' /proc/$2/status)
    echo "${bloom:-0} ${dbb:-0} ${rows:-0} ${rss:-0}"
}

# run NAME RETENTION_LINES: one perpetual crawl; writes $tmp/NAME.epochs
# (epoch bloom_bytes db_bytes rows rss_kib, each the epoch's largest
# sample) and $tmp/NAME.cpu (cpu_s pages)
run() {
    name=$1
    state="$tmp/$name"
    cat > "$tmp/$name.toml" <<EOT
[crawl]
seeds = ["http://a.test:$PORT/", "http://b.test:$PORT/"]
daemon = true
max_depth = 3
[fetch]
resolve = ["a.test:$PORT:127.0.0.1", "b.test:$PORT:127.0.0.1"]
[politeness]
delay_ms = 0
delay_factor = 0.0
backoff_ms = 200
max_attempts = 100
host_max_failures = 0
[dedup]
expected_urls = 1000
$2
[recrawl]
after_s = $(( (ESEC + 1) / 2 ))
[storage]
state_dir = "$state"
EOT
    : > "$tmp/$name.epochs"
    start_site 0 || return 1
    "$CRAWLD" run -c "$tmp/$name.toml" 2> "$tmp/$name.err" &
    crawl=$!
    e=0
    pause=$(awk -v m="$SAMPLE_MS" 'BEGIN { printf "%.3f", m / 1000 }')
    while [ "$e" -le "$EPOCHS" ]; do
        end=$(( $(date +%s%3N) + ESEC * 1000 ))
        : > "$tmp/$name.samples"
        while [ "$(date +%s%3N)" -lt "$end" ]; do
            sleep "$pause"
            sample "$state" "$crawl" >> "$tmp/$name.samples"
        done
        awk -v e="$e" '{ for (i = 1; i <= 4; i++) if ($i > m[i]) m[i] = $i }
            END { print e, m[1] + 0, m[2] + 0, m[3] + 0, m[4] + 0 }' "$tmp/$name.samples" \
            >> "$tmp/$name.epochs"
        e=$((e + 1))
        stop_site
        start_site "$e" || return 1
    done
    st=$(curl -s --unix-socket "$state/control.sock" http://crawld/v1/status)
    pages=$(printf '%s' "$st" | jq '.responses')
    printf '%s' "$st" | jq -c '.retention | if . then {refreshed, forgotten, found_again, live, rotations} else empty end' \
        > "$tmp/$name.ret"
    cpu=$(awk '{ printf "%.3f", ($14 + $15) / 100 }' /proc/$crawl/stat)
    curl -s --unix-socket "$state/control.sock" -X POST http://crawld/v1/shutdown > /dev/null
    wait "$crawl"
    crawl=""
    stop_site
    echo "$cpu $pages" > "$tmp/$name.cpu"
}

# cpu NAME RETENTION_LINES: the refresh's own cost, on a site that does not
# change (epoch 0 throughout): both runs fetch the same pages at the same
# re-crawl rate for the same time, so the difference in CPU per page is
# what retention adds (queries of every generation, refresh writes,
# rotations). Writes $tmp/NAME.cpu.
cpu_run() {
    name=$1
    state="$tmp/$name"
    sed -e "s|^state_dir = .*|state_dir = \"$state\"|" "$tmp/keep.toml" | grep -v '^retention_s\|^generations' \
        > "$tmp/$name.toml"
    [ -n "$2" ] && sed -i "s|^\[dedup\]|[dedup]\n$2|" "$tmp/$name.toml"
    start_site 0 || return 1
    "$CRAWLD" run -c "$tmp/$name.toml" 2> "$tmp/$name.err" &
    crawl=$!
    sleep $((EPOCHS * ESEC / 2))
    pages=$(curl -s --unix-socket "$state/control.sock" http://crawld/v1/status | jq '.responses')
    cpu=$(awk '{ printf "%.3f", ($14 + $15) / 100 }' /proc/$crawl/stat)
    curl -s --unix-socket "$state/control.sock" -X POST http://crawld/v1/shutdown > /dev/null
    wait "$crawl"
    crawl=""
    stop_site
    echo "$cpu $pages" > "$tmp/$name.cpu"
}

run keep "" || exit 1
run forget "retention_s = $((2 * ESEC))
generations = 2" || exit 1
r=1
while [ "$r" -le "$ROUNDS" ]; do
    cpu_run "static_keep_$r" "" || exit 1
    cpu_run "static_forget_$r" "retention_s = $((2 * ESEC))\ngenerations = 2" || exit 1
    r=$((r + 1))
done

echo "forget: $EPOCHS epochs of ${ESEC} s; $HOSTS hosts x $PAGES pages + $ADD new per host per"
echo "epoch, the last $KEEP epochs' linked; retention_s = $((2 * ESEC)) in 2 generations"
echo
echo "| epoch | Bloom KiB (keep) | Bloom KiB (forget) | DB KiB (keep) | DB KiB (forget) | rows (keep) | rows (forget) | RSS MiB (keep) | RSS MiB (forget) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
paste -d' ' "$tmp/keep.epochs" "$tmp/forget.epochs" | awk '{
    printf "| %d | %.0f | %.0f | %.0f | %.0f | %d | %d | %.1f | %.1f |\n",
        $1, $2 / 1024, $7 / 1024, $3 / 1024, $8 / 1024, $4, $9, $5 / 1024, $10 / 1024 }'
echo
echo "(each figure: the epoch's largest of samples every $SAMPLE_MS ms)"
echo
echo "last epoch / epoch 5, per-epoch peaks (goal with retention: <= 1.2; without it: growing):"
echo
echo "| figure | keep | forget |"
echo "|---|---:|---:|"
for col in 2:Bloom 3:DB 4:rows 5:RSS; do
    c=${col%%:*}
    label=${col#*:}
    k=$(awk -v c="$c" 'NR == 6 { a = $c } END { printf "%.2f", $c / a }' "$tmp/keep.epochs")
    f=$(awk -v c="$c" 'NR == 6 { a = $c } END { printf "%.2f", $c / a }' "$tmp/forget.epochs")
    echo "| $label | $k | $f |"
done
read kcpu kpages < "$tmp/keep.cpu"
read fcpu fpages < "$tmp/forget.cpu"
echo
echo "| run | pages | CPU s | CPU ms per page |"
echo "|---|---:|---:|---:|"
awk -v c="$kcpu" -v p="$kpages" 'BEGIN { printf "| keep | %d | %.2f | %.3f |\n", p, c, 1000 * c / p }'
awk -v c="$fcpu" -v p="$fpages" 'BEGIN { printf "| forget | %d | %.2f | %.3f |\n", p, c, 1000 * c / p }'
awk -v a="$kcpu" -v b="$kpages" -v c="$fcpu" -v d="$fpages" \
    'BEGIN { printf "\nCPU per page, forget / keep: %.2fx (goal <= 1.10)\n", (c / d) / (a / b) }'
echo "(the forget run re-crawls fewer rows, so the daemon's fixed cost per second is shared"
echo "by fewer pages; the unchanging site below isolates what retention itself costs)"
echo "retention figures at the end: $(cat "$tmp/forget.ret")"
echo
echo "The same unchanging site for $((EPOCHS * ESEC / 2)) s, re-crawled every $(( (ESEC + 1) / 2 )) s,"
echo "$ROUNDS interleaved rounds (keep, retention, keep, ...):"
echo
echo "| round | run | pages | CPU s | CPU ms per page |"
echo "|---:|---|---:|---:|---:|"
r=1
: > "$tmp/static.k"
: > "$tmp/static.f"
while [ "$r" -le "$ROUNDS" ]; do
    read skcpu skpages < "$tmp/static_keep_$r.cpu"
    read sfcpu sfpages < "$tmp/static_forget_$r.cpu"
    awk -v r="$r" -v c="$skcpu" -v p="$skpages" 'BEGIN { printf "| %d | keep | %d | %.2f | %.3f |\n", r, p, c, 1000 * c / p }'
    awk -v r="$r" -v c="$sfcpu" -v p="$sfpages" 'BEGIN { printf "| %d | retention | %d | %.2f | %.3f |\n", r, p, c, 1000 * c / p }'
    awk -v c="$skcpu" -v p="$skpages" 'BEGIN { print 1000 * c / p }' >> "$tmp/static.k"
    awk -v c="$sfcpu" -v p="$sfpages" 'BEGIN { print 1000 * c / p }' >> "$tmp/static.f"
    r=$((r + 1))
done
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mk=$(median "$tmp/static.k")
mf=$(median "$tmp/static.f")
awk -v a="$mk" -v b="$mf" 'BEGIN { printf "\nmedian CPU ms per page: keep %.3f, retention %.3f; retention / keep on an unchanging site: %.2fx (goal <= 1.10)\n", a, b, b / a }'
