#!/bin/sh
# `make run`: the main job on a machine with no network beyond loopback.
# Starts the local test web on 127.0.0.1:18080 (hosts a.test..d.test), crawls
# it with the shipped crawl.toml (whose seeds and [fetch] resolve point
# there), prints the summary, and stops the site. b.test asks for a
# Crawl-delay of 1 s in its robots.txt, which crawld obeys: that host sets
# the pace (about 4-5 minutes for its ~250 URLs). The state goes to a fresh
# folder each time; pass CRAWLD_STATE=DIR to keep one.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
PORT=${CRAWLD_SITE_PORT:-18080}
state=${CRAWLD_STATE:-$(mktemp -d /tmp/crawld-run-XXXXXX)}
bin/testsite --port "$PORT" --pages 120 --hosts 4 --log "$state/site.log" > "$state/site.out" 2>&1 &
site=$!
trap 'kill $site 2>/dev/null; wait $site 2>/dev/null' EXIT INT TERM
for i in 1 2 3 4 5 6 7 8 9 10; do
    grep -q listening "$state/site.out" 2>/dev/null && break
    sleep 0.2
done
if ! grep -q listening "$state/site.out"; then
    echo "make run: the test site did not start:" >&2
    cat "$state/site.out" >&2
    exit 1
fi
echo "make run: test site on 127.0.0.1:$PORT; crawl state in $state"
bin/crawld run -c crawl.toml --set "storage.state_dir=\"$state/state\""
rc=$?
echo "make run: the site logged $(wc -l < "$state/site.log") requests; bin/crawld stats --state $state/state shows the figures again, bin/crawld report --state $state/state -o report.html draws them"
exit $rc
