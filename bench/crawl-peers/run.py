"""The peer crawl benchmark: crawld against wget, wget2, HTTrack, Scrapy and
Crawlee on two local sites served by nginx on 127.0.0.1, judged by one
parser over the server's access log. Called by bench/bench_crawl.sh (which
installs the tools); see README.md there for what is measured.

Environment (all optional):
  CRAWL_RUNS=3            rounds; each round runs every crawler once
  CRAWL_SITES=doc,gen,jdk which sites (doc: Debian's python3-doc HTML,
                          gen: the generated site, jdk: Debian's
                          openjdk-17-doc API documentation)
  CRAWL_ONLY=a,b          crawlers to run (default all:
                          crawld,wget,wget2,httrack,scrapy,crawlee)
  CRAWL_PORT_DOC=18401    CRAWL_PORT_GEN=18402    CRAWL_PORT_JDK=18403
  CRAWL_PAGES=20000       CRAWL_SEED=1 (generated site)
  CRAWL_HTTRACK_CAP=300   HTTrack's own wall-clock cap, seconds (-E)
  CRAWL_TIMEOUT=900       hard wall-clock cap of any one run, seconds
  CRAWL_RESULTS=DIR       where results go (default $B/bench-crawl)
  CRAWL_KEEP=1            keep the temp folder (logs, site) for inspection
  B, BIN                  build and bin folders (as bench/run.sh sets them)
"""

import csv
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import known  # noqa: E402
import nginxrun  # noqa: E402
import parselog  # noqa: E402

ALL = ["crawld", "wget", "wget2", "httrack", "scrapy", "crawlee"]
DOC_ROOT = "/usr/share/doc/python3/html"
# openjdk-17-doc's API docs (the package links /usr/share/doc/openjdk-17-doc/api
# here): ~10,000 HTML pages, 270 MB, pages up to 6 MB.
JDK_ROOT = "/usr/share/doc/openjdk-17-jre-headless/api"
PY = "/usr/bin/python3"


def env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        sys.exit("bench_crawl: %s must be an integer" % name)


def say(msg):
    sys.stderr.write("[bench-crawl %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


class Stop(Exception):
    pass


def _on_signal(signum, frame):
    raise Stop("signal %d" % signum)


# ---------------------------------------------------------------- nginx

NGINX_TYPES = """
        text/html html htm; text/css css; application/javascript js;
        image/png png; image/gif gif; image/jpeg jpg jpeg; image/svg+xml svg;
        image/x-icon ico; application/json json; application/xml xml;
        text/plain txt py rst inv buildinfo; application/gzip gz;
        application/pdf pdf; application/zip zip;
    """

NGINX_SERVERS = """    log_format bench '$msec\\t$status\\t$body_bytes_sent\\t$request_method\\t$request_uri\\t$server_protocol\\t$http_user_agent';
    access_log off;
    server {{
        listen 127.0.0.1:{port_doc};
        server_name doc;
        root {doc_root};
        index index.html;
        access_log {log_doc} bench;
        location = /robots.txt {{ default_type text/plain; return 200 "User-agent: *\\nAllow: /\\n"; }}
    }}
    server {{
        listen 127.0.0.1:{port_gen};
        server_name gen;
        root {gen_root};
        index index.html;
        access_log {log_gen} bench;
        include {gen_inc};
    }}
    server {{
        listen 127.0.0.1:{port_jdk};
        server_name jdk;
        root {jdk_root};
        index index.html;
        access_log {log_jdk} bench;
        location = /robots.txt {{ default_type text/plain; return 200 "User-agent: *\\nAllow: /\\n"; }}
    }}
"""


def Nginx(tmp, cfg, logs):
    """One nginx master serving the three sites, logging to the given files."""
    folder = os.path.join(tmp, "nginx")
    os.makedirs(folder, exist_ok=True)
    body = NGINX_SERVERS.format(log_doc=logs["doc"], log_gen=logs["gen"], log_jdk=logs["jdk"], **cfg)
    text = nginxrun.conf("bench/crawl-peers/run.py; one nginx per crawl run", folder,
                         NGINX_TYPES, body)
    return nginxrun.Nginx(folder, text, (cfg["port_doc"], cfg["port_gen"], cfg["port_jdk"]))


# ---------------------------------------------------------------- crawlers

def crawler_cmd(name, url, work, cfg):
    """(argv, env additions, exit codes that mean 'finished') or a reason string."""
    if name == "crawld":
        crawld = os.path.join(cfg["bin"], "crawld")
        if not os.access(crawld, os.X_OK):
            return "%s not built" % crawld
        with open(os.path.join(HERE, "crawld.toml.in")) as f:
            text = f.read()
        conf = os.path.join(work, "crawld.toml")
        with open(conf, "w") as f:
            f.write(text.replace("@SEED@", url).replace("@STATE@", os.path.join(work, "state")))
        return [crawld, "run", "-c", conf], {}, (0,)
    if name == "wget":
        if not shutil.which("wget"):
            return "wget not installed"
        return ["wget", "-r", "-l", "inf", "--no-parent", "--delete-after", "-nd", "-e", "robots=on",
                "-q", "-P", os.path.join(work, "out"), url], {}, (0, 8)
    if name == "wget2":
        if not shutil.which("wget2"):
            return "wget2 not installed"
        return ["wget2", "-r", "-l", "0", "--robots=on", "--no-parent", "--delete-after", "-nd",
                "-q", "-P", os.path.join(work, "out"), url], {}, (0, 8)
    if name == "httrack":
        if not shutil.which("httrack"):
            return "httrack not installed"
        return ["httrack", url, "-O", os.path.join(work, "out"), "-w", "-r9999", "-%e0", "-a", "-s2",
                "-%!", "-c16", "-%c0", "-A1000000000", "-%k", "-p0", "-C0", "-I0",
                "-%P0", "-q", "-Q", "-%v0", "-E%d" % cfg["httrack_cap"]], {}, (0,)
    if name == "scrapy":
        if not os.path.exists("/usr/bin/scrapy"):
            return "scrapy not installed (apt-get install python3-scrapy)"
        return ["/usr/bin/scrapy", "runspider", os.path.join(HERE, "spider.py"), "-a", "start=" + url,
                "--nolog"], {"SCRAPY_SETTINGS_MODULE": ""}, (0,)
    if name == "crawlee":
        script = os.path.join(HERE, "crawlee", "crawl.mjs")
        if not shutil.which("node"):
            return "node not installed"
        if not os.path.isdir(os.path.join(HERE, "crawlee", "node_modules", "@crawlee", "cheerio")):
            return "crawlee not installed (npm ci in bench/crawl-peers/crawlee)"
        return ["node", script, url], {"CRAWLEE_STORAGE_DIR": os.path.join(work, "storage"),
                                       "CRAWLEE_PURGE_ON_START": "1"}, (0,)
    return "unknown crawler"


def _children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    st = f.read()
            except OSError:
                continue
            if int(st.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d))
    return out


def kill_tree(pid):
    """SIGKILL pid and every descendant, and the process groups they lead
    (timeout puts the crawler in a group of its own), never our own group."""
    tree, todo = [], [pid]
    while todo:
        x = todo.pop()
        tree.append(x)
        todo.extend(_children(x))
    groups = set()
    for x in tree:
        try:
            groups.add(os.getpgid(x))
        except OSError:
            pass
    groups.discard(os.getpgrp())
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass
    for x in tree:
        try:
            os.kill(x, signal.SIGKILL)
        except OSError:
            pass


def run_one(name, site, rnd, cfg, tmp):
    """One crawl: fresh nginx, the crawler under time -v, the log parsed."""
    tag = "%s-%s-%d" % (site["name"], name, rnd)
    work = tempfile.mkdtemp(prefix=tag + ".", dir=tmp)
    os.chmod(work, 0o755)
    cmd = crawler_cmd(name, site["url"], work, cfg)
    row = {"site": site["name"], "crawler": name, "round": rnd, "status": "ok", "note": ""}
    if isinstance(cmd, str):
        row.update(status="n/a", note=cmd)
        return row, None
    argv, extra_env, ok_codes = cmd
    logs = {s: os.path.join(tmp, "logs", "%s-%s-%d.log" % (s, name, rnd)) for s in ("doc", "gen", "jdk")}
    os.makedirs(os.path.join(tmp, "logs"), exist_ok=True)
    env = dict(os.environ)
    env.update(extra_env)
    if not env.get("SCRAPY_SETTINGS_MODULE"):
        env.pop("SCRAPY_SETTINGS_MODULE", None)
    tfile = os.path.join(work, "time.txt")
    nginx = Nginx(tmp, cfg, logs)
    try:
        t0 = time.monotonic()
        with open(os.path.join(work, "stdout"), "wb") as so, open(os.path.join(work, "stderr"), "wb") as se:
            p = subprocess.Popen(["/usr/bin/time", "-v", "-o", tfile, "timeout", "-k", "10",
                                  str(cfg["timeout"])] + argv,
                                 cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=so, stderr=se,
                                 start_new_session=True)
            try:
                rc = p.wait()
            except BaseException:
                kill_tree(p.pid)
                p.wait()
                raise
        wall_py = time.monotonic() - t0
    finally:
        nginx.stop()
    tv = nginxrun.parse_time_v(tfile)
    row["exit"] = rc
    row["wall"] = tv.get("wall", wall_py)
    row["cpu"] = tv.get("user", 0.0) + tv.get("sys", 0.0)
    row["rss_mib"] = tv.get("rss_mib", 0.0)
    try:
        with open(os.path.join(work, "stderr"), errors="replace") as f:
            err_tail = f.read()[-300:].strip().replace("\n", " / ")
    except OSError:
        err_tail = ""
    if rc == 124 or rc == 137:
        row.update(status="capped", note="killed at the %d s cap (CRAWL_TIMEOUT)" % cfg["timeout"])
    elif name == "httrack" and row["wall"] >= cfg["httrack_cap"] - 2:
        row.update(status="capped", note="stopped by its own %d s cap (-E)" % cfg["httrack_cap"])
    elif rc not in ok_codes:
        row.update(status="failed", note="exit %d: %s" % (rc, err_tail[:200]))
    figs = parselog.analyse(logs[site["name"]], site["origin"], site["known"], site["disallow"])
    uas = figs.pop("user_agents")
    row["user_agent"] = max(uas, key=uas.get) if uas else ""
    row.update(figs)
    if figs["requests"] == 0 and row["status"] == "ok":
        row.update(status="failed", note="no request reached the server; " + err_tail[:200])
    d = figs["distinct"]
    row["pages_per_s"] = d / row["wall"] if row["wall"] > 0 else 0.0
    row["cpu_ms_per_page"] = 1000.0 * row["cpu"] / d if d else None
    if not cfg["keep"]:
        shutil.rmtree(work, ignore_errors=True)
    return row, [a.replace(work, "$WORK") for a in argv]


# ---------------------------------------------------------------- report

# (key, header, format, better: "low" | "high" | None for no ratio)
COLUMNS = [
    ("wall", "wall s", "%.1f", "low"),
    ("pages_per_s", "pages/s", "%.0f", "high"),
    ("cpu", "CPU s", "%.1f", "low"),
    ("cpu_ms_per_page", "CPU ms/page", "%.2f", "low"),
    ("rss_mib", "peak RSS MiB", "%.0f", "low"),
    ("page_requests", "requests", "%d", None),
    ("robots", "robots.txt", "%d", None),
    ("distinct", "distinct 200", "%d", "high"),
    ("missed", "missed", "%d", "low"),
    ("extra", "200 outside known", "%d", None),
    ("dup_exact", "dup exact", "%d", "low"),
    ("dup_canon", "dup canon", "%d", "low"),
    ("disallowed", "disallowed", "%d", "low"),
    ("not_found", "404s", "%d", None),
]


def median_rows(rows):
    """Per crawler: median of each figure over its usable runs."""
    out = {}
    for name in ALL:
        mine = [r for r in rows if r["crawler"] == name]
        if not mine:
            continue
        usable = [r for r in mine if r["status"] in ("ok", "capped")]
        m = {"crawler": name, "runs": len(usable), "of": len(mine)}
        if not usable:
            m["na"] = "; ".join(sorted({r["note"] for r in mine}))
        else:
            for key, _, _, _ in COLUMNS:
                vals = [r[key] for r in usable if r.get(key) is not None]
                m[key] = statistics.median(vals) if vals else None
            capped = [r for r in usable if r["status"] == "capped"]
            if capped:
                m["capped"] = capped[0]["note"]
            bad = [r for r in mine if r["status"] not in ("ok", "capped")]
            if bad:
                m["partial"] = "%d of %d runs failed: %s" % (len(bad), len(mine), bad[0]["note"])
        out[name] = m
    return out


def fmt_ratio(v, best, better):
    if v is None or best is None:
        return ""
    if better == "low":
        if best == 0:
            return "" if v == 0 else " (best 0)"
        return " (x%.2f)" % (v / best)
    if v == 0:
        return " (x0)"
    return " (x%.2f)" % (best / v) if better == "high" else ""


def table(site, meds):
    """Markdown table; ratios against the best peer (every crawler but crawld).

    For 'low is better' figures the ratio is value / best, for 'high is
    better' ones (pages/s, distinct) best / value: above 1 is worse."""
    peers = [m for n, m in meds.items() if n != "crawld" and "na" not in m and "capped" not in m]
    lines = ["| crawler | " + " | ".join(c[1] for c in COLUMNS) + " |",
             "|---|" + "---:|" * len(COLUMNS)]
    best = {}
    for key, _, _, better in COLUMNS:
        vals = [m[key] for m in peers if m.get(key) is not None]
        if better and vals:
            best[key] = min(vals) if better == "low" else max(vals)
    notes = []
    for name, m in meds.items():
        label = name
        if "na" in m:
            lines.append("| %s | n/a: %s |%s" % (name, m["na"], " |" * (len(COLUMNS) - 1)))
            continue
        if "capped" in m:
            label += " (CAPPED)"
            notes.append("%s: %s; its figures are for a partial crawl and are not a ratio base." % (name, m["capped"]))
        if "partial" in m:
            notes.append("%s: %s" % (name, m["partial"]))
        cells = []
        for key, _, f, better in COLUMNS:
            v = m.get(key)
            if v is None:
                cells.append("n/a")
                continue
            cells.append((f % v) + fmt_ratio(v, best.get(key), better))
        lines.append("| %s | %s |" % (label, " | ".join(cells)))
    return "\n".join(lines), notes


SITE_TITLES = {"doc": "python3-doc", "gen": "generated", "jdk": "openjdk-17-doc API"}


def main():
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    root = os.environ.get("CRAWLD_ROOT", os.path.dirname(os.path.dirname(HERE)))
    b = os.environ.get("B", "build/default")
    cfg = {
        "bin": os.path.join(root, os.environ.get("BIN", "bin")),
        "port_doc": env_int("CRAWL_PORT_DOC", 18401),
        "port_gen": env_int("CRAWL_PORT_GEN", 18402),
        "port_jdk": env_int("CRAWL_PORT_JDK", 18403),
        "httrack_cap": env_int("CRAWL_HTTRACK_CAP", 300),
        "timeout": env_int("CRAWL_TIMEOUT", 900),
        "keep": os.environ.get("CRAWL_KEEP", "") not in ("", "0"),
        "doc_root": DOC_ROOT,
        "jdk_root": JDK_ROOT,
    }
    runs = env_int("CRAWL_RUNS", 3)
    pages = env_int("CRAWL_PAGES", 20000)
    seed = env_int("CRAWL_SEED", 1)
    sites_wanted = [s for s in os.environ.get("CRAWL_SITES", "doc,gen,jdk").split(",") if s]
    only = [c for c in os.environ.get("CRAWL_ONLY", ",".join(ALL)).split(",") if c]
    for c in only:
        if c not in ALL:
            sys.exit("bench_crawl: unknown crawler %r in CRAWL_ONLY (known: %s)" % (c, ",".join(ALL)))
    crawlers = [c for c in ALL if c in only]
    results_dir = os.environ.get("CRAWL_RESULTS", os.path.join(root, b, "bench-crawl"))
    os.makedirs(results_dir, exist_ok=True)
    for key in ("port_doc", "port_gen", "port_jdk"):
        if not nginxrun.port_free(cfg[key]):
            sys.exit("bench_crawl: port %d is in use; set CRAWL_%s to a free port" % (cfg[key], key.upper()))
    if "doc" in sites_wanted and not os.path.isfile(os.path.join(DOC_ROOT, "index.html")):
        say("%s is missing (apt-get install python3-doc): the doc site is skipped" % DOC_ROOT)
        sites_wanted.remove("doc")
    if "jdk" in sites_wanted and not os.path.isfile(os.path.join(JDK_ROOT, "index.html")):
        say("%s is missing (apt-get install openjdk-17-doc): the jdk site is skipped" % JDK_ROOT)
        sites_wanted.remove("jdk")

    tmp = tempfile.mkdtemp(prefix="bench-crawl.")
    os.chmod(tmp, 0o755)   # nginx workers run as nobody when we are root
    rows, cmds, sites = [], {}, []
    try:
        gen_dir = os.path.join(tmp, "gen")
        cfg["gen_root"] = os.path.join(gen_dir, "site")
        cfg["gen_inc"] = os.path.join(gen_dir, "nginx.inc")
        os.makedirs(cfg["gen_root"], exist_ok=True)
        with open(cfg["gen_inc"], "w") as f:
            f.write("# no generated site\n")
        if "doc" in sites_wanted:
            say("known set of the python3-doc site: BFS over the files from index.html ...")
            origin = "http://127.0.0.1:%d" % cfg["port_doc"]
            ks = known.known_set(DOC_ROOT, origin, [], {})
            sites.append({"name": "doc", "url": origin + "/", "origin": origin, "known": ks,
                          "disallow": [], "how": "BFS over the files on disk from index.html "
                          "(<a>/<area> links, same host, files that exist)"})
            say("python3-doc: %d known pages" % len(ks))
        if "jdk" in sites_wanted:
            say("known set of the openjdk-17-doc API site: BFS over the files from index.html ...")
            origin = "http://127.0.0.1:%d" % cfg["port_jdk"]
            ks = known.known_set(JDK_ROOT, origin, [], {})
            sites.append({"name": "jdk", "url": origin + "/", "origin": origin, "known": ks,
                          "disallow": [], "how": "BFS over the files on disk from index.html "
                          "(<a>/<area> links, same host, files that exist)"})
            say("openjdk-17-doc: %d known pages" % len(ks))
        if "gen" in sites_wanted:
            say("generating the %d-page site (seed %d) ..." % (pages, seed))
            r = subprocess.run([PY, os.path.join(HERE, "gensite.py"), gen_dir, "--port", str(cfg["port_gen"]),
                                "--pages", str(pages), "--seed", str(seed)], capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError("gensite.py failed: " + r.stderr.strip())
            with open(os.path.join(gen_dir, "site.json")) as f:
                meta = json.load(f)
            ks = parselog.load_known(os.path.join(gen_dir, "known.txt"))
            sites.append({"name": "gen", "url": meta["origin"] + "/", "origin": meta["origin"], "known": ks,
                          "disallow": meta["disallow"], "how": "the generator's BFS over its link graph, "
                          "checked against a BFS over the files written (%d files)" % pages})
            say("generated site: %d reachable of %d pages" % (len(ks), pages))
        total = runs * len(sites) * len(crawlers)
        n = 0
        for rnd in range(1, runs + 1):
            for site in sites:
                for name in crawlers:
                    n += 1
                    say("run %d/%d: round %d, %s site, %s ..." % (n, total, rnd, site["name"], name))
                    try:
                        row, argv = run_one(name, site, rnd, cfg, tmp)
                    except (OSError, RuntimeError, ValueError) as e:
                        row, argv = {"site": site["name"], "crawler": name, "round": rnd,
                                     "status": "failed", "note": "bench error: %s" % e}, None
                    if argv:
                        cmds[name] = argv
                    rows.append(row)
                    if "wall" not in row:
                        say("  %s: %s" % (row["status"], row["note"]))
                    else:
                        say("  %s: %.1f s, %d requests, %d distinct 200, %s missed%s" % (
                            row["status"], row["wall"], row["requests"], row["distinct"],
                            row["missed"], (" (%s)" % row["note"]) if row["note"] else ""))
    except Stop as e:
        say("stopped by %s; writing what was measured" % e)
    finally:
        if not cfg["keep"]:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            say("temp folder kept: %s" % tmp)

    stamp = time.strftime("%Y%m%dT%H%M%S")
    jpath = os.path.join(results_dir, "results-%s.json" % stamp)
    cpath = os.path.join(results_dir, "results-%s.csv" % stamp)
    with open(jpath, "w") as f:
        json.dump({"runs": rows, "commands": cmds,
                   "sites": [{k: (len(v) if k == "known" else v) for k, v in s.items()} for s in sites]},
                  f, indent=1)
    keys = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    with open(cpath, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow(r)

    print("Peer crawl benchmark: medians over %d round(s), every crawler once per round, interleaved." % runs)
    print("Ratios (xN) are against the best peer (every crawler but crawld) for that figure; above 1 is worse.")
    print("Figures come from nginx's access log (one log per run), canonicalized by bench/crawl-peers/canon.py.")
    for site in sites:
        meds = median_rows([r for r in rows if r["site"] == site["name"]])
        tab, notes = table(site, meds)
        print()
        print("### %s site: %s, %d known pages (%s)" % (
            SITE_TITLES[site["name"]], site["url"], len(site["known"]), site["how"]))
        print()
        print(tab)
        for x in notes:
            print("- " + x)
    print()
    print("Command lines (URL is the site's root):")
    for name in crawlers:
        if name in cmds:
            print("- %s: `%s`" % (name, " ".join(_q(a) for a in cmds[name])))
    print("- every run: `/usr/bin/time -v timeout -k 10 %d CMD` in a fresh temp folder $WORK, with a fresh nginx;"
          " crawld.toml is bench/crawl-peers/crawld.toml.in with the seed and $WORK/state filled in" % cfg["timeout"])
    print()
    print("Per-run figures: %s and %s" % (jpath, cpath))
    return 0


def _q(a):
    if a and all(c.isalnum() or c in "-_./:=%,@+$" for c in a):
        return a
    return "'" + a.replace("'", "'\\''") + "'"


if __name__ == "__main__":
    sys.exit(main())
