"""The re-crawl benchmark: the generated 20,000-page site of bench-crawl
(bench/crawl-peers/gensite.py) served by nginx on 127.0.0.1 (nginx sends
ETag and Last-Modified on static files and answers conditional requests
with 304 by itself), crawled once and then again, unchanged, on the same
state / output folder, by crawld (recrawl.after_s = 1: everything is due),
`wget -N`, `wget -N --no-if-modified-since` (wget-head: a 304 on the start
page stops plain `wget -N` from descending), `wget2 -N` and `httrack
--update`. Every crawl gets a fresh
nginx with its own access log ($bytes_sent: bytes on the wire, headers
included) and runs under /usr/bin/time -v. Rounds interleave the crawlers;
the table shows medians.

Environment: RECRAWL_RUNS (rounds, default 3), RECRAWL_PAGES (20000),
RECRAWL_PORT (18421), RECRAWL_ONLY (crawld,wget,wget-head,wget2,httrack),
RECRAWL_TIMEOUT (s per crawl, 900), B / BIN (build and bin folders).
"""

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(os.path.dirname(HERE), "crawl-peers")
ALL = ["crawld", "wget", "wget-head", "wget2", "httrack"]

sys.path.insert(0, PEERS)
import nginxrun  # noqa: E402

NGINX_SERVER = """    log_format rc '$status\\t$bytes_sent\\t$request_method\\t$request_uri';
    access_log {log} rc;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        index index.html;
        include {inc};
    }}
"""


def say(msg):
    sys.stderr.write("[bench-recrawl] %s\n" % msg)
    sys.stderr.flush()


def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


class Nginx:
    """A fresh nginx in its own folder under tmp, serving root on port."""

    def __init__(self, tmp, port, root, inc, log):
        self.dir = tempfile.mkdtemp(prefix="nginx.", dir=tmp)
        os.chmod(self.dir, 0o755)
        text = nginxrun.conf("bench/recrawl/run.py", self.dir, " text/html html; text/plain txt; ",
                             NGINX_SERVER.format(port=port, root=root, inc=inc, log=log))
        self.nginx = nginxrun.Nginx(self.dir, text, (port,))

    def stop(self):
        self.nginx.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def commands(name, url, work, cfg):
    """The (first, second) crawl argv of a crawler, or a reason string."""
    out = os.path.join(work, "out")
    if name == "crawld":
        crawld = os.path.join(cfg["bin"], "crawld")
        if not os.access(crawld, os.X_OK):
            return "%s not built" % crawld
        with open(os.path.join(PEERS, "crawld.toml.in")) as f:
            text = f.read()
        conf = os.path.join(work, "crawld.toml")
        with open(conf, "w") as f:
            f.write(text.replace("@SEED@", url).replace("@STATE@", os.path.join(work, "state")))
            f.write("\n# the re-crawl bench: every page is due a second after its fetch\n"
                    "recrawl.after_s = 1\n")
        argv = [crawld, "run", "-c", conf]
        return argv, argv
    if name == "wget":
        if not shutil.which("wget"):
            return "wget not installed"
        argv = ["wget", "-r", "-l", "inf", "--no-parent", "-N", "-e", "robots=on", "-q", "-P", out, url]
        return argv, argv
    if name == "wget-head":
        # wget -N answered 304 for the start page does not descend (it keeps
        # the local copy unparsed): with --no-if-modified-since it asks HEAD
        # for each page, compares the dates and recurses through its files
        if not shutil.which("wget"):
            return "wget not installed"
        argv = ["wget", "-r", "-l", "inf", "--no-parent", "-N", "--no-if-modified-since", "-e",
                "robots=on", "-q", "-P", out, url]
        return argv, argv
    if name == "wget2":
        if not shutil.which("wget2"):
            return "wget2 not installed"
        argv = ["wget2", "-r", "-l", "0", "--robots=on", "--no-parent", "-N", "-q", "-P", out, url]
        return argv, argv
    if name == "httrack":
        if not shutil.which("httrack"):
            return "httrack not installed (apt-get install httrack)"
        common = ["-w", "-r9999", "-%e0", "-a", "-s2", "-%!", "-c16", "-%c0", "-A1000000000",
                  "-%k", "-p0", "-I0", "-%P0", "-q", "-Q", "-%v0", "-E%d" % cfg["timeout"]]
        first = ["httrack", url, "-O", out] + common
        second = ["httrack", url, "-O", out, "--update"] + common
        return first, second
    return "unknown crawler"


def parse_log(path):
    reqs = wire = n304 = 0
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            reqs += 1
            wire += int(parts[1])
            n304 += parts[0] == "304"
    return {"requests": reqs, "bytes": wire, "n304": n304}


def one_crawl(argv, work, tmp, cfg, tag):
    log = os.path.join(work, "access-%s.log" % tag)
    open(log, "w").close()
    os.chmod(log, 0o666)
    ng = Nginx(tmp, cfg["port"], cfg["root"], cfg["inc"], log)
    tv = os.path.join(work, "time-%s.txt" % tag)
    try:
        r = subprocess.run(["/usr/bin/time", "-v", "-o", tv, "timeout", "-k", "10", str(cfg["timeout"])]
                           + argv, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    finally:
        ng.stop()
    row = parse_log(log)
    row.update(nginxrun.parse_time_v(tv))
    row["cpu"] = row.get("user", 0.0) + row.get("sys", 0.0)
    row["rc"] = r.returncode
    if r.returncode not in (0, 8):
        row["note"] = "exit %d: %s" % (r.returncode, r.stderr.decode(errors="replace")[-200:].strip())
    return row


def main():
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    root = os.environ.get("CRAWLD_ROOT", os.path.dirname(os.path.dirname(HERE)))
    cfg = {
        "bin": os.path.join(root, os.environ.get("BIN", "bin")),
        "port": env_int("RECRAWL_PORT", 18421),
        "timeout": env_int("RECRAWL_TIMEOUT", 900),
    }
    runs = env_int("RECRAWL_RUNS", 3)
    pages = env_int("RECRAWL_PAGES", 20000)
    only = [c for c in os.environ.get("RECRAWL_ONLY", ",".join(ALL)).split(",") if c]
    tmp = tempfile.mkdtemp(prefix="bench-recrawl.")
    os.chmod(tmp, 0o755)
    rows = {c: [] for c in only}
    notes = {}
    try:
        gen = os.path.join(tmp, "gen")
        say("generating the %d-page site ..." % pages)
        subprocess.run([sys.executable, os.path.join(PEERS, "gensite.py"), gen, "--port",
                        str(cfg["port"]), "--pages", str(pages), "--seed", "1"], check=True,
                       stdout=subprocess.DEVNULL)
        cfg["root"] = os.path.join(gen, "site")
        cfg["inc"] = os.path.join(gen, "nginx.inc")
        url = "http://127.0.0.1:%d/" % cfg["port"]
        for rnd in range(1, runs + 1):
            for name in only:
                work = tempfile.mkdtemp(prefix=name + ".", dir=tmp)
                os.chmod(work, 0o777)
                cmd = commands(name, url, work, cfg)
                if isinstance(cmd, str):
                    notes[name] = cmd
                    continue
                say("round %d/%d: %s, first crawl ..." % (rnd, runs, name))
                first = one_crawl(cmd[0], work, tmp, cfg, "1")
                time.sleep(1.2)  # crawld: every page due again; the others do not care
                say("round %d/%d: %s, second crawl (nothing changed) ..." % (rnd, runs, name))
                second = one_crawl(cmd[1], work, tmp, cfg, "2")
                rows[name].append((first, second))
                for r in (first, second):
                    if "note" in r:
                        notes[name] = r["note"]
                shutil.rmtree(work, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(name, which, key):
        v = [r[which].get(key, 0) for r in rows[name]]
        return statistics.median(v) if v else None

    print("Re-crawl of the unchanged %d-page generated site (nginx: ETag, Last-Modified, 304);"
          " medians of %d round(s)." % (pages, runs))
    print()
    print("| crawler | 1st: requests | 1st: bytes | 1st: CPU s | 2nd: requests | 2nd: 304s |"
          " 2nd: bytes | 2nd: wall s | 2nd: CPU s | bytes 2nd/1st | CPU 2nd/1st |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    have = [n for n in only if rows[n]]
    for n in have:
        b1, b2 = med(n, 0, "bytes"), med(n, 1, "bytes")
        c1, c2 = med(n, 0, "cpu"), med(n, 1, "cpu")
        print("| %s | %d | %d | %.2f | %d | %d | %d | %.2f | %.2f | %.3f | %.2f |" % (
            n, med(n, 0, "requests"), b1, c1, med(n, 1, "requests"), med(n, 1, "n304"), b2,
            med(n, 1, "wall"), c2, b2 / b1 if b1 else float("nan"), c2 / c1 if c1 else float("nan")))
    for n in only:
        if not rows[n]:
            print("| %s | n/a: %s |" % (n, notes.get(n, "not run")))
    if "crawld" in have:
        print()
        print("crawld's second crawl against each peer's (ratio < 1: crawld used less):")
        print()
        print("| peer | bytes crawld/peer | CPU crawld/peer | requests crawld/peer | wall crawld/peer |")
        print("|---|---|---|---|---|")
        for n in have:
            if n == "crawld":
                continue
            def ratio(key):
                a, b = med("crawld", 1, key), med(n, 1, key)
                return "%.3f" % (a / b) if b else "n/a"
            print("| %s | %s | %s | %s | %s |" % (n, ratio("bytes"), ratio("cpu"), ratio("requests"),
                                                 ratio("wall")))
        b1, b2 = med("crawld", 0, "bytes"), med("crawld", 1, "bytes")
        c1, c2 = med("crawld", 0, "cpu"), med("crawld", 1, "cpu")
        goals = [("2nd-crawl bytes <= 5% of the first", b1 and b2 <= 0.05 * b1),
                 ("2nd-crawl CPU <= 0.5x the first", c1 and c2 <= 0.5 * c1)]
        for n in have:
            if n != "crawld":
                goals.append(("fewer bytes and less CPU than %s" % n,
                              b2 < med(n, 1, "bytes") and c2 < med(n, 1, "cpu")))
        print()
        for g, ok in goals:
            print("- goal: %s: %s" % (g, "met" if ok else "NOT met"))
    for n, why in notes.items():
        print("- note: %s: %s" % (n, why))
    return 0


if __name__ == "__main__":
    sys.exit(main())
