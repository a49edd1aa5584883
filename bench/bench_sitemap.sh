#!/bin/sh
# bench/bench_sitemap.sh: sitemap parsing MB/s and URLs/s, crawld's
# crawler/web/sitemap against Python parsers in the same run:
#   - Scrapy's scrapy.utils.sitemap.Sitemap (lxml tree of the whole body;
#     gzip through scrapy.utils.gz.gunzip first), what a Scrapy
#     SitemapSpider runs,
#   - the standard library's xml.etree.ElementTree.iterparse (expat,
#     streaming, elements cleared as they end).
# The input is a generated 50,000-URL sitemap (the protocol's limit; loc,
# lastmod, changefreq, priority per entry), plain and gzip-compressed.
# crawld reads it in 16 KiB chunks, as from the network; the peers get the
# whole body (Scrapy) or a file (iterparse). Rates use process CPU time (the
# machine may be shared), medians of ROUNDS. A last row gives the floor:
# libxml2's push parser alone on the same XML (bench_sitemap measures it in
# rounds alternating with crawld's).
# Installs python3-scrapy with apt-get when missing (as root).
# env: B (build dir, from `make bench`), ROUNDS (default 5), PYTHON.
set -u
B=${B:-build/default}
ROUNDS=${ROUNDS:-5}
BIN="$B/bench/bench_sitemap"
PY=${PYTHON:-/usr/bin/python3}

if ! "$PY" -c 'import scrapy.utils.sitemap' 2>/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        echo "bench_sitemap: installing python3-scrapy"
        DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-scrapy >/dev/null ||
        { echo "bench_sitemap: apt-get failed"; exit 1; }
    else
        echo "bench_sitemap: needs python3-scrapy; run as root: apt-get install python3-scrapy"
        exit 1
    fi
fi
if [ ! -x "$BIN" ]; then
    echo "bench_sitemap: $BIN missing (run through make bench)"
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
"$PY" - "$tmp" <<'EOF'
import gzip, sys
tmp = sys.argv[1]
out = ['<?xml version="1.0" encoding="UTF-8"?>\n'
       '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n']
for i in range(50000):
    out.append('<url><loc>https://www.example.com/section/%d/article-%d.html?ref=%d&amp;p=%d</loc>'
               '<lastmod>2024-05-%02dT10:%02d:00+00:00</lastmod><changefreq>daily</changefreq>'
               '<priority>0.%d</priority></url>\n' % (i % 97, i, i % 13, i % 7, 1 + i % 28, i % 60, i % 10))
out.append('</urlset>\n')
data = ''.join(out).encode()
open(tmp + '/sitemap.xml', 'wb').write(data)
open(tmp + '/sitemap.xml.gz', 'wb').write(gzip.compress(data, 6))
EOF

cat >"$tmp/peers.py" <<'EOF'
import sys, time
import xml.etree.ElementTree as ET

def run_scrapy(path):
    from scrapy.utils.sitemap import Sitemap
    from scrapy.utils.gz import gunzip
    body = open(path, 'rb').read()
    if path.endswith('.gz'):
        body = gunzip(body)
    return sum(1 for e in Sitemap(body) if 'loc' in e)

def run_iterparse(path):
    import gzip
    f = gzip.open(path, 'rb') if path.endswith('.gz') else open(path, 'rb')
    n = 0
    for ev, el in ET.iterparse(f):
        if el.tag.endswith('}loc'):
            n += 1
        el.clear()
    return n

impls = {'scrapy': run_scrapy, 'iterparse': run_iterparse}
name, rounds, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fn = impls[name]
times = []
for r in range(rounds):
    t0 = time.process_time()
    urls = fn(path)
    times.append(time.process_time() - t0)
    print('  %s round %d: %d URLs, cpu %.3f s' % (name, r + 1, urls, times[-1]), file=sys.stderr)
times.sort()
med = times[rounds // 2] if rounds % 2 else (times[rounds // 2 - 1] + times[rounds // 2]) / 2
print('RESULT urls=%d cpu_median=%.6f' % (urls, med))
EOF

"$PY" -c 'import scrapy, lxml.etree as e, sys; print("  python %s, scrapy %s, lxml %s" % (sys.version.split()[0], scrapy.__version__, e.__version__))'
for f in sitemap.xml sitemap.xml.gz; do
    "$BIN" -r "$ROUNDS" "$tmp/$f" >"$tmp/c-$f.out" || { cat "$tmp/c-$f.out"; exit 1; }
    for impl in scrapy iterparse; do
        "$PY" "$tmp/peers.py" "$impl" "$ROUNDS" "$tmp/$f" >"$tmp/$impl-$f.out" 2>"$tmp/$impl-$f.err" ||
            { cat "$tmp/$impl-$f.err"; exit 1; }
    done
done

"$PY" - "$tmp" "$ROUNDS" <<'EOF'
import sys
tmp, rounds = sys.argv[1], sys.argv[2]
def kv(path, tag='RESULT'):
    line = [l for l in open(path) if l.startswith(tag)][-1]
    return dict(x.split('=') for x in line.split()[1:])
print()
for f in ('sitemap.xml', 'sitemap.xml.gz'):
    c = kv('%s/c-%s.out' % (tmp, f))
    xml_bytes = int(c['bytes'])
    base = xml_bytes / float(c['cpu_median']) / 1e6
    print('%s: %d URLs, %.1f MB of XML, median of %s rounds, process CPU time:' %
          (f, int(c['urls']), xml_bytes / 1e6, rounds))
    print()
    print('| parser | MB/s of XML | URLs/s | URLs found | crawld is faster by |')
    print('|---|---:|---:|---:|---:|')
    rows = [('crawld crawler/web/sitemap (C, libxml2 SAX push, zlib)', c),
            ('Scrapy Sitemap (Python, lxml tree)', kv('%s/scrapy-%s.out' % (tmp, f))),
            ('ElementTree iterparse (Python stdlib, expat)', kv('%s/iterparse-%s.out' % (tmp, f)))]
    for label, r in rows:
        t = float(r['cpu_median'])
        mbps = xml_bytes / t / 1e6
        print('| %s | %.1f | %.0f | %d | %.2fx |' % (label, mbps, int(r['urls']) / t, int(r['urls']), base / mbps))
    fl = kv('%s/c-%s.out' % (tmp, f), 'FLOOR')
    fm = xml_bytes / float(fl['cpu_median']) / 1e6
    print('| (floor: libxml2 push parser alone on the XML, no-op SAX, C) | %.1f | - | - | %.2fx |' % (fm, base / fm))
    print('| (crawld bench_sitemap process peak RSS, the file in memory included) | %s KB | | | |' % c['maxrss_kb'])
    print()
EOF
