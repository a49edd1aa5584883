/* tests/site/main: the `testsite` command line.
 *
 * Either serves the synthetic web on 127.0.0.1 until SIGTERM/SIGINT, or
 * (--print-expected) prints the set of URLs a correct crawl fetches and
 * exits. The signals are blocked before any thread starts and taken with
 * sigwait() in the main thread, so no handler runs inside the server. */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>


#include "tests/site/epoch.h"
#include "tests/site/expect.h"
#include "tests/site/server.h"
#include "tests/site/site.h"

static const char usage[] =
"usage: testsite [OPTIONS]\n"
"A deterministic synthetic web for crawler tests, on 127.0.0.1 only. Hosts\n"
"a.test, b.test, ... are told apart by the Host header: pin them to\n"
"127.0.0.1:PORT (curl --resolve a.test:PORT:127.0.0.1).\n"
"\n"
"Site (the same options give the same web, byte for byte, given the port):\n"
"  --seed N             generator seed (default 1)\n"
"  --hosts N            virtual hosts a.test, b.test, ... (default 4, max 702)\n"
"  --pages N            regular pages per host (default 5000)\n"
"  --delay-ms N         delay of /slow/ pages (default 2000)\n"
"  --retry-after S      Retry-After seconds of 503 and 429 answers (default 1)\n"
"  --flaky N            /flaky/ answers 503 to the first N requests per host (default 2)\n"
"  --crawl-delay S      Crawl-delay in b.test's robots.txt (default 1)\n"
"  --big-bytes N        size of /big/huge.html and /big/chunked.html (default 12 MiB)\n"
"  --bomb-mib N         decoded MiB of the gzip bomb /big/bomb.html (default 1024)\n"
"  --latency-ms N       hold every answer back N ms after its request arrived,\n"
"                       as a far server would (default 0); other connections\n"
"                       are not held up\n"
"  --no-specials        only regular pages, requisites and robots.txt\n"
"  --sitemaps           a.test serves sitemaps listing pages no page links to\n"
"                       (tests/site/sitemaps.h); the expected set then assumes a\n"
"                       crawler that reads sitemaps (crawl.toml [sitemaps])\n"
"  --sitemap-lastmod T  the <lastmod> /sitemap.xml gives / (W3C Datetime;\n"
"                       default 2026-01-01)\n"
"Server:\n"
"  --port N             port on 127.0.0.1; 0 picks a free one (default 0). The\n"
"                       first line on stdout is \"listening on 127.0.0.1:PORT\"\n"
"  --port-file FILE     also write the port to FILE once listening\n"
"  --log FILE           append one line per request: ms TAB host TAB method TAB\n"
"                       raw target TAB status TAB body bytes\n"
"  --log-timing         log each request once answered, adding TAB start_us TAB\n"
"                       end_us TAB user-agent (Unix epoch microseconds)\n"
"The site over time (re-crawl tests; off without --epoch):\n"
"  --epoch N            serve epoch N: ETag/Last-Modified and 304s; per epoch\n"
"                       --change-pct P % of pages change (default 20), --remove-pct R %\n"
"                       go for good (404/410, default 5), --add-pages K per host\n"
"                       appear as /new/N-J.html linked from / (default 3)\n"
"  --keep-epochs W      / links only the pages added in the last W epochs (default 0:\n"
"                       all), so older ones stop being linked (retention benchmark)\n"
"  --plain-host I       host index that sends no validators (default 1, b.test; -1 none)\n"
"  --print-epoch        print what epoch N changed, removed and added (needs --port)\n"
"Expected set (no server; needs --port, the port the crawler reaches):\n"
"  --print-expected SCOPE  print, sorted, the canonical URLs a correct crawl from\n"
"                       the seeds fetches; SCOPE: host (= domain here), prefix, all\n"
"  --from URL           a seed (repeatable; default http://a.test:PORT/)\n"
"  --max-depth N        link hops from a seed (default -1: unlimited)\n"
"  --max-redirects N    consecutive redirect hops followed (default 5)\n"
"  --max-path-depth N   most '/' in a path (default 0: off)\n"
"  --max-repeat-segment N  longest run of one path segment (default 0: off)\n"
"  --max-query-params N most query parameters (default 0: off)\n"
"  --max-url-length N   longest canonical URL in bytes (default 0: off)\n"
"  --follow-nofollow    follow rel=nofollow and meta robots nofollow links\n"
"  --fetch-requisites   fetch images/scripts/CSS of in-scope pages from any host\n"
"  --requisite-depth N  with --fetch-requisites: requisites down to max-depth + N (0)\n"
"  --requisites-same-host  with --fetch-requisites: only from the referring host\n"
"  --with-robots        list each contacted host's /robots.txt too\n"
"  --annotate           add TAB depth TAB expected status to each line\n"
"  --help               this text\n"
"\n"
"URL layout of every host:\n"
"  /  /secK/  /secK/ArticleN.html  /list?cat=C&n=N   regular pages (tree + Zipf links)\n"
"  /robots.txt  a.test: rules; b.test: rules + Crawl-delay; c.test: 404; d.test: 500\n"
"  /style.css /app.js /img/N.png /doc/N.pdf          requisites and documents\n"
"  /replay/ /replay/chain.html   for replay tests (CSS requisites, an @import chain);\n"
"                                linked from nowhere\n"
"  /special/    index of: /redirect/{short,hop/1..8,loop/a,self,messy,offsite,\n"
"               no-location} /status/{403,404,410,500,503,503-date,429} /flaky/N.html\n"
"               /slow/{delay,trickle}.html /big/{huge,chunked,bomb}.html, odd content\n"
"               types, malformed HTML, nofollow, meta refresh, iframe, <base>,\n"
"               /private/ (disallowed), /loop/ and /search?q=trap traps\n"
"  /calendar/YYYY/MM  an endless calendar, linked from every page\n";

static int parse_long(const char *name, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
        fprintf(stderr, "testsite: %s wants a number in [%ld, %ld], not '%s'\n", name, lo, hi, v);
        return -1;
    }
    *out = x;
    return 0;
}

enum {
    O_SEED = 256, O_HOSTS, O_PAGES, O_DELAY, O_RETRY, O_FLAKY, O_CRAWL_DELAY, O_BIG, O_BOMB,
    O_NO_SPECIALS, O_SITEMAPS, O_SITEMAP_LASTMOD, O_LATENCY, O_PORT, O_PORT_FILE, O_LOG, O_LOG_TIMING, O_EXPECT, O_FROM, O_MAX_DEPTH, O_MAX_REDIR,
    O_MAX_PATH, O_MAX_REPEAT, O_MAX_QUERY, O_MAX_URL, O_NOFOLLOW, O_REQUISITES, O_ROBOTS,
    O_ANNOTATE, O_REQ_DEPTH, O_REQ_SAME_HOST,
    O_EPOCH, O_CHANGE_PCT, O_REMOVE_PCT, O_ADD_PAGES, O_KEEP_EPOCHS, O_PLAIN_HOST,
    O_PRINT_EPOCH, O_HELP
};

static const struct option longopts[] = {
    { "seed", required_argument, NULL, O_SEED },
    { "hosts", required_argument, NULL, O_HOSTS },
    { "pages", required_argument, NULL, O_PAGES },
    { "delay-ms", required_argument, NULL, O_DELAY },
    { "retry-after", required_argument, NULL, O_RETRY },
    { "flaky", required_argument, NULL, O_FLAKY },
    { "crawl-delay", required_argument, NULL, O_CRAWL_DELAY },
    { "big-bytes", required_argument, NULL, O_BIG },
    { "bomb-mib", required_argument, NULL, O_BOMB },
    { "no-specials", no_argument, NULL, O_NO_SPECIALS },
    { "sitemaps", no_argument, NULL, O_SITEMAPS },
    { "sitemap-lastmod", required_argument, NULL, O_SITEMAP_LASTMOD },
    { "latency-ms", required_argument, NULL, O_LATENCY },
    { "port", required_argument, NULL, O_PORT },
    { "port-file", required_argument, NULL, O_PORT_FILE },
    { "log", required_argument, NULL, O_LOG },
    { "log-timing", no_argument, NULL, O_LOG_TIMING },
    { "print-expected", required_argument, NULL, O_EXPECT },
    { "from", required_argument, NULL, O_FROM },
    { "max-depth", required_argument, NULL, O_MAX_DEPTH },
    { "max-redirects", required_argument, NULL, O_MAX_REDIR },
    { "max-path-depth", required_argument, NULL, O_MAX_PATH },
    { "max-repeat-segment", required_argument, NULL, O_MAX_REPEAT },
    { "max-query-params", required_argument, NULL, O_MAX_QUERY },
    { "max-url-length", required_argument, NULL, O_MAX_URL },
    { "follow-nofollow", no_argument, NULL, O_NOFOLLOW },
    { "fetch-requisites", no_argument, NULL, O_REQUISITES },
    { "requisite-depth", required_argument, NULL, O_REQ_DEPTH },
    { "requisites-same-host", no_argument, NULL, O_REQ_SAME_HOST },
    { "with-robots", no_argument, NULL, O_ROBOTS },
    { "annotate", no_argument, NULL, O_ANNOTATE },
    { "epoch", required_argument, NULL, O_EPOCH },
    { "change-pct", required_argument, NULL, O_CHANGE_PCT },
    { "remove-pct", required_argument, NULL, O_REMOVE_PCT },
    { "add-pages", required_argument, NULL, O_ADD_PAGES },
    { "keep-epochs", required_argument, NULL, O_KEEP_EPOCHS },
    { "plain-host", required_argument, NULL, O_PLAIN_HOST },
    { "print-epoch", no_argument, NULL, O_PRINT_EPOCH },
    { "help", no_argument, NULL, O_HELP },
    { NULL, 0, NULL, 0 },
};

/* "--NAME" of the option getopt_long returned (found by value: the table
 * and the enum need not be in the same order). */
static const char *option_name(int opt)
{
    static char name[64];
    for (const struct option *o = longopts; o->name != NULL; o++) {
        if (o->val == opt) {
            snprintf(name, sizeof(name), "--%s", o->name);
            return name;
        }
    }
    return "?";
}

typedef struct cli {
    site_opts site;
    expect_opts expect;
    int print_expected;
    int print_epoch;
    const char *log_path;
    const char *port_file;
    int latency_ms;
    int log_timing;
} cli;

static int parse_scope(const char *v, expect_scope *out)
{
    if (strcmp(v, "host") == 0 || strcmp(v, "domain") == 0)
        *out = EXPECT_HOST;
    else if (strcmp(v, "prefix") == 0)
        *out = EXPECT_PREFIX;
    else if (strcmp(v, "all") == 0 || strcmp(v, "any") == 0)
        *out = EXPECT_ALL;
    else {
        fprintf(stderr, "testsite: --print-expected wants host, domain, prefix or all, not '%s'\n", v);
        return -1;
    }
    return 0;
}

/* 0 to go on, 1 when --help was printed, -1 on a bad option. */
static int parse_args(int argc, char **argv, cli *c)
{
    long v;
    int opt;
    site_opts_default(&c->site);
    expect_opts_default(&c->expect);
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        const char *name = option_name(opt);
        int bad = 0;
        switch (opt) {
        case O_SEED: {
            char *end;
            errno = 0;
            unsigned long long x = strtoull(optarg, &end, 10);
            if (errno != 0 || end == optarg || *end != '\0') {
                fprintf(stderr, "testsite: --seed wants a number, not '%s'\n", optarg);
                return -1;
            }
            c->site.seed = x;
            break;
        }
        case O_HOSTS:
            bad = parse_long(name, optarg, 1, SITE_MAX_HOSTS, &v);
            c->site.hosts = (int)v;
            break;
        case O_PAGES:
            bad = parse_long(name, optarg, 1, SITE_MAX_PAGES, &v);
            c->site.pages = v;
            break;
        case O_DELAY:
            bad = parse_long(name, optarg, 0, 600000, &v);
            c->site.delay_ms = (int)v;
            break;
        case O_RETRY:
            bad = parse_long(name, optarg, 0, 86400, &v);
            c->site.retry_after_s = (int)v;
            break;
        case O_FLAKY:
            bad = parse_long(name, optarg, 0, 1000000, &v);
            c->site.flaky = (int)v;
            break;
        case O_CRAWL_DELAY:
            if (strlen(optarg) == 0 || strlen(optarg) >= sizeof(c->site.crawl_delay) ||
                strspn(optarg, "0123456789.") != strlen(optarg)) {
                fprintf(stderr, "testsite: --crawl-delay wants seconds like 1 or 0.5\n");
                return -1;
            }
            snprintf(c->site.crawl_delay, sizeof(c->site.crawl_delay), "%s", optarg);
            break;
        case O_BIG:
            bad = parse_long(name, optarg, 1, 1L << 40, &v);
            c->site.big_bytes = (uint64_t)v;
            break;
        case O_BOMB:
            bad = parse_long(name, optarg, 1, 4095, &v);
            c->site.bomb_mib = (int)v;
            break;
        case O_SITEMAPS:
            c->site.sitemaps = 1;
            break;
        case O_SITEMAP_LASTMOD:
            if (strlen(optarg) == 0 || strlen(optarg) >= sizeof(c->site.sitemap_lastmod) ||
                strspn(optarg, "0123456789-:T.Z+") != strlen(optarg)) {
                fprintf(stderr, "testsite: --sitemap-lastmod wants a W3C Datetime\n");
                return -1;
            }
            snprintf(c->site.sitemap_lastmod, sizeof(c->site.sitemap_lastmod), "%s", optarg);
            break;
        case O_NO_SPECIALS:
            c->site.specials = 0;
            break;
        case O_LATENCY:
            bad = parse_long(name, optarg, 0, 600000, &v);
            c->latency_ms = (int)v;
            break;
        case O_PORT:
            bad = parse_long(name, optarg, 0, 65535, &v);
            c->site.port = (int)v;
            break;
        case O_PORT_FILE:
            c->port_file = optarg;
            break;
        case O_LOG:
            c->log_path = optarg;
            break;
        case O_LOG_TIMING:
            c->log_timing = 1;
            break;
        case O_EXPECT:
            c->print_expected = 1;
            bad = parse_scope(optarg, &c->expect.scope);
            break;
        case O_FROM:
            if (c->expect.nseeds == EXPECT_MAX_SEEDS) {
                fprintf(stderr, "testsite: at most %d --from seeds\n", EXPECT_MAX_SEEDS);
                return -1;
            }
            c->expect.seeds[c->expect.nseeds++] = optarg;
            break;
        case O_MAX_DEPTH:
            bad = parse_long(name, optarg, -1, 1000000, &v);
            c->expect.max_depth = v;
            break;
        case O_MAX_REDIR:
            bad = parse_long(name, optarg, 0, 1000, &v);
            c->expect.max_redirects = (int)v;
            break;
        case O_MAX_PATH:
            bad = parse_long(name, optarg, 0, 100000, &v);
            c->expect.max_path_depth = (int)v;
            break;
        case O_MAX_REPEAT:
            bad = parse_long(name, optarg, 0, 100000, &v);
            c->expect.max_repeat_segment = (int)v;
            break;
        case O_MAX_QUERY:
            bad = parse_long(name, optarg, 0, 100000, &v);
            c->expect.max_query_params = (int)v;
            break;
        case O_MAX_URL:
            bad = parse_long(name, optarg, 0, 10000000, &v);
            c->expect.max_url_length = (int)v;
            break;
        case O_NOFOLLOW:
            c->expect.follow_nofollow = 1;
            break;
        case O_REQUISITES:
            c->expect.fetch_requisites = 1;
            break;
        case O_REQ_DEPTH:
            bad = parse_long(name, optarg, 0, 1000, &v);
            c->expect.requisite_depth = v;
            break;
        case O_REQ_SAME_HOST:
            c->expect.requisites_same_host = 1;
            break;
        case O_ROBOTS:
            c->expect.with_robots = 1;
            break;
        case O_ANNOTATE:
            c->expect.annotate = 1;
            break;
        case O_EPOCH:
            if (parse_long(name, optarg, 0, 1000, &v) != 0)
                return -1;
            c->site.epoch = (int)v;
            break;
        case O_CHANGE_PCT:
        case O_REMOVE_PCT:
            if (parse_long(name, optarg, 0, 100, &v) != 0)
                return -1;
            *(opt == O_CHANGE_PCT ? &c->site.change_pct : &c->site.remove_pct) = (int)v;
            break;
        case O_ADD_PAGES:
            if (parse_long(name, optarg, 0, 1000, &v) != 0)
                return -1;
            c->site.add_pages = (int)v;
            break;
        case O_KEEP_EPOCHS:
            if (parse_long(name, optarg, 0, 1000, &v) != 0)
                return -1;
            c->site.keep_epochs = (int)v;
            break;
        case O_PLAIN_HOST:
            if (parse_long(name, optarg, -1, SITE_MAX_HOSTS - 1, &v) != 0)
                return -1;
            c->site.plain_host = (int)v;
            break;
        case O_PRINT_EPOCH:
            c->print_epoch = 1;
            break;
        case 'h':
        case O_HELP:
            fputs(usage, stdout);
            return 1;
        default:
            fputs("testsite: see --help\n", stderr);
            return -1;
        }
        if (bad)
            return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "testsite: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* A listening TCP socket on 127.0.0.1:port; *bound gets the real port. */
static int listen_loopback(int port, int *bound)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 || listen(fd, 4096) != 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &len) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    *bound = ntohs(sin.sin_port);
    return fd;
}

static int write_port_file(const char *path, int port)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return -errno;
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return -errno;
    return 0;
}

static int serve(cli *c)
{
    sigset_t set;
    int sig = 0, port = 0, err = 0;
    site *s = NULL;
    server *srv = NULL;
    struct rlimit rl; /* a connection per crawled host, hundreds of them */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int fd = listen_loopback(c->site.port, &port);
    if (fd < 0) {
        fprintf(stderr, "testsite: cannot listen on 127.0.0.1:%d: %s\n", c->site.port, strerror(-fd));
        return 1;
    }
    c->site.port = port;
    s = site_new(&c->site);
    if (s == NULL) {
        close(fd);
        fputs("testsite: out of memory\n", stderr);
        return 1;
    }
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    srv = server_start(s, fd, c->log_path, c->latency_ms,
                       c->log_timing ? SERVER_LOG_TIMING : 0, &err);
    if (srv == NULL) {
        fprintf(stderr, "testsite: cannot start the server: %s\n", strerror(-err));
        site_free(s);
        return 1;
    }
    if (c->port_file != NULL && write_port_file(c->port_file, port) != 0)
        fprintf(stderr, "testsite: cannot write %s\n", c->port_file);
    printf("listening on 127.0.0.1:%d (hosts %s..%s, seed %llu, %ld pages per host)\n", port,
           site_host_name(s, 0), site_host_name(s, site_host_count(s) - 1),
           (unsigned long long)c->site.seed, c->site.pages);
    fflush(stdout);
    while (sigwait(&set, &sig) != 0 || (sig != SIGINT && sig != SIGTERM))
        ;
    server_stop(srv);
    site_free(s);
    return 0;
}

int main(int argc, char **argv)
{
    cli c;
    memset(&c, 0, sizeof(c));
    int rc = parse_args(argc, argv, &c);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    if (c.print_epoch) {
        site *es = site_new(&c.site);
        if (es == NULL || c.site.epoch < 0) {
            fputs(es ? "testsite: --print-epoch needs --epoch\n" : "testsite: out of memory\n",
                  stderr);
            site_free(es);
            return es ? 2 : 1;
        }
        rc = epoch_print(es, stdout);
        site_free(es);
        return rc == 0 && fflush(stdout) == 0 ? 0 : 1;
    }
    if (!c.print_expected)
        return serve(&c);

    char err[512];
    site *s = site_new(&c.site);
    if (s == NULL) {
        fputs("testsite: out of memory\n", stderr);
        return 1;
    }
    rc = expect_print(s, &c.expect, stdout, err, sizeof(err));
    site_free(s);
    if (rc != 0) {
        fprintf(stderr, "testsite: %s\n", err[0] != '\0' ? err : strerror(-rc));
        return 1;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
