#!/bin/sh
# `crawld dedup` against awk '!seen[$0]++' and sort -u, in one run.
#
# N URL lines (default 10,000,000; DEDUP_LINES overrides), 60% of them
# repeats of an earlier line, generated before any timing. Each tool runs
# RUNS times (default 3), interleaved; the table shows medians of wall time,
# lines/s, CPU time and peak RSS (/usr/bin/time), with ratios against awk,
# and whether every run's output was byte-equal to awk's (= awk).
# crawld runs with its shipped defaults plus a temporary database.
# Called by bench/run.sh (env BIN = folder of bin/crawld).
set -e
N=${DEDUP_LINES:-10000000}
RUNS=${RUNS:-3}
CRAWLD="$BIN/crawld"
if [ ! -x /usr/bin/time ]; then
    if [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >/dev/null
    else
        echo "bench_dedup: /usr/bin/time is missing: apt-get install time" >&2
        exit 1
    fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/empty.toml"   # crawld with its built-in defaults
awk -v n="$N" 'BEGIN { srand(7); d = 0
    for (i = 0; i < n; i++) {
        if (d > 0 && rand() < 0.6) k = int(rand() * d); else k = d++
        printf "http://host%d.example/section/%d/page-%d.html?a=%d&b=x\n", k % 97, k % 13, k, k % 7
    } }' > "$tmp/urls.txt"
distinct=$(awk '!seen[$0]++' "$tmp/urls.txt" | wc -l)
echo "input: $N lines, $distinct distinct (generated before timing)"
echo

run() { # name command...
    name=$1; shift
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "$@" < "$tmp/urls.txt" > "$tmp/out.$name" 2>"$tmp/err.$name"
    out=$(wc -l < "$tmp/out.$name")
    same=no   # byte-equal to awk's output (awk runs first in each round)
    cmp -s "$tmp/out.awk" "$tmp/out.$name" && same=yes
    echo "$name $(cat "$tmp/t") $out $same" >> "$tmp/results"
}

i=0
while [ $i -lt "$RUNS" ]; do
    run awk awk '!seen[$0]++'
    run sort_u sort -u
    run never "$CRAWLD" dedup -c "$tmp/empty.toml" --verify never
    run always "$CRAWLD" dedup -c "$tmp/empty.toml" --verify always
    i=$((i + 1))
done

awk -v n="$N" '
function median(a, k,   i, j, t) {   # sort k values, return the middle one
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((k + 1) / 2)]
}
{ c = ++cnt[$1]; W[$1, c] = $2; C[$1, c] = $3 + $4; R[$1, c] = $5; O[$1] = $6
  if ($7 != "yes") S[$1] = "no"; else if (S[$1] == "") S[$1] = "yes" }
END {
    split("awk sort_u never always", order, " ")
    for (t = 1; t <= 4; t++) {
        name = order[t]; k = cnt[name]
        for (i = 1; i <= k; i++) { a[i] = W[name, i] } ; w[name] = median(a, k)
        for (i = 1; i <= k; i++) { a[i] = C[name, i] } ; cpu[name] = median(a, k)
        for (i = 1; i <= k; i++) { a[i] = R[name, i] } ; rss[name] = median(a, k)
    }
    label["awk"] = "awk !seen[$0]++"; label["sort_u"] = "sort -u (sorted output)"
    label["never"] = "crawld dedup --verify never"; label["always"] = "crawld dedup --verify always"
    printf "| tool | lines out | = awk | wall s | lines/s | speed vs awk | CPU s | peak RSS MiB | RSS vs awk |\n"
    printf "|---|---:|:---:|---:|---:|---:|---:|---:|---:|\n"
    for (t = 1; t <= 4; t++) {
        name = order[t]
        printf "| %s | %d | %s | %.2f | %.0f | %.2fx | %.2f | %.1f | %.3f |\n", label[name], O[name], S[name], w[name], n / w[name], w["awk"] / w[name], cpu[name], rss[name] / 1024, rss[name] / rss["awk"]
    }
}' "$tmp/results"
echo
echo "medians of $RUNS runs each; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "goals: never >= 2x awk's speed at < 0.1x its RSS; always >= 1x awk's speed, RSS bounded by the SQLite cache"
