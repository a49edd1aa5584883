#!/bin/sh
# Re-crawl benchmark: the generated 20,000-page site of bench-crawl, served
# by nginx (which sends ETag/Last-Modified and answers 304 itself), crawled
# once and again unchanged by crawld (recrawl.after_s = 1), wget -N, wget2 -N
# and httrack --update; prints the second crawl's requests, bytes on the
# wire, wall and CPU, with ratios to the first crawl and to each peer
# (medians of RECRAWL_RUNS rounds, default 3). The driver is
# bench/recrawl/run.py. Installs nginx, wget, wget2 and httrack when root.
# Called by bench/run.sh (`BENCH_ONLY=recrawl make bench`).
set -u
root=${CRAWLD_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 1
say() { echo "[bench-recrawl] $*" >&2; }
missing=""
need() { [ -e "$2" ] || missing="$missing $1"; }
need nginx /usr/sbin/nginx
need wget /usr/bin/wget
need wget2 /usr/bin/wget2
need httrack /usr/bin/httrack
need time /usr/bin/time
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        say "installing$missing (apt-get)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null ||
            say "apt-get failed; what is missing shows as n/a"
    else
        say "missing:$missing (as root: apt-get install -y$missing)"
    fi
fi
exec /usr/bin/python3 bench/recrawl/run.py
