"""URL canonicalization shared by the site generator, the known-set BFS and
the access-log parser of the peer crawl benchmark (bench/bench_crawl.sh).

One set of rules, used everywhere a URL is compared:
  - lowercase scheme and host, drop the default port (80 http, 443 https);
  - decode percent-escapes of unreserved characters (ALPHA DIGIT - . _ ~),
    uppercase the hex digits of every other escape (path and query);
  - remove dot segments (RFC 3986 5.2.4); "/" for an empty path;
  - drop the fragment; drop an empty query ("?" alone);
  - sort query parameters by name (stable: equal names keep their order).
Python 3 standard library only. `python3 canon.py` checks the rules.
"""

import re
from urllib.parse import urljoin, urlsplit

_UNRESERVED = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESC = re.compile(r"%([0-9A-Fa-f]{2})")
_DEFAULT_PORT = {"http": 80, "https": 443}


def _fix_escapes(s):
    """Decode escapes of unreserved characters, uppercase the others."""
    def one(m):
        c = int(m.group(1), 16)
        if c in _UNRESERVED:
            return chr(c)
        return "%" + m.group(1).upper()
    return _ESC.sub(one, s)


def remove_dot_segments(path):
    """RFC 3986 section 5.2.4, on an absolute path."""
    out = []
    inp = path
    while inp:
        if inp.startswith("../"):
            inp = inp[3:]
        elif inp.startswith("./"):
            inp = inp[2:]
        elif inp.startswith("/./"):
            inp = inp[2:]
        elif inp == "/.":
            inp = "/"
        elif inp.startswith("/../"):
            inp = inp[3:]
            if out:
                out.pop()
        elif inp == "/..":
            inp = "/"
            if out:
                out.pop()
        elif inp in (".", ".."):
            inp = ""
        else:
            start = 1 if inp.startswith("/") else 0
            j = inp.find("/", start)
            if j < 0:
                j = len(inp)
            out.append(inp[:j])
            inp = inp[j:]
    return "".join(out)


def _sort_query(q):
    params = q.split("&")
    return "&".join(sorted(params, key=lambda p: p.split("=", 1)[0]))


def canonical(url):
    """Canonical form of an absolute http(s) URL; None if it is not one."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORT or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = "[" + host + "]"
    try:
        port = parts.port
    except ValueError:
        return None
    netloc = host if port in (None, _DEFAULT_PORT[scheme]) else "%s:%d" % (host, port)
    path = remove_dot_segments(_fix_escapes(parts.path)) or "/"
    if not path.startswith("/"):
        path = "/" + path
    query = _fix_escapes(parts.query)
    out = "%s://%s%s" % (scheme, netloc, path)
    if query:
        out += "?" + _sort_query(query)
    return out


def resolve(base, href):
    """Canonical form of href found on the page at base; None if unusable."""
    href = href.strip()
    if not href or href.lower().startswith(("javascript:", "mailto:", "data:", "tel:")):
        return None
    try:
        return canonical(urljoin(base, href))
    except ValueError:
        return None


def origin(url):
    """scheme://host[:port] of a canonical URL."""
    p = urlsplit(url)
    return "%s://%s" % (p.scheme, p.netloc)


def path_and_query(url):
    """The request-target of a canonical URL ("/a/b?x=1")."""
    p = urlsplit(url)
    return p.path + ("?" + p.query if p.query else "")


def robots_disallows(robots_text, agent="*"):
    """Disallow prefixes of the group for agent (or *) in a simple robots.txt.

    Enough for the bench's own robots.txt files: groups of User-agent lines
    followed by Allow/Disallow lines; no wildcards."""
    groups = []
    agents, rules, in_rules = [], [], False
    for line in robots_text.splitlines():
        line = line.split("#", 1)[0].strip()
        if ":" not in line:
            continue
        k, v = line.split(":", 1)
        k, v = k.strip().lower(), v.strip()
        if k == "user-agent":
            if in_rules:
                groups.append((agents, rules))
                agents, rules, in_rules = [], [], False
            agents.append(v.lower())
        elif k in ("allow", "disallow"):
            in_rules = True
            if k == "disallow" and v:
                rules.append(_fix_escapes(v))
    groups.append((agents, rules))
    for want in (agent.lower(), "*"):
        for a, r in groups:
            if want in a:
                return r
    return []


def is_disallowed(url, prefixes):
    pq = path_and_query(url)
    return any(pq.startswith(p) for p in prefixes)


def _selftest():
    """python3 canon.py: checks every rule above on one example each."""
    cases = [
        ("HTTP://Example.COM:80/a", "http://example.com/a"),
        ("https://h:443", "https://h/"),
        ("http://h:8080/a/./b/../c", "http://h:8080/a/c"),
        ("http://h/s1/%70%35%2ehtml", "http://h/s1/p5.html"),
        ("http://h/a%2fb%3a", "http://h/a%2Fb%3A"),
        ("http://h/p.html#top", "http://h/p.html"),
        ("http://h/p.html?", "http://h/p.html"),
        ("http://h/l?b=2&a=1&a=0", "http://h/l?a=1&a=0&b=2"),
        ("http://h/%7euser/%2D", "http://h/~user/-"),
        ("ftp://h/x", None),
    ]
    bad = 0
    for url, want in cases:
        got = canonical(url)
        if got != want:
            print("canon: %s -> %s, want %s" % (url, got, want))
            bad += 1
    rel = [("http://h/s1/p1.html", "../s2/x/../p2.html?#a", "http://h/s2/p2.html"),
           ("http://h/s1/p1.html", "//h/s3/p3.html", "http://h/s3/p3.html"),
           ("http://h/s1/", "./p4.html", "http://h/s1/p4.html")]
    for base, href, want in rel:
        if resolve(base, href) != want:
            print("resolve: %s + %s -> %s, want %s" % (base, href, resolve(base, href), want))
            bad += 1
    dis = robots_disallows("User-agent: *\nDisallow: /private/\n")
    if not is_disallowed(canonical("http://h/%70rivate/p3.html"), dis) or is_disallowed("http://h/p", dis):
        print("robots: /%70rivate/ must be disallowed, /p allowed")
        bad += 1
    total = len(cases) + len(rel) + 1
    print("%d passed, %d failed" % (total - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(_selftest())
