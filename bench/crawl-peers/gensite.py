"""Generates the synthetic site of the peer crawl benchmark, deterministic
for a given (pages, seed, host, port).

Layout (every file is HTML except robots.txt; PAGES files in all):
  /index.html              home
  /sK/index.html           12 section indexes (K = 0..11)
  /sK/pI.html              content pages, section K = I % 12
  /list.html               served for list.html?a=N&b=2 in either order
  /private/pJ.html         20 pages that robots.txt disallows, linked from
                           the site; they link to two pages nothing else
                           links to (a polite crawler never reaches those)
  /old/start.html          no file: nginx answers 301 to a page that only
                           this redirect leads to
  /sK/missing-J.html       linked, never created: 404s
Every page has a navigation block (home + 12 section indexes), then links
whose targets follow a Zipf law over a shuffled ranking (popular pages are
linked very often) plus a few uniform picks, written in mixed forms
(relative, ../, root-relative, absolute, protocol-relative, #fragment,
./ and x/../ dot segments, escaped unreserved characters, lowercase hex,
empty query). Some pages are never linked (orphans).

The reachable set is computed twice and must agree: a BFS over the link
graph as generated, and known.py's BFS over the files written (the same
parser and canonicalization as the log parser). It is written to
known.txt; its size is printed. nginx.inc holds the nginx lines the site
needs (the redirect, the robots.txt is a plain file).

usage: gensite.py OUT_DIR --port P [--host H] [--pages N] [--seed S]
"""

import argparse
import json
import os
import random
import sys
from bisect import bisect_left
from collections import deque

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import canon  # noqa: E402
import known  # noqa: E402

SECTIONS = 12
PRIVATE = 20
MISSING = 10
LIST_VARIANTS = 5
ZIPF_LINKS = 24
UNIFORM_LINKS = 3
ZIPF_S = 1.0
DESIGNED_ORPHANS = 120

WORDS = ("crawl frontier bloom filter shard queue politeness robots fetch parse "
         "link canonical scheme host port path query fragment segment escape "
         "duplicate seen table page index section archive record header body "
         "status redirect latency thread socket buffer cache memory storage "
         "writer reader batch commit journal snapshot chain stage false positive "
         "rate bound growth tighten verify policy trap depth scope domain").split()


def text(rng, words):
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


class Site:
    def __init__(self, pages, seed, host, port):
        self.rng = random.Random(seed)
        self.host, self.port = host, port
        self.origin = "http://%s:%d" % (host, port)
        fixed = 1 + SECTIONS + 1 + PRIVATE
        if pages < fixed + 200:
            raise SystemExit("gensite: --pages must be at least %d" % (fixed + 200))
        self.ncontent = pages - fixed
        self.content = ["/s%d/p%d.html" % (i % SECTIONS, i) for i in range(self.ncontent)]
        rng = self.rng
        ids = list(range(self.ncontent))
        rng.shuffle(ids)
        # Designed orphans: never a link target. Two of them are linked only
        # from private pages, one only by the redirect.
        self.orphans = set(ids[:DESIGNED_ORPHANS])
        orph = sorted(self.orphans)
        self.private_only = [self.content[orph[0]], self.content[orph[1]]]
        self.redirect_target = self.content[orph[2]]
        linkable = ids[DESIGNED_ORPHANS:]          # already shuffled: Zipf rank order
        self.linkable = linkable
        cum, t = [], 0.0
        for r in range(len(linkable)):
            t += 1.0 / (r + 1) ** ZIPF_S
            cum.append(t)
        self.cum, self.total = cum, t
        self.redirect_src = "/old/start.html"
        self.missing = ["/s%d/missing-%d.html" % (j % SECTIONS, j) for j in range(MISSING)]
        self.private = ["/private/p%d.html" % j for j in range(PRIVATE)]
        self.graph = {}   # path -> list of target paths (pages, 404s, redirect, list URLs)

    def zipf(self):
        k = bisect_left(self.cum, self.rng.random() * self.total)
        return self.linkable[min(k, len(self.linkable) - 1)]

    def form(self, src, target):
        """One way of writing a link from page src to target path."""
        rng = self.rng
        sdir = src.rsplit("/", 1)[0] + "/"
        tdir, tname = target.rsplit("/", 1)
        tdir += "/"
        if sdir == tdir:
            rel = tname
        elif sdir == "/":
            rel = target[1:]
        else:
            rel = "../" * (sdir.count("/") - 1) + target[1:]
        k = rng.randrange(100)
        if k < 30:
            return rel
        if k < 45:
            return target
        if k < 55:
            return self.origin + target
        if k < 57:
            return "HTTP://%s:%d%s" % (self.host.upper(), self.port, target)
        if k < 65:
            return "//%s:%d%s" % (self.host, self.port, target)
        if k < 73:
            return rel + rng.choice(("#top", "#s2", "#"))
        if k < 77:
            return ("./" + tname) if sdir == tdir else tdir + "./" + tname
        if k < 81:
            return tdir + "x/../" + tname
        if k < 85:   # every letter and digit of the file name escaped
            stem, ext = tname.rsplit(".", 1)
            return tdir + "".join("%%%02X" % ord(c) for c in stem) + "." + ext
        if k < 88:   # lowercase hex escape of the dot
            stem, ext = tname.rsplit(".", 1)
            return tdir + stem + "%2e" + ext
        if k < 95:
            return rel + "?"
        return self.origin + target + "#x"

    def links_for(self, path, idx):
        """(href, target) pairs of a content or index page, in page order."""
        rng = self.rng
        out = []
        targets = [self.content[self.zipf()] for _ in range(ZIPF_LINKS)]
        targets += [self.content[rng.choice(self.linkable)] for _ in range(UNIFORM_LINKS)]
        for t in targets:
            out.append((self.form(path, t), t))
        if idx is not None:
            if idx % 997 == 5:
                a = 1 + (idx // 997) % LIST_VARIANTS
                q = ("a=%d&b=2" % a) if (idx // 997) % 2 else ("b=2&a=%d" % a)
                out.append(("/list.html?" + q, "/list.html?a=%d&b=2" % a))
            if idx % 1009 == 7:
                m = self.missing[(idx // 1009) % MISSING]
                out.append((m, m))
            if idx % 499 == 11:
                p = self.private[(idx // 499) % PRIVATE]
                out.append((p, p))
            if idx % 4999 == 13:
                out.append((self.redirect_src, self.redirect_src))
            if idx == 1234 % self.ncontent:
                # an escaped letter in a disallowed path: still /private/
                out.append(("/%70rivate/p3.html", "/private/p3.html"))
        return out

    def nav(self, path, idx):
        if idx is not None and idx % 2:
            return [(self.origin + "/", "/")] + [
                (self.origin + "/s%d/" % k, "/s%d/" % k) for k in range(SECTIONS)]
        up = "../" * (path.count("/") - 1)
        return [(up or "./", "/")] + [
            (up + "s%d/" % k, "/s%d/" % k) for k in range(SECTIONS)]

    def render(self, path, title, nav, links):
        rng = self.rng
        lines = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
                 '<title>%s</title></head><body>' % title, '<a id="top"></a>',
                 '<nav><ul>']
        for href, _ in nav:
            lines.append('<li><a href="%s">%s</a></li>' % (href.replace("&", "&amp;"), href.rstrip("/").rsplit("/", 1)[-1] or "home"))
        lines.append('</ul></nav><main><h1>%s</h1>' % title)
        per = max(1, len(links) // 6)
        for i in range(0, len(links), per):
            lines.append('<h2 id="s%d">%s</h2><p>%s</p><ul>' % (i // per + 1, text(rng, 3), text(rng, 36)))
            for href, _ in links[i:i + per]:
                lines.append('<li><a href="%s">%s</a></li>' % (href.replace("&", "&amp;"), text(rng, 3)))
            lines.append('</ul>')
        lines.append('<p>%s</p></main><footer>%s</footer></body></html>' % (text(rng, 25), path))
        return "\n".join(lines) + "\n"

    def write(self, root):
        def put(path, body):
            fs = os.path.join(root, path.lstrip("/"))
            if fs.endswith("/"):
                fs += "index.html"
            os.makedirs(os.path.dirname(fs), exist_ok=True)
            with open(fs, "w", encoding="utf-8") as f:
                f.write(body)

        # home
        links = [("s%d/" % k, "/s%d/" % k) for k in range(SECTIONS)]
        links += [("list.html?a=%d&b=2" % a, "/list.html?a=%d&b=2" % a) for a in range(1, LIST_VARIANTS + 1)]
        links += [("old/start.html", self.redirect_src)]
        links += self.links_for("/", None)
        self.graph["/"] = [t for _, t in links]
        put("/", self.render("/", "Home", [], links))
        for k in range(SECTIONS):
            p = "/s%d/" % k
            links = self.links_for(p + "index.html", None)
            nav = self.nav(p + "index.html", None)
            self.graph[p] = [t for _, t in nav + links]
            put(p, self.render(p, "Section %d" % k, nav, links))
        for i, p in enumerate(self.content):
            if i in self.orphans:
                links = self.links_for(p, None)
            else:
                links = self.links_for(p, i)
            nav = self.nav(p, i)
            self.graph[p] = [t for _, t in nav + links]
            put(p, self.render(p, "Page %d" % i, nav, links))
        lst = [(self.content[self.linkable[j]], self.content[self.linkable[j]]) for j in range(20)]
        self.graph["/list.html"] = [t for _, t in lst]
        put("/list.html", self.render("/list.html", "List", self.nav("/list.html", None), lst))
        for j, p in enumerate(self.private):
            links = [(t, t) for t in self.private_only] + self.links_for(p, None)
            self.graph[p] = [t for _, t in links]
            put(p, self.render(p, "Private %d" % j, [], links))
        with open(os.path.join(root, "robots.txt"), "w") as f:
            f.write("User-agent: *\nDisallow: /private/\n")

    def reachable(self):
        """BFS over the generated graph (target paths, not hrefs)."""
        pages = set()
        seen = {"/"}
        todo = deque(["/"])
        while todo:
            p = todo.popleft()
            if p.startswith("/private/"):
                continue
            if p == self.redirect_src:
                nxt = [self.redirect_target]
            elif p.split("?")[0] in self.graph:
                pages.add(p)
                nxt = self.graph[p.split("?")[0]] if "?" not in p else self.graph["/list.html"]
            else:
                continue   # a 404
            for t in nxt:
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return {self.origin + p for p in pages}


def main():
    ap = argparse.ArgumentParser(description="generate the bench's synthetic site")
    ap.add_argument("out")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    site = Site(a.pages, a.seed, a.host, a.port)
    root = os.path.join(a.out, "site")
    site.write(root)
    from_graph = site.reachable()
    redirects = {site.redirect_src: site.origin + site.redirect_target}
    with open(os.path.join(root, "robots.txt")) as f:
        dis = canon.robots_disallows(f.read())
    from_files = known.known_set(root, site.origin, dis, redirects)
    if from_graph != from_files:
        sys.stderr.write("gensite: graph BFS (%d) and file BFS (%d) disagree, e.g. %s\n" % (
            len(from_graph), len(from_files), sorted(from_graph ^ from_files)[:5]))
        sys.exit(1)
    with open(os.path.join(a.out, "known.txt"), "w") as f:
        for u in sorted(from_files):
            f.write(u + "\n")
    with open(os.path.join(a.out, "nginx.inc"), "w") as f:
        f.write("location = %s { return 301 %s%s; }\n" % (site.redirect_src, site.origin, site.redirect_target))
    meta = {"pages": a.pages, "seed": a.seed, "origin": site.origin, "reachable": len(from_files),
            "redirects": redirects, "disallow": dis, "missing": site.missing,
            "private_only": [site.origin + p for p in site.private_only]}
    with open(os.path.join(a.out, "site.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(len(from_files))


if __name__ == "__main__":
    main()
