#!/bin/sh
# bench/bench_links.sh: link extraction MB/s and links/s on real HTML (the
# Python documentation from Debian's python3-doc), crawld's crawler/web/links
# against Python extractors in the same run:
#   - lxml's HTMLParser with a parser target (libxml2 SAX, like ours),
#   - lxml.html document_fromstring + iterlinks() (tree, the usual lxml way),
#   - the standard library's html.parser.
# Every extractor reads each page in 16 KiB chunks where it can stream, and
# collects the same kinds of URLs (a/area/link href, img/source srcset, ...);
# crawld's per-page link cap is lifted (-l) so that all of them count.
# Rates use process CPU time (the machine may be shared), medians of ROUNDS.
# A last row gives the floor: libxml2's push parser alone on the same input
# (measured by bench_links in rounds alternating with crawld's).
# Installs python3-doc and python3-lxml with apt-get when missing (as root).
# env: B (build dir, from `make bench`), ROUNDS (default 5), HTML_DIR,
# PYTHON (default /usr/bin/python3: Debian's, where python3-lxml installs).
set -u
B=${B:-build/default}
ROUNDS=${ROUNDS:-5}
HTML_DIR=${HTML_DIR:-/usr/share/doc/python3-doc/html}
BIN="$B/bench/bench_links"
PY=${PYTHON:-/usr/bin/python3}

need=""
[ -d "$HTML_DIR" ] || need="$need python3-doc"
[ -x "$PY" ] || need="$need python3"
"$PY" -c 'import lxml.html' 2>/dev/null || need="$need python3-lxml"
if [ -n "$need" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "bench_links: installing$need"
        DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $need >/dev/null ||
        { echo "bench_links: apt-get failed"; exit 1; }
    else
        echo "bench_links: needs$need; run as root: apt-get install$need"
        exit 1
    fi
fi
if [ ! -x "$BIN" ]; then
    echo "bench_links: $BIN missing (run through make bench)"
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
find -L "$HTML_DIR" -name '*.html' -type f | LC_ALL=C sort >"$tmp/list"
[ -s "$tmp/list" ] || { echo "bench_links: no HTML under $HTML_DIR"; exit 1; }

"$BIN" -r "$ROUNDS" -l 1000000 "$tmp/list" >"$tmp/c.out" || { cat "$tmp/c.out"; exit 1; }
sed 's/^/  /' "$tmp/c.out" | grep -v -e RESULT -e FLOOR
grep FLOOR "$tmp/c.out" | sed 's/^FLOOR/RESULT/' >"$tmp/floor.out"
"$PY" -c 'import lxml.etree as e, sys; print("  python %s, lxml %s on libxml2 %s" % (sys.version.split()[0], e.__version__, ".".join(map(str, e.LIBXML_VERSION))))'

cat >"$tmp/peers.py" <<'EOF'
import codecs, sys, time
from html.parser import HTMLParser

CHUNK = 16384
ATTRS = {'a': ('href',), 'area': ('href',), 'link': ('href', 'imagesrcset'),
         'frame': ('src',), 'iframe': ('src',), 'img': ('src', 'srcset'),
         'script': ('src',), 'source': ('src', 'srcset'), 'video': ('src', 'poster'),
         'audio': ('src',), 'track': ('src',), 'embed': ('src',), 'object': ('data',),
         'form': ('action',)}

def urls(tag, get, out):
    names = ATTRS.get(tag)
    if names is None:
        if tag == 'meta':
            if (get('http-equiv') or '').strip().lower() == 'refresh':
                c = get('content') or ''
                i = c.lower().find('url=')
                if i >= 0 and c[i + 4:].strip(' \'"'):
                    out.append(c[i + 4:].strip(' \'"'))
        return
    for n in names:
        v = get(n)
        if not v:
            continue
        if n.endswith('srcset'):
            for cand in v.split(','):
                parts = cand.split()
                if parts:
                    out.append(parts[0])
        else:
            v = v.strip()
            if v and not v.lower().startswith('data:'):
                out.append(v)

class Std(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []
    def handle_starttag(self, tag, attrs):
        d = {}
        for k, v in attrs:
            d.setdefault(k, v)
        urls(tag, d.get, self.links)

def run_std(pages):
    n = 0
    for data in pages:
        p = Std()
        dec = codecs.getincrementaldecoder('utf-8')('replace')
        for i in range(0, len(data), CHUNK):
            p.feed(dec.decode(data[i:i + CHUNK]))
        p.feed(dec.decode(b'', True))
        p.close()
        n += len(p.links)
    return n

def run_lxml_target(pages):
    from lxml import etree
    class Target:
        def __init__(self):
            self.links = []
        def start(self, tag, attrib):
            urls(tag, attrib.get, self.links)
        def close(self):
            links, self.links = self.links, []
            return links
    parser = etree.HTMLParser(target=Target())
    n = 0
    for data in pages:
        for i in range(0, len(data), CHUNK):
            parser.feed(data[i:i + CHUNK])
        n += len(parser.close())
    return n

def run_lxml_tree(pages):
    import lxml.html
    n = 0
    for data in pages:
        doc = lxml.html.document_fromstring(data)
        n += sum(1 for _ in doc.iterlinks())
    return n

impls = {'std': run_std, 'lxml_target': run_lxml_target, 'lxml_tree': run_lxml_tree}
name, rounds, listfile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pages = [open(p, 'rb').read() for p in open(listfile).read().split('\n') if p]
total = sum(len(p) for p in pages)
fn = impls[name]
times = []
for r in range(rounds):
    t0 = time.process_time()
    links = fn(pages)
    times.append(time.process_time() - t0)
    print('  %s round %d: %d links, cpu %.3f s' % (name, r + 1, links, times[-1]), file=sys.stderr)
times.sort()
med = times[rounds // 2] if rounds % 2 else (times[rounds // 2 - 1] + times[rounds // 2]) / 2
print('RESULT bytes=%d links=%d cpu_median=%.6f' % (total, links, med))
EOF

for impl in lxml_target lxml_tree std; do
    "$PY" "$tmp/peers.py" "$impl" "$ROUNDS" "$tmp/list" >"$tmp/$impl.out" 2>"$tmp/$impl.err" ||
        { cat "$tmp/$impl.err"; exit 1; }
    sed 's/^/  /' "$tmp/$impl.err" | sed 's/^    /  /'
done

pages=$(wc -l <"$tmp/list")
"$PY" - "$tmp" "$pages" "$ROUNDS" <<'EOF'
import sys
tmp, pages, rounds = sys.argv[1], sys.argv[2], sys.argv[3]
def res(name):
    line = [l for l in open('%s/%s.out' % (tmp, name)) if l.startswith('RESULT')][-1]
    d = dict(kv.split('=') for kv in line.split()[1:])
    return int(d['bytes']), int(d.get('links', 0)), float(d['cpu_median'])
rows = [('crawld crawler/web/links (C, libxml2 SAX push)', 'c'),
        ('lxml HTMLParser target (Python, libxml2 SAX)', 'lxml_target'),
        ('lxml.html + iterlinks (Python, libxml2 tree)', 'lxml_tree'),
        ('html.parser (Python stdlib)', 'std')]
base = res('c')
base_mbps = base[0] / base[2] / 1e6
print()
print('%s pages, %.1f MB of HTML, median of %s rounds, process CPU time:' % (pages, base[0] / 1e6, rounds))
print()
print('| extractor | MB/s | links/s | links found | crawld is faster by |')
print('|---|---:|---:|---:|---:|')
for label, name in rows:
    b, l, t = res(name)
    mbps = b / t / 1e6
    print('| %s | %.1f | %.0f | %d | %.2fx |' % (label, mbps, l / t, l, base_mbps / mbps))
fb, _, ft = res('floor')
print('| (floor: libxml2 push parser alone, no-op SAX, C) | %.1f | - | - | %.2fx |'
      % (fb / ft / 1e6, base_mbps / (fb / ft / 1e6)))
EOF
