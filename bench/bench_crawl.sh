#!/bin/sh
# Peer crawl benchmark: crawld against wget, wget2, HTTrack, Scrapy and
# Crawlee, each crawling three sites that nginx serves on 127.0.0.1 (Debian's
# python3-doc HTML, a generated 20,000-page site and Debian's openjdk-17-doc
# API documentation: 10,000 real pages up to 6 MB), judged by one parser
# over nginx's access log. CRAWL_RUNS rounds (default 3), interleaved; the
# tables show medians with ratios against the best peer. Everything is in
# bench/crawl-peers/ (README.md there); the driver is run.py.
# Installs what it needs when root (Debian packages; Crawlee by `npm ci`
# from the committed package-lock.json). Called by bench/run.sh and by
# `make bench-crawl` (env B = build dir, BIN = bin dir).
set -u
root=${CRAWLD_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 1
dir=bench/crawl-peers
say() { echo "[bench-crawl] $*" >&2; }

# Debian packages: command or file that shows each is there.
missing=""
need() { # package test-path
    [ -e "$2" ] || missing="$missing $1"
}
need nginx /usr/sbin/nginx
need wget /usr/bin/wget
need wget2 /usr/bin/wget2
need httrack /usr/bin/httrack
need python3-scrapy /usr/bin/scrapy
need python3-doc /usr/share/doc/python3/html/index.html
need openjdk-17-doc /usr/share/doc/openjdk-17-jre-headless/api/index.html
need time /usr/bin/time
need coreutils /usr/bin/timeout
command -v node >/dev/null 2>&1 || missing="$missing nodejs npm"
command -v node >/dev/null 2>&1 && ! command -v npm >/dev/null 2>&1 && missing="$missing npm"
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        say "installing$missing (apt-get)"
        if ! { DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
               DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null; }; then
            say "apt-get failed; the crawlers that are missing will show as n/a"
        fi
    else
        say "missing packages (the crawlers they bring will show as n/a); as root:"
        say "  apt-get update && apt-get install -y --no-install-recommends$missing"
    fi
fi
if [ ! -x /usr/bin/python3 ] || [ ! -x /usr/bin/time ] || ! command -v nginx >/dev/null 2>&1; then
    say "needs /usr/bin/python3, /usr/bin/time and nginx; cannot run"
    exit 1
fi

# Crawlee, pinned by package-lock.json, installed into $dir/crawlee/node_modules.
lock="$dir/crawlee/package-lock.json"
stamp="$dir/crawlee/node_modules/.bench-lock"
if command -v npm >/dev/null 2>&1; then
    if [ ! -f "$stamp" ] || ! cmp -s "$lock" "$stamp"; then
        say "npm ci in $dir/crawlee (Crawlee, pinned)"
        if (cd "$dir/crawlee" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null); then
            cp "$lock" "$stamp"
        else
            say "npm ci failed; crawlee will show as n/a"
        fi
    fi
fi

exec /usr/bin/python3 "$dir/run.py"
