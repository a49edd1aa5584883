"""The known set of a static site: every canonical URL a complete, polite,
same-host crawl from "/" reaches, computed by a BFS over the files on disk.

Rules (the same canonicalization as the log parser, canon.py):
  - links are <a href> and <area href> of HTML pages (.html, .htm, or a
    folder's index.html), resolved against the page URL (or its <base href>);
  - same scheme, host and port as the start URL only;
  - a URL whose path (plus query) starts with a robots.txt Disallow prefix
    is neither a page nor followed;
  - a URL is a page when the file its path names exists (the query is
    ignored, as nginx ignores it); a missing file is a 404, not a page;
  - a redirect (given as source path -> target URL) is not a page; its
    target is followed; a folder without a trailing slash redirects to the
    slash form, as nginx does;
  - non-HTML files that exist are pages too (they are fetched), but are not
    parsed for links.

usage: known.py ROOT BASE_URL [--robots FILE] [--redirect SRC=DST]... [--out FILE]
Prints the size of the set; writes the sorted set to --out.
"""

import argparse
import os
import sys
from collections import deque
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import canon  # noqa: E402


class _Links(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hrefs = []
        self.base = None

    def handle_starttag(self, tag, attrs):
        if tag in ("a", "area"):
            for k, v in attrs:
                if k == "href" and v is not None:
                    self.hrefs.append(v)
        elif tag == "base" and self.base is None:
            for k, v in attrs:
                if k == "href" and v:
                    self.base = v


def page_links(page_url, html_text):
    """Canonical same-site candidates linked from one HTML page, in order."""
    p = _Links()
    try:
        p.feed(html_text)
        p.close()
    except Exception:  # html.parser is lenient; keep what was read
        pass
    base = page_url
    if p.base:
        base = canon.resolve(page_url, p.base) or page_url
    out = []
    for h in p.hrefs:
        u = canon.resolve(base, h)
        if u:
            out.append(u)
    return out


def _is_html(fs_path):
    return fs_path.endswith((".html", ".htm"))


def known_set(root, base, disallow=(), redirects=None):
    """BFS from base + "/"; returns the set of canonical page URLs.

    redirects maps a canonical path ("/old/a.html") to a target URL."""
    redirects = dict(redirects or {})
    start = canon.canonical(base.rstrip("/") + "/")
    org = canon.origin(start)
    root = os.path.realpath(root)
    seen = {start}
    pages = set()
    todo = deque([start])
    while todo:
        url = todo.popleft()
        if canon.is_disallowed(url, disallow):
            continue
        path = urlsplit(url).path
        nxt = []
        if path in redirects:
            nxt.append(canon.canonical(redirects[path]))
        else:
            rel = unquote(path)
            fs = os.path.join(root, rel.lstrip("/"))
            if rel.endswith("/"):
                fs = os.path.join(fs, "index.html")
            elif os.path.isdir(fs):
                nxt.append(canon.canonical(org + path + "/"))
                fs = None
            if fs and os.path.isfile(fs):
                pages.add(url)
                if _is_html(fs):
                    with open(fs, "r", encoding="utf-8", errors="replace") as f:
                        nxt.extend(page_links(url, f.read()))
        for u in nxt:
            if u and u not in seen and canon.origin(u) == org:
                seen.add(u)
                todo.append(u)
    return pages


def main():
    ap = argparse.ArgumentParser(description="known set of a static site by BFS over its files")
    ap.add_argument("root")
    ap.add_argument("base")
    ap.add_argument("--robots", help="robots.txt whose '*' Disallow lines apply")
    ap.add_argument("--redirect", action="append", default=[], help="SRC_PATH=TARGET_URL")
    ap.add_argument("--out")
    a = ap.parse_args()
    dis = []
    if a.robots:
        with open(a.robots, encoding="utf-8") as f:
            dis = canon.robots_disallows(f.read())
    red = dict(r.split("=", 1) for r in a.redirect)
    pages = known_set(a.root, a.base, dis, red)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            for u in sorted(pages):
                f.write(u + "\n")
    print(len(pages))


if __name__ == "__main__":
    main()
