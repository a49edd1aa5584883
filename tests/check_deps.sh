#!/bin/sh
# tests/check_deps.sh: fails when an #include crosses the module boundaries
# of /work/shared/DESIGN.md's table and crawler/README.md. One line per
# crossing, as FILE:LINE: what it includes: the rule it breaks.
#
#   folder          may include of ours                      may not include
#   common/         common/                                  any third-party library header listed below
#   config/         common/, config/                         (ditto)
#   dedup/          common/, dedup/                          curl, libxml2, SQLite, libmicrohttpd, jansson
#   storage/        common/, storage/                        curl, libxml2, libmicrohttpd (jansson
#                                                            only for the WACZ packager JSON)
#   frontier/       common/, storage/, frontier/             curl, libxml2, SQLite, libmicrohttpd, jansson
#   cluster/        common/, dedup/, storage/, cluster/      curl, libxml2, SQLite, libmicrohttpd, jansson
#   crawler/web/    common/, crawler/web/                    SQLite, libmicrohttpd, jansson
#   crawler/report/ common/ config/ dedup/ storage/ frontier/ curl, libxml2, SQLite
#                   crawler/report/, and crawler/crawl.h (the figures it formats)
#   crawler/        everything but crawler/cli/              SQLite
#   crawler/cli/    everything                               SQLite
# SQLite stays in storage/ (its fence); hiredis stays in cluster/redis.c (its
# fence: no other file of ours may include it); bench/ and tests/ may use anything.
#
# usage: tests/check_deps.sh [ROOT]     check the tree at ROOT (default: .)
#        tests/check_deps.sh --self-test plant bad includes in a temp copy
#                                        and show each one is caught
set -u

check() {
    root=$1
    cd "$root" || return 2
    files=$(find common config dedup storage frontier cluster crawler -name '*.[ch]' 2>/dev/null | sort)
    [ -n "$files" ] || { echo "check-deps: no sources under $root"; return 2; }
    # shellcheck disable=SC2086
    awk '
    function folder(f,   d) {
        if (f ~ /^crawler\/(web|report|cli)\//) { split(f, d, "/"); return d[1] "/" d[2] }
        split(f, d, "/"); return d[1]
    }
    function ours(t) { return t ~ /^(common|config|dedup|storage|frontier|cluster|crawler)\// }
    function lib(t) {
        if (t ~ /^curl\//) return "curl"
        if (t ~ /^libxml\//) return "libxml2"
        if (t == "sqlite3.h") return "SQLite"
        if (t == "microhttpd.h") return "libmicrohttpd"
        if (t == "jansson.h") return "jansson"
        if (t ~ /^(hiredis\/)?(hiredis|async|read|sds)\.h$/) return "hiredis"
        return ""
    }
    function allowed_ours(m, t) {
        if (m == "common") return t ~ /^common\//
        if (m == "config") return t ~ /^(common|config)\//
        if (m == "dedup") return t ~ /^(common|dedup)\//
        if (m == "storage") return t ~ /^(common|storage)\//
        if (m == "frontier") return t ~ /^(common|storage|frontier)\//
        if (m == "cluster") return t ~ /^(common|dedup|storage|cluster)\//
        if (m == "crawler/web") return t ~ /^(common|crawler\/web)\//
        if (m == "crawler/report")
            return t ~ /^(common|config|dedup|storage|frontier|crawler\/report)\// || t == "crawler/crawl.h"
        if (m == "crawler") return t !~ /^crawler\/cli\//
        return 1
    }
    function banned_lib(m, l) {
        if (l == "") return 0
        if (l == "hiredis") return FILENAME != "cluster/redis.c"
        if (m == "common" || m == "config") return 1
        if (m == "dedup") return 1
        if (m == "storage") return l != "SQLite" && l != "jansson" # jansson: the WACZ datapackage.json
        if (m == "frontier") return 1
        if (m == "cluster") return 1
        if (m == "crawler/web") return l == "SQLite" || l == "libmicrohttpd" || l == "jansson"
        if (m == "crawler/report") return l == "curl" || l == "libxml2" || l == "SQLite"
        return l == "SQLite"
    }
    FNR == 1 { m = folder(FILENAME); dir = FILENAME; sub(/\/[^\/]*$/, "", dir) }
    /^[ \t]*#[ \t]*include[ \t]*[<"]/ {
        line = $0
        q = line ~ /"/
        t = line; sub(/^[^<"]*[<"]/, "", t); sub(/[>"].*$/, "", t)
        if (q && !ours(t)) t = dir "/" t   # "alloc.h" beside the file
        while (sub(/\/\.\//, "/", t)) ;   # "a/./x" -> "a/x"
        while (sub(/[^\/.][^\/]*\/\.\.\//, "", t)) ;   # "a/../x" -> "x"
        if (q || ours(t)) {
            if (!allowed_ours(m, t)) {
                printf "%s:%d: includes \"%s\": %s/ may not use it (see tests/check_deps.sh)\n", FILENAME, FNR, t, m
                bad++
            }
        } else if (banned_lib(m, lib(t))) {
            printf "%s:%d: includes <%s>: %s/ may not use %s (see tests/check_deps.sh)\n", FILENAME, FNR, t, m, lib(t)
            bad++
        }
    }
    END {
        if (bad) { printf "check-deps: %d include(s) cross the module boundaries\n", bad; exit 1 }
        print "check-deps: include graph within the module boundaries"
    }' $files
}

self_test() {
    src=$(pwd)
    tmp=$(mktemp -d) || exit 2
    trap 'rm -rf "$tmp"' EXIT
    fails=0
    # each plant: file, include line, what the message must name
    for plant in \
        'dedup/hash.c|#include <curl/curl.h>|dedup/hash.c:.*curl' \
        'dedup/bloom.c|#include <sqlite3.h>|dedup/bloom.c:.*SQLite' \
        'config/config.c|#include "storage/db.h"|config/config.c:.*storage/db.h' \
        'crawler/web/url.c|#include "crawler/crawl.h"|crawler/web/url.c:.*crawler/crawl.h' \
        'storage/warc.c|#include "frontier/frontier.h"|storage/warc.c:.*frontier/frontier.h' \
        'crawler/crawl.h|#include "crawler/cli/cli.h"|crawler/crawl.h:.*crawler/cli/cli.h' \
        'common/buf.c|#include "dedup/bloom.h"|common/buf.c:.*dedup/bloom.h' \
        'crawler/web/links.c|#include "../cli/cli.h"|crawler/web/links.c:.*crawler/cli/cli.h' \
        'cluster/member.c|#include <hiredis.h>|cluster/member.c:.*hiredis' \
        'crawler/crawl.c|#include <hiredis/hiredis.h>|crawler/crawl.c:.*hiredis' \
        'cluster/slotmap.c|#include "frontier/frontier.h"|cluster/slotmap.c:.*frontier/frontier.h' \
        'cluster/redis.c|#include <sqlite3.h>|cluster/redis.c:.*SQLite'; do
        f=${plant%%|*}; rest=${plant#*|}; inc=${rest%%|*}; want=${rest#*|}
        rm -rf "$tmp/t" && mkdir "$tmp/t" || exit 2
        (cd "$src" && tar cf - common config dedup storage frontier cluster crawler) | (cd "$tmp/t" && tar xf -)
        printf '%s\n' "$inc" >>"$tmp/t/$f"
        out=$( (check "$tmp/t") 2>&1); rc=$?
        if [ $rc -ne 1 ] || ! printf '%s\n' "$out" | grep -q "$want"; then
            echo "check-deps self-test: planting '$inc' in $f was not caught (rc $rc): $out"
            fails=$((fails + 1))
        fi
    done
    out=$( (check "$src") 2>&1) || { echo "$out"; echo "check-deps self-test: the tree itself fails"; exit 1; }
    [ $fails -eq 0 ] || exit 1
    echo "check-deps self-test: 12 planted crossings caught, each named by file:line"
}

case "${1:-}" in
--self-test) self_test ;;
*) check "${1:-.}" ;;
esac
