#!/bin/sh
# `make run`: the half-minute demo, on a machine with no network beyond
# loopback. Starts the local test web on 127.0.0.1:18080 (hosts a.test ..
# d.test), crawls it with the shipped crawl.toml (whose seeds and [fetch]
# resolve point there), prints the summary of the crawl and of every dedup
# layer, shows from the site's own request log that robots.txt and b.test's
# Crawl-delay were obeyed, writes the HTML report and stops the site.
#
# Everything goes to run/ in the project (git-ignored): run/state is the
# crawl's state folder (so `crawld stats` and `crawld report` work on it
# afterwards), run/report.html the report, run/site.log the site's request
# log. Each `make run` starts afresh (run/state is emptied first).
#
# The site is sized for the demo, not for the tests: 20 regular pages per
# host besides the special pages (redirects, errors, traps, huge and
# compressed bodies), a Crawl-delay of 0.1 s on b.test (twice the shipped
# politeness.delay_ms, so it sets b.test's pace: about 150 URLs, some 16 s),
# slow pages of 0.3 s, and 503/429 answers whose Retry-After is 0 (a pause of
# a second per answer would add ten seconds to every host). Retries of 5xx
# answers back off from 0.5 s instead of the shipped 5 s.
# CRAWLD_SITE_PORT overrides the port (crawl.toml's seeds and pins follow).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
PORT=${CRAWLD_SITE_PORT:-18080}
CRAWL_DELAY=0.1
run=run
state=$run/state
mkdir -p "$run" || exit 1
rm -rf "$state" "$run/site.log" "$run/site.out" "$run/report.html"

bin/testsite --port "$PORT" --pages 20 --hosts 4 --crawl-delay "$CRAWL_DELAY" --delay-ms 300 \
    --retry-after 0 --big-bytes 2000000 --bomb-mib 64 --log "$run/site.log" > "$run/site.out" 2>&1 &
site=$!
trap 'kill $site 2>/dev/null; wait $site 2>/dev/null' EXIT
trap 'exit 130' INT TERM
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    grep -q listening "$run/site.out" 2>/dev/null && break
    sleep 0.1
done
if ! grep -q listening "$run/site.out"; then
    echo "make run: the test site did not start:" >&2
    cat "$run/site.out" >&2
    exit 1
fi
echo "make run: test site on 127.0.0.1:$PORT (a.test .. d.test); crawl state in $state"

set --
if [ "$PORT" != 18080 ]; then
    set -- --set "crawl.seeds=[\"http://a.test:$PORT/\", \"http://b.test:$PORT/\", \"http://c.test:$PORT/\", \"http://d.test:$PORT/\"]" \
        --set "fetch.resolve=[\"a.test:$PORT:127.0.0.1\", \"b.test:$PORT:127.0.0.1\", \"c.test:$PORT:127.0.0.1\", \"d.test:$PORT:127.0.0.1\"]"
fi
bin/crawld run -c crawl.toml --set "storage.state_dir=\"$state\"" --set politeness.backoff_ms=500 \
    --set dedup.expected_urls=1000 --set dedup.recent_cache=256 "$@"
rc=$?

# What the site saw: robots.txt per host, and b.test's Crawl-delay kept.
echo
echo "what the site saw ($(wc -l < "$run/site.log") requests, $run/site.log):"
awk -F'\t' -v cd="$CRAWL_DELAY" '
    $4 == "/robots.txt" && !($2 in robots) { robots[$2] = $5; order[++nh] = $2 }
    { if ($2 in last) { gap = $1 - last[$2]; if (!($2 in mingap) || gap < mingap[$2]) mingap[$2] = gap }
      last[$2] = $1; n[$2]++ }
    END {
        printf "  robots.txt:"
        for (i = 1; i <= nh; i++) {
            h = order[i]; s = robots[h]
            what = s == 200 ? "rules obeyed" : s >= 500 ? "server error, so nothing else fetched" : "none, so all allowed"
            printf "%s %s %s (%s)", (i > 1 ? ";" : ""), h, s, what
        }
        printf "\n"
        printf "  Crawl-delay: b.test asks for %s s: %d requests, never less than %d ms apart; a.test (none asked): %d requests, down to %d ms apart\n",
            cd, n["b.test"], mingap["b.test"], n["a.test"], mingap["a.test"]
    }' "$run/site.log"

echo
if bin/crawld report --state "$state" -o "$run/report.html"; then
    echo "make run: bin/crawld stats --state $state shows the figures again;" \
         "bin/crawld report --state $state -o FILE draws them again"
    echo "make run: the report: $root/$run/report.html"
else
    rc=1
fi
exit $rc
