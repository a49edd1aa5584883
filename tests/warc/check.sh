#!/bin/sh
# tests/warc/check.sh FILE.warc.gz...: runs check.js (warcio reading our
# WARC files) under a time limit, installing the pinned warcio first when
# tests/warc/node_modules lacks it. Exit codes: those of check.js (0 all
# good, 1 problems found), 124 timeout, 77 skipped: no node or npm here.
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "##############################################################" >&2
    echo "## SKIPPED: the warcio check needs node and npm; not found.  ##" >&2
    echo "## Our WARC files were NOT read by an independent parser.    ##" >&2
    echo "##############################################################" >&2
    exit 77
fi
if [ ! -f "$here/node_modules/warcio/package.json" ]; then
    echo "tests/warc: installing warcio (npm ci, pinned by package-lock.json)" >&2
    (cd "$here" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >&2) || {
        echo "tests/warc: npm ci failed" >&2
        exit 1
    }
fi
exec timeout 60 node "$here/check.js" "$@"
