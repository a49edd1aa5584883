"""URL canonicalization shared by the site generator, the known-set BFS and
the access-log parser of the peer crawl benchmark (bench/bench_crawl.sh).

One set of rules, used everywhere a URL is compared:
  - lowercase scheme and host, drop the default port (80 http, 443 https);
  - decode percent-escapes of unreserved characters (ALPHA DIGIT - . _ ~),
    uppercase the hex digits of every other escape (path and query);
  - remove dot segments (RFC 3986 5.2.4); "/" for an empty path;
  - drop the fragment; drop an empty query ("?" alone);
  - sort query parameters by name (stable: equal names keep their order).
Python 3 standard library only.
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
