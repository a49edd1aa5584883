"""Reads one crawl run's nginx access log (the bench's tab-separated
"bench" format: $msec $status $body_bytes_sent $request_method
$request_uri $server_protocol $http_user_agent) and computes the figures
every crawler is judged by, with canon.py's rules:

  requests       every request in the log, robots.txt included
  robots         requests for /robots.txt (not counted as pages below)
  page_requests  requests - robots
  distinct       distinct canonical URLs answered 200
  known_fetched  distinct URLs that are in the known set
  missed         known URLs never answered 200
  extra          distinct URLs answered 200 that are not in the known set
  dup_exact      page requests repeating an earlier request string byte for byte
  dup_canon      distinct request strings whose canonical URL was already
                 requested under another string
                 (dup_exact + dup_canon = page_requests - distinct canonical URLs requested)
  disallowed     requests whose canonical path is under a robots.txt Disallow
  not_found      requests answered 404
  redirects      requests answered 301/302/303/307/308
  head           HEAD requests
  bytes          body bytes sent

usage: parselog.py LOG ORIGIN [--known FILE] [--robots FILE] [--show dup|dupcanon|missed|disallowed]
"""

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import canon  # noqa: E402

_HEX = re.compile(r"\\x([0-9A-Fa-f]{2})")


def _unescape(s):
    # nginx writes ", \ and bytes outside 0x20..0x7e as \xHH
    return _HEX.sub(lambda m: chr(int(m.group(1), 16)), s)


def read_log(path):
    """Yield dicts: msec, status, bytes, method, uri, proto, ua."""
    with open(path, encoding="latin-1") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 7:
                continue
            yield {"msec": float(parts[0]), "status": int(parts[1]), "bytes": int(parts[2] or 0),
                   "method": parts[3], "uri": _unescape(parts[4]), "proto": parts[5],
                   "ua": _unescape(parts[6])}


def analyse(log_path, origin, known=None, disallow=(), show=None):
    """Figures of one run (a dict); show names a list to return too."""
    reqs = list(read_log(log_path))
    f = dict.fromkeys(("requests", "robots", "page_requests", "distinct", "known_fetched",
                       "missed", "extra", "dup_exact", "dup_canon", "disallowed",
                       "not_found", "redirects", "head", "bytes"), 0)
    raw_seen = set()
    canon_of_raw = {}
    ok = set()
    lists = {"dup": [], "dupcanon": [], "disallowed": [], "missed": []}
    uas = {}
    for r in reqs:
        f["requests"] += 1
        f["bytes"] += r["bytes"]
        uas[r["ua"]] = uas.get(r["ua"], 0) + 1
        if r["method"] == "HEAD":
            f["head"] += 1
        if r["uri"].split("?", 1)[0] == "/robots.txt":
            f["robots"] += 1
            continue
        f["page_requests"] += 1
        key = (r["method"], r["uri"])
        u = canon.canonical(origin + r["uri"]) if r["uri"].startswith("/") else canon.canonical(r["uri"])
        if key in raw_seen:
            f["dup_exact"] += 1
            lists["dup"].append(r["uri"])
        else:
            raw_seen.add(key)
            canon_of_raw[key] = u
        if u and canon.is_disallowed(u, disallow):
            f["disallowed"] += 1
            lists["disallowed"].append(r["uri"])
        if r["status"] == 404:
            f["not_found"] += 1
        elif r["status"] in (301, 302, 303, 307, 308):
            f["redirects"] += 1
        elif r["status"] == 200 and u:
            ok.add(u)
    by_canon = {}
    for key, u in canon_of_raw.items():
        by_canon.setdefault((key[0], u), []).append(key[1])
    for (_, u), raws in by_canon.items():
        if len(raws) > 1:
            f["dup_canon"] += len(raws) - 1
            lists["dupcanon"].append(" | ".join(raws))
    f["distinct"] = len(ok)
    if known is not None:
        f["known_fetched"] = len(ok & known)
        miss = known - ok
        f["missed"] = len(miss)
        f["extra"] = len(ok - known)
        lists["missed"] = sorted(miss)
    else:
        f["known_fetched"] = f["missed"] = f["extra"] = None
    f["user_agents"] = uas
    return (f, lists.get(show, [])) if show else f


def load_known(path):
    with open(path, encoding="utf-8") as fh:
        return {line.strip() for line in fh if line.strip()}


def main():
    ap = argparse.ArgumentParser(description="figures of one crawl run from its access log")
    ap.add_argument("log")
    ap.add_argument("origin", help="http://127.0.0.1:PORT")
    ap.add_argument("--known")
    ap.add_argument("--robots", help="robots.txt whose '*' Disallow lines apply")
    ap.add_argument("--show", choices=("dup", "dupcanon", "missed", "disallowed"))
    a = ap.parse_args()
    dis = []
    if a.robots:
        with open(a.robots, encoding="utf-8") as fh:
            dis = canon.robots_disallows(fh.read())
    known = load_known(a.known) if a.known else None
    if a.show:
        f, items = analyse(a.log, a.origin, known, dis, a.show)
        for x in items:
            print(x)
    else:
        print(json.dumps(analyse(a.log, a.origin, known, dis), indent=1))


if __name__ == "__main__":
    main()
