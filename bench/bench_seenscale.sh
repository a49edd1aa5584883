#!/bin/sh
# The exact seen-set as it grows: `crawld dedup --verify always --state DIR`
# fed SEENSCALE_URLS distinct canonical URLs (default 100,000,000) in
# SEENSCALE_CHUNKS chunks (default 10), one process per chunk on the same
# state folder, each chunk generated before it is timed. Per chunk: lines/s,
# CPU, peak RSS (/usr/bin/time), the database's bytes per URL held and the
# goal's bound (1.3x the URL text + 16 B per URL), and awk's RSS at the
# same count: awk '!seen[$0]++' is run on the first chunk and on the first
# SEENSCALE_AWK_CHUNKS chunks (default 2), and extrapolated linearly through
# those two points beyond (the table says which). The crawld runs use the
# shipped defaults (cache sizes bound their memory).
# Goals: the last chunk's rate >= 50% of the first's; RSS flat; DB within
# the bound. SEENSCALE_CONFIG: TOML lines for the crawld runs' config (printf
# %b: \n separates lines), e.g. '[dedup]\nbloom_max_mib = 64' to hold the
# Bloom chain at a cap (default: empty, the shipped defaults).
# Called by bench/run.sh (env BIN = folder of bin/crawld).
set -e
N=${SEENSCALE_URLS:-100000000}
K=${SEENSCALE_CHUNKS:-10}
AK=${SEENSCALE_AWK_CHUNKS:-2}
CRAWLD="$BIN/crawld"
[ -x /usr/bin/time ] || { echo "bench_seenscale: /usr/bin/time is missing: apt-get install time" >&2; exit 1; }
[ "$AK" -ge 1 ] || AK=1
[ "$AK" -le "$K" ] || AK=$K
M=$((N / K))
tmp=$(mktemp -d "${TMPDIR:-/tmp}/crawld-seenscale.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
printf '%b\n' "${SEENSCALE_CONFIG:-}" > "$tmp/config.toml"
gen() { # chunk index -> its file
    awk -v c="$1" -v m="$M" 'BEGIN { for (k = c * m; k < (c + 1) * m; k++)
        printf "http://host%d.example/section/%d/page-%d.html?a=%d&b=x\n", k % 9973, k % 13, k, k % 7 }' \
        > "$tmp/chunk.$1"
}
echo "input: $N distinct URLs in $K chunks of $M, through one --state folder"
[ -z "${SEENSCALE_CONFIG:-}" ] || echo "config: $(tr '\n' ' ' < "$tmp/config.toml")"
echo
printf "| chunk | URLs held | lines/s | rate vs chunk 1 | CPU s | CPU us/URL | peak RSS MiB | Bloom MiB | DB B/URL | bound B/URL | DB vs bound | awk RSS MiB (same count) |\n"
printf "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
held=0 text=0 first=""
c=0
while [ $c -lt "$K" ]; do
    gen $c
    bytes=$(wc -c < "$tmp/chunk.$c")
    text=$((text + bytes - M))   # without the newlines
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "$CRAWLD" dedup -c "$tmp/config.toml" --verify always \
        --state "$tmp/state" < "$tmp/chunk.$c" > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    out=$(wc -l < "$tmp/out")
    [ "$out" -eq "$M" ] || { echo "bench_seenscale: chunk $c: $out new URLs, expected $M" >&2; exit 1; }
    held=$((held + M))
    db=0
    for f in "$tmp/state"/crawld.db "$tmp/state"/crawld.db-wal; do
        [ -f "$f" ] && db=$((db + $(wc -c < "$f")))
    done
    if [ $c -eq 0 ] || [ $((c + 1)) -eq "$AK" ]; then
        i=0; files=""
        while [ $i -le $c ]; do files="$files $tmp/chunk.$i"; i=$((i + 1)); done
        # shellcheck disable=SC2086
        cat $files | /usr/bin/time -f "%M" -o "$tmp/ta" awk '!seen[$0]++' > /dev/null
        echo "$held $(cat "$tmp/ta")" >> "$tmp/awk"
    fi
    [ $((c + 1)) -ge "$AK" ] && rm -f "$tmp"/chunk.*
    read -r wall u s rss < "$tmp/t"
    # the summary's Bloom line ends in its MiB; a held chain says so on the next
    bmib=$(sed -n 's/^  Bloom filter: .*, \([0-9.]*\) MiB$/\1/p' "$tmp/err")
    grep -q "Bloom filter at its cap" "$tmp/err" && bmib="${bmib} (capped)"
    awk -v c=$((c + 1)) -v m="$M" -v held="$held" -v text="$text" -v db="$db" -v wall="$wall" \
        -v u="$u" -v s="$s" -v rss="$rss" -v bmib="$bmib" -v first="$first" -v awkf="$tmp/awk" 'BEGIN {
        rate = m / (wall > 0 ? wall : 0.01); cpu = u + s
        bound = 1.3 * text / held + 16
        n = 0; while ((getline line < awkf) > 0) { split(line, f, " "); n++; X[n] = f[1]; Y[n] = f[2] }
        tag = ""
        for (i = 1; i <= n; i++) if (X[i] == held) { a = Y[i]; tag = " (measured)" }
        if (tag == "") {
            if (n >= 2 && X[n] > X[1]) a = Y[1] + (Y[n] - Y[1]) * (held - X[1]) / (X[n] - X[1])
            else a = Y[1] * held / X[1]
            tag = " (extrapolated)"
        }
        printf "| %d | %d | %.0f | %s | %.1f | %.2f | %.1f | %s | %.1f | %.1f | %.2f | %.0f%s |\n", c, held, rate,
            first == "" ? "1.00x" : sprintf("%.2fx", rate / first), cpu, cpu * 1e6 / m, rss / 1024, bmib,
            db / held, bound, db / held / bound, a / 1024, tag
        print rate > "/dev/stderr" }' 2> "$tmp/rate"
    [ -n "$first" ] || first=$(cat "$tmp/rate")
    c=$((c + 1))
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "goals: last chunk's rate >= 0.50x chunk 1; peak RSS flat (bounded by the configured caches);"
echo "       DB bytes per URL <= 1.3x the URL text + 16 (DB vs bound <= 1.00)"
