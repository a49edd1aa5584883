/* tests/test_report: `crawld report` end to end, and the report module.
 *
 * The group crawls a small test site once (about 3 s), then each test
 * checks one property of the report of that crawl: its totals agree with
 * `crawld stats --json` and with the site's own request log; it is valid
 * HTML to xmllint; it renders in headless Chromium (the screenshot has the
 * right size and enough non-blank pixels). Unit tests check escaping, the
 * caps on samples and hosts, and the errors for a missing state folder. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "common/buf.h"
#include "crawler/report/report.h"
#include "storage/db.h"
#include "tests/support/proc.h"
#include "tests/support/testsite.h"

#define CHROMIUM_TIMEOUT_S 60
#define SHOT_W 1280
#define SHOT_H 2000

static testsite site;
static char workdir[128];
static char state[256];
static char report_path[256];

static const char *const site_args[] = { "--pages", "12", "--hosts", "3", "--delay-ms", "50",
                                         "--retry-after", "0", "--flaky", "1", "--big-bytes",
                                         "100000", "--bomb-mib", "1", "--crawl-delay", "0", NULL };

static void rm_rf(const char *path)
{
    const char *argv[] = { "/bin/rm", "-rf", path, NULL };
    proc_run(argv, NULL, 0, NULL, NULL);
}

static int slurp(const char *path, cr_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -errno;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        cr_buf_append(out, buf, n);
    fclose(f);
    return 0;
}

/* Crawls the site once for the whole group and writes the report. */
static int group_setup(void **st)
{
    (void)st;
    snprintf(workdir, sizeof workdir, "/tmp/crawld-test-report-XXXXXX");
    if (mkdtemp(workdir) == NULL)
        return -1;
    if (testsite_start(&site, site_args) != 0)
        return -1;
    snprintf(state, sizeof state, "%s/state", workdir);
    snprintf(report_path, sizeof report_path, "%s/report.html", workdir);
    char cfg[256];
    snprintf(cfg, sizeof cfg, "%s/crawl.toml", workdir);
    FILE *f = fopen(cfg, "w");
    if (f == NULL)
        return -1;
    int p = site.port;
    fprintf(f,
            "[crawl]\nseeds = [\"http://a.test:%d/\"]\nscope = \"domain\"\nmax_depth = 3\n"
            "[fetch]\nresolve = [\"a.test:%d:127.0.0.1\", \"b.test:%d:127.0.0.1\", "
            "\"c.test:%d:127.0.0.1\"]\ntimeout_ms = 5000\nconnections = 16\n"
            "[politeness]\ndelay_ms = 20\ndelay_factor = 0.0\nbackoff_ms = 10\n"
            "max_retry_after_s = 0\n[storage]\nstate_dir = \"%s\"\n"
            "[control]\nlisten = \"\"\ntoken = \"do-not-show-me\"\n",
            p, p, p, p, state);
    fclose(f);
    cr_buf err;
    cr_buf_init(&err, 0);
    int rc = proc_crawld((const char *const[]){ "run", "-c", cfg, NULL }, NULL, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "crawld run exited %d: %s\n", rc, err.data ? err.data : "");
    cr_buf_release(&err);
    if (rc != 0)
        return -1;
    cr_buf out;
    cr_buf_init(&out, 0);
    rc = proc_crawld((const char *const[]){ "report", "--state", state, "-o", report_path, NULL },
                     NULL, &out, NULL);
    if (rc != 0 || out.data == NULL || strstr(out.data, report_path) == NULL)
        rc = -1;
    cr_buf_release(&out);
    return rc;
}

static int group_teardown(void **st)
{
    (void)st;
    testsite_stop(&site);
    rm_rf(workdir);
    return 0;
}

/* ---- reading the page back ---------------------------------------------- */

/* The data-value of the element with id="ID", or -1 when there is none. */
static long long value_of_id(const char *html, const char *id)
{
    char key[128];
    snprintf(key, sizeof key, "id=\"%s\" data-value=\"", id);
    const char *p = strstr(html, key);
    if (p == NULL)
        return -1;
    return strtoll(p + strlen(key), NULL, 10);
}

/* data-pages of the host row with data-host="HOST", or -1. */
static long long host_pages(const char *html, const char *host)
{
    char key[256];
    snprintf(key, sizeof key, "data-host=\"%s\" data-pages=\"", host);
    const char *p = strstr(html, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static json_t *stats_json(void)
{
    cr_buf out;
    cr_buf_init(&out, 0);
    assert_int_equal(proc_crawld((const char *const[]){ "stats", "--state", state, "--json", NULL },
                                 NULL, &out, NULL),
                     0);
    json_error_t jerr;
    json_t *j = json_loads(out.data, 0, &jerr);
    if (j == NULL)
        fail_msg("crawld stats --json is not JSON: %s", jerr.text);
    cr_buf_release(&out);
    return j;
}

static void report_totals_match_stats_and_site_log(void **st)
{
    (void)st;
    cr_buf html;
    cr_buf_init(&html, 0);
    assert_int_equal(slurp(report_path, &html), 0);
    json_t *s = stats_json();
    testsite_req *v;
    size_t n;
    assert_int_equal(testsite_log_read(&site, &v, &n), 0);
    assert_true(n > 20);

    /* every request the site logged got an answer: pages */
    long long pages = value_of_id(html.data, "kpi-pages");
    assert_int_equal(pages, (long long)n);
    assert_int_equal(pages, json_integer_value(json_object_get(s, "pages")));
    assert_int_equal(value_of_id(html.data, "kpi-links"),
                     json_integer_value(json_object_get(s, "links")));
    assert_int_equal(value_of_id(html.data, "kpi-fetch_errors"),
                     json_integer_value(json_object_get(s, "fetch_errors")));
    assert_int_equal(value_of_id(html.data, "kpi-bytes"),
                     json_integer_value(json_object_get(s, "bytes")));

    /* the dedup layers */
    json_t *dd = json_object_get(s, "dedup");
    json_t *dup = json_object_get(dd, "duplicate");
    long long dups = json_integer_value(json_object_get(dup, "bloom_maybe_trusted")) +
                     json_integer_value(json_object_get(dup, "recent_cache")) +
                     json_integer_value(json_object_get(dup, "sqlite"));
    assert_true(dups > 0);
    assert_int_equal(value_of_id(html.data, "kpi-duplicates"), dups);
    assert_int_equal(value_of_id(html.data, "layer-total"),
                     json_integer_value(json_object_get(dd, "urls")));
    assert_int_equal(value_of_id(html.data, "layer-dup-recent-cache"),
                     json_integer_value(json_object_get(dup, "recent_cache")));
    assert_int_equal(value_of_id(html.data, "kpi-fp_caught"),
                     json_integer_value(json_object_get(json_object_get(dd, "new"),
                                                        "false_positive_caught")));

    /* links the URL parser refused, by reason: the site links a few on purpose */
    json_t *refused = json_object_get(s, "links_rejected_by");
    const char *why;
    json_t *cnt;
    int reasons = 0;
    json_object_foreach(refused, why, cnt)
    {
        char want[128];
        snprintf(want, sizeof want, "data-reason=\"%s\" data-value=\"%lld\"", why,
                 (long long)json_integer_value(cnt));
        if (json_integer_value(cnt) > 0) {
            reasons++;
            if (strstr(html.data, want) == NULL)
                fail_msg("the report lacks %s", want);
        }
    }
    assert_true(reasons >= 3);

    /* status codes: the report, stats and the site's log agree */
    long long by_code[600] = { 0 };
    for (size_t i = 0; i < n; i++)
        if (v[i].status >= 100 && v[i].status < 600)
            by_code[v[i].status]++;
    int codes = 0;
    for (int c = 100; c < 600; c++) {
        char id[32], k[8];
        snprintf(id, sizeof id, "status-%d", c);
        snprintf(k, sizeof k, "%d", c);
        long long in_report = value_of_id(html.data, id);
        json_t *js = json_object_get(json_object_get(s, "pages_by_status"), k);
        if (by_code[c] == 0) {
            assert_int_equal(in_report, -1);
            assert_null(js);
            continue;
        }
        codes++;
        if (in_report != by_code[c])
            fail_msg("status %d: report %lld, site log %lld", c, in_report, by_code[c]);
        assert_int_equal(json_integer_value(js), by_code[c]);
    }
    assert_true(codes >= 3); /* the site answers 200, redirects and errors */

    /* per host: pages in the report = requests in the log = stats' host table */
    json_t *hosts = json_object_get(s, "hosts");
    assert_true(json_array_size(hosts) >= 1);
    size_t idx;
    json_t *h;
    long long sum = 0;
    json_array_foreach(hosts, idx, h)
    {
        const char *name = json_string_value(json_object_get(h, "host"));
        long long logged = 0;
        for (size_t i = 0; i < n; i++)
            logged += strcmp(v[i].host, name) == 0;
        long long hp = json_integer_value(json_object_get(h, "pages"));
        if (hp != logged || host_pages(html.data, name) != logged)
            fail_msg("host %s: stats %lld, report %lld, site log %lld", name, hp,
                     host_pages(html.data, name), logged);
        sum += hp;
    }
    assert_int_equal(sum, pages);
    assert_int_equal(json_array_size(hosts),
                     json_integer_value(json_object_get(s, "hosts_total")));

    /* samples: stored while crawling, counted the same by both */
    json_t *smp = json_object_get(s, "samples");
    long long ns = json_integer_value(json_object_get(smp, "count"));
    assert_true(ns >= 2); /* one at the start, one at close */
    assert_int_equal(value_of_id(html.data, "samples"), ns);
    assert_true(json_integer_value(json_object_get(smp, "last_t_ms")) >
                json_integer_value(json_object_get(smp, "first_t_ms")));

    /* the configuration is there, its secret is not */
    assert_non_null(strstr(html.data, "scope = &quot;domain&quot;"));
    assert_null(strstr(html.data, "do-not-show-me"));
    /* no script, nothing fetched from elsewhere */
    assert_null(strstr(html.data, "<script"));
    assert_null(strstr(html.data, "src=\"http"));
    assert_null(strstr(html.data, "href=\"http"));

    testsite_log_free(v, n);
    json_decref(s);
    cr_buf_release(&html);
}

static void report_is_valid_html(void **st)
{
    (void)st;
    cr_buf out, err;
    cr_buf_init(&out, 0);
    cr_buf_init(&err, 0);
    const char *argv[] = { "/usr/bin/xmllint", "--html", "--noout", report_path, NULL };
    if (access(argv[0], X_OK) != 0)
        fail_msg("xmllint is missing: run `make deps` (Debian package libxml2-utils)");
    int rc = proc_run(argv, NULL, 0, &out, &err);
    if (rc != 0 || err.len > 0 || out.len > 0)
        fail_msg("xmllint --html exited %d: %s%s", rc, out.data ? out.data : "",
                 err.data ? err.data : "");
    cr_buf_release(&out);
    cr_buf_release(&err);
}

/* ---- PNG: size from IHDR, pixels through zlib ----------------------------- */

typedef struct png {
    uint32_t w, h;
    unsigned channels;
    unsigned char *px; /* w * h * channels, unfiltered */
} png;

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Decodes an 8-bit RGB or RGBA, non-interlaced PNG. 0 or -1 (msg says why). */
static int png_decode(const unsigned char *d, size_t n, png *out, char *msg, size_t mlen)
{
    static const unsigned char sig[8] = { 137, 'P', 'N', 'G', 13, 10, 26, 10 };
    memset(out, 0, sizeof *out);
    if (n < 33 || memcmp(d, sig, 8) != 0 || memcmp(d + 12, "IHDR", 4) != 0) {
        snprintf(msg, mlen, "not a PNG");
        return -1;
    }
    out->w = be32(d + 16);
    out->h = be32(d + 20);
    int depth = d[24], ctype = d[25], interlace = d[28];
    if (depth != 8 || (ctype != 2 && ctype != 6) || interlace != 0) {
        snprintf(msg, mlen, "unsupported PNG: depth %d, colour type %d, interlace %d", depth,
                 ctype, interlace);
        return -1;
    }
    out->channels = ctype == 6 ? 4 : 3;
    cr_buf idat;
    cr_buf_init(&idat, 0);
    for (size_t off = 8; off + 12 <= n;) {
        uint32_t len = be32(d + off);
        if (len > n - off - 12)
            break;
        if (memcmp(d + off + 4, "IDAT", 4) == 0)
            cr_buf_append(&idat, d + off + 8, len);
        off += 12 + (size_t)len;
    }
    size_t stride = (size_t)out->w * out->channels;
    uLongf raw_len = (uLongf)((stride + 1) * out->h);
    unsigned char *raw = malloc(raw_len);
    out->px = malloc(stride * out->h);
    int rc = -1;
    if (raw == NULL || out->px == NULL || idat.len == 0) {
        snprintf(msg, mlen, "no image data");
        goto out;
    }
    uLongf got = raw_len;
    if (uncompress(raw, &got, (const Bytef *)idat.data, (uLong)idat.len) != Z_OK ||
        got != raw_len) {
        snprintf(msg, mlen, "the IDAT stream does not inflate to %lu bytes", (unsigned long)raw_len);
        goto out;
    }
    unsigned bpp = out->channels;
    for (uint32_t y = 0; y < out->h; y++) {
        const unsigned char *src = raw + y * (stride + 1) + 1;
        unsigned char *row = out->px + y * stride;
        const unsigned char *up = y ? row - stride : NULL;
        int filter = src[-1];
        for (size_t x = 0; x < stride; x++) {
            int a = x >= bpp ? row[x - bpp] : 0;
            int b = up ? up[x] : 0;
            int c = up && x >= bpp ? up[x - bpp] : 0;
            int pred = filter == 0   ? 0
                       : filter == 1 ? a
                       : filter == 2 ? b
                       : filter == 3 ? (a + b) / 2
                       : filter == 4 ? paeth(a, b, c)
                                     : -1;
            if (pred < 0) {
                snprintf(msg, mlen, "bad filter type %d in row %u", filter, y);
                goto out;
            }
            row[x] = (unsigned char)(src[x] + pred);
        }
    }
    rc = 0;
out:
    free(raw);
    cr_buf_release(&idat);
    if (rc < 0) {
        free(out->px);
        out->px = NULL;
    }
    return rc;
}

/* Runs argv with a deadline, in its own process group (Chromium starts
 * helpers), stdout and stderr into log. Returns its exit code, or -1 when
 * it could not start, or -2 when it was killed at the deadline. */
static int run_with_timeout(const char *const argv[], const char *log, int timeout_s)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    setpgid(pid, pid);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            kill(-pid, SIGKILL); /* helpers left behind, if any */
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= timeout_s) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -2;
        }
        struct timespec nap = { 0, 50 * 1000 * 1000 };
        nanosleep(&nap, NULL);
    }
}

static const char *chromium_path(void)
{
    const char *e = getenv("CHROMIUM");
    if (e && *e)
        return e;
    static const char *const candidates[] = { "/usr/bin/chromium", "/usr/bin/chromium-browser" };
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++)
        if (access(candidates[i], X_OK) == 0)
            return candidates[i];
    return NULL;
}

static void report_renders_in_chromium(void **st)
{
    (void)st;
    const char *chromium = chromium_path();
    if (chromium == NULL)
        fail_msg("chromium is not installed: run `make deps` (Debian package chromium), or set "
                 "CHROMIUM to its path");
    char profile[256], shot[300], log[300], url[300], shot_arg[320], profile_arg[300];
    snprintf(profile, sizeof profile, "%s/chromium-XXXXXX", workdir);
    assert_non_null(mkdtemp(profile));
    snprintf(shot, sizeof shot, "%s/shot.png", workdir);
    snprintf(log, sizeof log, "%s/chromium.log", workdir);
    snprintf(url, sizeof url, "file://%s", report_path);
    snprintf(shot_arg, sizeof shot_arg, "--screenshot=%s", shot);
    snprintf(profile_arg, sizeof profile_arg, "--user-data-dir=%s", profile);
    char size_arg[64];
    snprintf(size_arg, sizeof size_arg, "--window-size=%d,%d", SHOT_W, SHOT_H);
    const char *argv[] = { chromium, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-background-networking", "--no-first-run", profile_arg,
                           shot_arg, size_arg, url, NULL };
    unlink(shot);
    int rc = run_with_timeout(argv, log, CHROMIUM_TIMEOUT_S);
    rm_rf(profile);
    cr_buf text, img;
    cr_buf_init(&text, 1 << 20);
    cr_buf_init(&img, 0);
    slurp(log, &text);
    if (rc != 0)
        fail_msg("chromium %s (%d); its output:\n%s",
                 rc == -2 ? "was killed after " "60 s" : "could not run", rc,
                 text.data ? text.data : "");
    if (slurp(shot, &img) != 0)
        fail_msg("chromium wrote no screenshot; its output:\n%s", text.data ? text.data : "");
    png p;
    char msg[128];
    if (png_decode((const unsigned char *)img.data, img.len, &p, msg, sizeof msg) < 0)
        fail_msg("screenshot: %s", msg);
    assert_int_equal(p.w, SHOT_W);
    assert_int_equal(p.h, SHOT_H);
    /* "ink": neither the page background (#f3f5f8) nor the cards' white */
    size_t total = (size_t)p.w * p.h, ink = 0, page_bg = 0, dark = 0;
    for (size_t i = 0; i < total; i++) {
        const unsigned char *c = p.px + i * p.channels;
        bool bg = abs(c[0] - 0xf3) <= 2 && abs(c[1] - 0xf5) <= 2 && abs(c[2] - 0xf8) <= 2;
        bool white = c[0] >= 0xfd && c[1] >= 0xfd && c[2] >= 0xfd;
        page_bg += bg;
        ink += !bg && !white;
        dark += c[0] < 0x60 && c[1] < 0x60 && c[2] < 0x90; /* the header, text */
    }
    double f_ink = (double)ink / (double)total, f_bg = (double)page_bg / (double)total;
    if (f_ink < 0.15 || f_bg < 0.02 || dark < total / 20)
        fail_msg("the screenshot looks blank: %.1f%% ink, %.1f%% page background, %.1f%% dark",
                 100 * f_ink, 100 * f_bg, 100.0 * (double)dark / (double)total);
    free(p.px);
    cr_buf_release(&img);
    cr_buf_release(&text);
}

/* ---- a running crawl -------------------------------------------------------- */

static json_t *stats_of(const char *dir)
{
    cr_buf out;
    cr_buf_init(&out, 0);
    json_t *j = NULL;
    if (proc_crawld((const char *const[]){ "stats", "--state", dir, "--json", NULL }, NULL, &out,
                    NULL) == 0) {
        json_error_t jerr;
        j = json_loads(out.data, 0, &jerr);
    }
    cr_buf_release(&out);
    return j;
}

/* A daemon crawl (it idles once drained, storing its figures every 2 s):
 * the report works while it runs, and says so. */
static void report_of_a_running_crawl(void **st)
{
    (void)st;
    testsite other;
    const char *const args[] = { "--pages", "6", "--hosts", "1", "--no-specials", NULL };
    assert_int_equal(testsite_start(&other, args), 0);
    char dir[300], cfg[300], log[300], out[300];
    snprintf(dir, sizeof dir, "%s/daemon", workdir);
    snprintf(cfg, sizeof cfg, "%s/daemon.toml", workdir);
    snprintf(log, sizeof log, "%s/daemon.log", workdir);
    snprintf(out, sizeof out, "%s/running.html", workdir);
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f,
            "[crawl]\nseeds = [\"http://a.test:%d/\"]\ndaemon = true\n"
            "[fetch]\nresolve = [\"a.test:%d:127.0.0.1\"]\n[politeness]\ndelay_ms = 10\n"
            "delay_factor = 0.0\n[storage]\nstate_dir = \"%s\"\n[control]\nlisten = \"\"\n",
            other.port, other.port, dir);
    fclose(f);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execl(proc_crawld_path(), "crawld", "run", "-c", cfg, (char *)NULL);
        _exit(127);
    }
    /* wait (at most 20 s) until it stored two samples and fetched something */
    json_t *s = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(s);
        s = stats_of(dir);
        if (s && json_integer_value(json_object_get(json_object_get(s, "samples"), "count")) >= 2 &&
            json_integer_value(json_object_get(s, "pages")) > 0)
            break;
        struct timespec nap = { 0, 100 * 1000 * 1000 };
        nanosleep(&nap, NULL);
    }
    cr_buf html;
    cr_buf_init(&html, 0);
    int rc = proc_crawld((const char *const[]){ "report", "--state", dir, "-o", out, NULL }, NULL,
                         NULL, NULL);
    kill(pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 300 && waitpid(pid, &status, WNOHANG) == 0; i++) {
        struct timespec nap = { 0, 100 * 1000 * 1000 };
        nanosleep(&nap, NULL);
    }
    if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    testsite_stop(&other);
    assert_non_null(s);
    assert_int_equal(rc, 0);
    assert_int_equal(slurp(out, &html), 0);
    assert_non_null(strstr(html.data, "badge run"));
    assert_true(value_of_id(html.data, "kpi-pages") > 0);
    assert_true(value_of_id(html.data, "samples") >= 2);
    /* stopped: the report says so */
    assert_true(WIFEXITED(status));
    assert_int_equal(proc_crawld((const char *const[]){ "report", "--state", dir, "-o", out, NULL },
                                 NULL, NULL, NULL),
                     0);
    cr_buf_clear(&html);
    assert_int_equal(slurp(out, &html), 0);
    assert_non_null(strstr(html.data, "badge stop"));
    cr_buf_release(&html);
    json_decref(s);
}

/* ---- errors --------------------------------------------------------------- */

static void missing_or_empty_state_is_exit_2(void **st)
{
    (void)st;
    cr_buf err;
    cr_buf_init(&err, 0);
    char missing[300], empty[300], out[300];
    snprintf(missing, sizeof missing, "%s/no-such-folder", workdir);
    snprintf(empty, sizeof empty, "%s/empty", workdir);
    snprintf(out, sizeof out, "%s/never.html", workdir);
    assert_int_equal(mkdir(empty, 0700), 0);
    assert_int_equal(proc_crawld((const char *const[]){ "report", "--state", missing, "-o", out,
                                                        NULL },
                                 NULL, NULL, &err),
                     2);
    assert_non_null(strstr(err.data, missing));
    cr_buf_clear(&err);
    assert_int_equal(proc_crawld((const char *const[]){ "report", "--state", empty, "-o", out,
                                                        NULL },
                                 NULL, NULL, &err),
                     2);
    assert_non_null(strstr(err.data, "no crawl in"));
    assert_int_equal(access(out, F_OK), -1); /* nothing written */
    cr_buf_clear(&err);
    assert_int_equal(proc_crawld((const char *const[]){ "report", "--state", NULL }, NULL, NULL,
                                 &err),
                     2);
    cr_buf_release(&err);
}

/* ---- the module on made-up data --------------------------------------------- */

static char *write_to_string(const json_t *data)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    report_meta m = { "/state/<dir>", 1700000000000LL };
    assert_int_equal(report_write(f, data, &m), 0);
    fclose(f);
    return text;
}

static void crawl_strings_are_escaped(void **st)
{
    (void)st;
    json_t *data = json_pack(
        "{s:{s:I, s:{s:I}, s:{s:I}}, s:[], s:I, s:[{s:s, s:I, s:I, s:I}], s:I, s:s, s:{}}",
        "stats", "pages", (json_int_t)3, "pages_by_status", "200", (json_int_t)3,
        "fetch_errors_by_kind", "<b>x</b>", (json_int_t)1, "samples", "samples_total",
        (json_int_t)0, "hosts", "host", "<script>alert(1)</script>", "pages", (json_int_t)3,
        "links", (json_int_t)4, "links_new", (json_int_t)1, "hosts_total", (json_int_t)1,
        "config", "seeds = [\"http://x/?a=1&b=<i>\"]", "database");
    assert_non_null(data);
    char *html = write_to_string(data);
    assert_null(strstr(html, "<script"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_non_null(strstr(html, "a=1&amp;b=&lt;i&gt;"));
    assert_non_null(strstr(html, "&lt;b&gt;x&lt;/b&gt;"));
    assert_null(strstr(html, "<b>x</b>"));
    assert_non_null(strstr(html, "/state/&lt;dir&gt;"));
    assert_non_null(strstr(html, "No samples stored yet"));
    /* 3 of 4 links were duplicates */
    assert_non_null(strstr(html, "<td>75.0%"));
    free(html);
    json_decref(data);
}

static int put_figures(db *d, int samples, int hosts)
{
    char text[256];
    for (int i = 0; i < samples; i++) {
        snprintf(text, sizeof text,
                 "{\"pages\":%d,\"pages_per_s\":%d,\"urls\":%d,\"dup_recent_cache\":%d,"
                 "\"bloom_fill\":[0.1,0.05]}",
                 i, i % 7, 10 * i, 9 * i);
        if (db_put_sample(d, 1000000 + 2000LL * i, text) < 0)
            return -1;
    }
    for (int i = 0; i < hosts; i++) {
        char host[32];
        snprintf(host, sizeof host, "h%03d.test", i);
        snprintf(text, sizeof text, "{\"pages\":%d,\"links\":%d,\"links_new\":1}", i, 2 * i);
        if (db_put_host_stats(d, host, i, text) < 0)
            return -1;
    }
    return db_flush(d);
}

static void samples_and_hosts_are_capped(void **st)
{
    (void)st;
    char dir[300], err[512];
    snprintf(dir, sizeof dir, "%s/capped", workdir);
    db *d = db_open(dir, NULL, err, sizeof err);
    assert_non_null(d);
    assert_int_equal(put_figures(d, 5000, 120), 0);
    db_reader *rd = db_reader_open(d, err, sizeof err);
    assert_non_null(rd);
    json_t *data = NULL;
    assert_int_equal(report_load(rd, REPORT_MAX_SAMPLES, REPORT_MAX_HOSTS, &data, err, sizeof err),
                     0);
    json_t *s = json_object_get(data, "samples");
    assert_true(json_array_size(s) <= REPORT_MAX_SAMPLES + 1);
    assert_true(json_array_size(s) >= REPORT_MAX_SAMPLES / 2);
    /* evenly thinned, the first and the last kept */
    assert_int_equal(json_integer_value(json_object_get(json_array_get(s, 0), "t_ms")), 1000000);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(s, json_array_size(s) - 1), "t_ms")),
        1000000 + 2000LL * 4999);
    assert_int_equal(json_integer_value(json_object_get(data, "samples_total")), 5000);
    json_t *h = json_object_get(data, "hosts");
    assert_int_equal(json_array_size(h), REPORT_MAX_HOSTS);
    assert_string_equal(json_string_value(json_object_get(json_array_get(h, 0), "host")),
                        "h119.test"); /* busiest first */
    assert_int_equal(json_integer_value(json_object_get(data, "hosts_total")), 120);
    char *html = write_to_string(data);
    size_t rows = 0;
    for (const char *p = html; (p = strstr(p, "data-host=\"")) != NULL; p++)
        rows++;
    assert_int_equal(rows, REPORT_MAX_HOSTS);
    assert_non_null(strstr(html, "id=\"hosts-more\" data-value=\"70\""));
    assert_true(strlen(html) < 2u << 20); /* bounded */
    free(html);
    json_decref(data);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(report_totals_match_stats_and_site_log),
        cmocka_unit_test(report_is_valid_html),
        cmocka_unit_test(report_renders_in_chromium),
        cmocka_unit_test(report_of_a_running_crawl),
        cmocka_unit_test(missing_or_empty_state_is_exit_2),
        cmocka_unit_test(crawl_strings_are_escaped),
        cmocka_unit_test(samples_and_hosts_are_capped),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
