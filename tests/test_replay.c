/* tests/test_replay: an archive that replays. The test site's /replay/ page
 * (a stylesheet that sets the background colour and loads a font from the
 * next host and an image only through url(), an @import loop, a <style>, a
 * style attribute, an <img srcset>) is crawled with archive.wacz on, the
 * live site is stopped, and the package is opened in ReplayWeb.page 2.5.3
 * inside Debian's headless Chromium, driven over the DevTools protocol by
 * tests/replay/drive.mjs. The replayed page must have the stylesheet's
 * background, its images must have loaded (natural width > 0), the font must
 * have been served from the archive, and no request may have gone anywhere
 * but the replay server (tests/support/httpd, which answers Range requests).
 *
 * ReplayWeb.page is fetched with `npm pack` into build/replaywebpage-2.5.3/
 * (git-ignored, never committed: it is AGPL-3.0) and reused from there. The
 * replay case is skipped, saying why, when node, npm or chromium are
 * missing or npm cannot reach its registry. The screenshot is kept in
 * build/replay/screenshot.png (README's docs/replay.png comes from it). It
 * also runs the plain `chromium --headless --screenshot` way and prints
 * what that captured, for the record (ReplayWeb's service worker registers
 * after the load event, so that screenshot is expected to be blank). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "tests/support/httpd.h"
#include "tests/support/proc.h"
#include "tests/support/testsite.h"

#define RWP_VERSION "2.5.3"
#define BG "rgb(30, 107, 82)" /* #1e6b52, /replay/style.css */

static char workdir[128];
static char root[1024];

static int group_setup(void **state)
{
    (void)state;
    const char *r = getenv("CRAWLD_ROOT");
    snprintf(root, sizeof root, "%s", r && r[0] ? r : ".");
    snprintf(workdir, sizeof workdir, "/tmp/crawld-test-replay-XXXXXX");
    return mkdtemp(workdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    const char *argv[] = { "/bin/rm", "-rf", workdir, NULL };
    proc_run(argv, NULL, 0, NULL, NULL);
    return 0;
}

static int sh(const char *cmd, cr_buf *out, cr_buf *err)
{
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    return proc_run(argv, NULL, 0, out, err);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* ---- the replay server ---------------------------------------------------- */

typedef struct body {
    cr_buf b;
    long status;
    char range[128];
} body;

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    body *b = ud;
    return cr_buf_append(&b->b, p, sz * n) == 0 ? sz * n : 0;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    body *b = ud;
    size_t len = sz * n;
    if (len > 15 && strncasecmp(p, "Content-Range: ", 15) == 0) {
        size_t v = len - 15;
        while (v > 0 && (p[15 + v - 1] == '\r' || p[15 + v - 1] == '\n'))
            v--;
        snprintf(b->range, sizeof b->range, "%.*s", (int)v, p + 15);
    }
    return sz * n;
}

static void get(int port, const char *target, const char *range, body *out)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, target);
    memset(out, 0, sizeof *out);
    cr_buf_init(&out->b, 0);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
    if (range)
        curl_easy_setopt(c, CURLOPT_RANGE, range);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    curl_easy_cleanup(c);
}

/* The server the replay runs on answers Range requests as ReplayWeb.page
 * needs them for packages over 25 MB. */
static void server_answers_ranges(void **state)
{
    (void)state;
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/ranges", workdir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/data.wacz", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 100000; i++)
        fputc('a' + i % 26, f);
    assert_int_equal(fclose(f), 0);
    httpd *h = httpd_start(dir);
    assert_non_null(h);
    body b;
    get(httpd_port(h), "/data.wacz", NULL, &b);
    assert_int_equal(b.status, 200);
    assert_int_equal(b.b.len, 100000);
    cr_buf_release(&b.b);
    get(httpd_port(h), "/data.wacz", "26-51", &b);
    assert_int_equal(b.status, 206);
    assert_int_equal(b.b.len, 26);
    assert_memory_equal(b.b.data, "abcdefghijklmnopqrstuvwxyz", 26);
    assert_string_equal(b.range, "bytes 26-51/100000");
    cr_buf_release(&b.b);
    get(httpd_port(h), "/data.wacz", "99990-", &b);
    assert_int_equal(b.status, 206);
    assert_int_equal(b.b.len, 10);
    cr_buf_release(&b.b);
    get(httpd_port(h), "/data.wacz", "-4", &b);
    assert_int_equal(b.status, 206);
    assert_int_equal(b.b.len, 4);
    assert_memory_equal(b.b.data, "abcd", 4); /* bytes 99996..99999: i % 26 == 0.. */
    cr_buf_release(&b.b);
    get(httpd_port(h), "/data.wacz", "200000-", &b);
    assert_int_equal(b.status, 416);
    cr_buf_release(&b.b);
    get(httpd_port(h), "/../data.wacz", NULL, &b);
    assert_int_equal(b.status, 404);
    cr_buf_release(&b.b);
    get(httpd_port(h), "/missing.wacz", NULL, &b);
    assert_int_equal(b.status, 404);
    cr_buf_release(&b.b);
    assert_int_equal(httpd_ranges(h), 3);
    assert_int_equal(httpd_requests(h), 7);
    assert_string_equal(httpd_target(h, 1), "/data.wacz");
    httpd_stop(h);
}

/* ---- ReplayWeb.page ------------------------------------------------------ */

/* Why the replay cannot run here, or NULL; *node gets node's path. */
static const char *missing_tools(char *node, size_t len, const char **chromium)
{
    *chromium = getenv("CRAWLD_CHROMIUM") && getenv("CRAWLD_CHROMIUM")[0]
                    ? getenv("CRAWLD_CHROMIUM")
                    : "/usr/bin/chromium";
    if (access(*chromium, X_OK) != 0)
        return "chromium is not installed (make deps installs it)";
    cr_buf out;
    cr_buf_init(&out, 0);
    int rc = sh("command -v node && command -v npm", &out, NULL);
    const char *why = NULL;
    if (rc != 0 || out.data == NULL)
        why = "node or npm is not installed (make deps installs them)";
    else
        snprintf(node, len, "%.*s", (int)strcspn(out.data, "\n"), out.data);
    cr_buf_release(&out);
    return why;
}

/* ui.js and sw.js of replaywebpage@RWP_VERSION, fetched once with npm pack
 * into build/; their folder into dir, or why not. */
static const char *fetch_replaywebpage(char *dir, size_t len)
{
    snprintf(dir, len, "%s/build/replaywebpage-" RWP_VERSION "/package", root);
    char ui[1200], swp[1200];
    snprintf(ui, sizeof ui, "%s/ui.js", dir);
    snprintf(swp, sizeof swp, "%s/sw.js", dir);
    if (exists(ui) && exists(swp))
        return NULL;
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "set -e; d='%s/build/replaywebpage-" RWP_VERSION "'; rm -rf \"$d\"; mkdir -p \"$d\"; "
             "cd \"$d\"; npm pack --silent --fetch-timeout=30000 --fetch-retries=1 "
             "replaywebpage@" RWP_VERSION " >/dev/null; tar xzf replaywebpage-" RWP_VERSION ".tgz",
             root);
    cr_buf err;
    cr_buf_init(&err, 0);
    int rc = sh(cmd, NULL, &err);
    if (rc != 0)
        print_message("npm pack failed (%d): %s\n", rc, err.data ? err.data : "");
    cr_buf_release(&err);
    if (rc != 0 || !exists(ui) || !exists(swp))
        return "npm could not fetch replaywebpage@" RWP_VERSION " (no registry?)";
    return NULL;
}

static void copy(const char *from, const char *to)
{
    const char *argv[] = { "/bin/cp", from, to, NULL };
    assert_int_equal(proc_run(argv, NULL, 0, NULL, NULL), 0);
}

/* The one package archive.wacz wrote under state/wacz/, into out. */
static void find_package(const char *state, char *out, size_t len)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/wacz/*.wacz", state);
    cr_buf o;
    cr_buf_init(&o, 0);
    assert_int_equal(sh(cmd, &o, NULL), 0);
    assert_non_null(o.data);
    size_t n = strcspn(o.data, "\n");
    assert_int_equal(o.data[n], '\n');
    assert_int_equal(o.data[n + 1], '\0'); /* exactly one */
    snprintf(out, len, "%.*s", (int)n, o.data);
    cr_buf_release(&o);
}

static json_t *drive(const char *node, const char *const *args)
{
    char script[1200];
    snprintf(script, sizeof script, "%s/tests/replay/drive.mjs", root);
    const char *argv[16] = { node, script };
    int k = 2;
    for (; args[k - 2] && k < 15; k++)
        argv[k] = args[k - 2];
    argv[k] = NULL;
    cr_buf out, err;
    cr_buf_init(&out, 0);
    cr_buf_init(&err, 0);
    int rc = proc_run(argv, NULL, 0, &out, &err);
    if (rc != 0)
        fail_msg("drive.mjs exited %d: %s", rc, err.data ? err.data : "");
    json_error_t je;
    json_t *j = json_loads(out.data ? out.data : "", 0, &je);
    if (j == NULL)
        fail_msg("drive.mjs printed no JSON: %s / %s", out.data ? out.data : "",
                 err.data ? err.data : "");
    cr_buf_release(&out);
    cr_buf_release(&err);
    return j;
}

static void crawl_packaged_page_replays(void **state)
{
    (void)state;
    char node[512], rwp[1100];
    const char *chromium;
    const char *why = missing_tools(node, sizeof node, &chromium);
    if (why == NULL)
        why = fetch_replaywebpage(rwp, sizeof rwp);
    if (why != NULL) {
        print_message("skipped: %s\n", why);
        skip();
    }

    /* crawl /replay/ with archive.wacz on; a.test's font comes from b.test */
    testsite site;
    const char *site_args[] = { "--hosts", "2", NULL };
    assert_int_equal(testsite_start(&site, site_args), 0);
    char st[256], cfg[256], text[2048];
    snprintf(st, sizeof st, "%s/state", workdir);
    snprintf(cfg, sizeof cfg, "%s/crawl.toml", workdir);
    int p = site.port;
    snprintf(text, sizeof text,
             "[crawl]\nseeds = [\"http://a.test:%d/replay/\"]\nmax_depth = 0\n"
             "[fetch]\nresolve = [\"a.test:%d:127.0.0.1\", \"b.test:%d:127.0.0.1\"]\n"
             "[politeness]\ndelay_ms = 0\n[storage]\nstate_dir = \"%s\"\n"
             "[archive]\nwarc = true\nwacz = true\n[control]\nlisten = \"\"\n",
             p, p, p, st);
    write_file(cfg, text);
    cr_buf err;
    cr_buf_init(&err, 0);
    int rc = proc_crawld((const char *const[]){ "run", "-c", cfg, NULL }, NULL, NULL, &err);
    if (rc != 0)
        fail_msg("crawld run exited %d: %s", rc, err.data);
    assert_non_null(strstr(err.data, "crawld: WACZ "));
    cr_buf_release(&err);
    assert_int_equal(testsite_stop(&site), 0); /* nothing live from here on */

    /* lay out one origin: the embedding page, ui.js, replay/sw.js, the package */
    char serve[256], path[1400], pkg[1024];
    snprintf(serve, sizeof serve, "%s/serve", workdir);
    snprintf(path, sizeof path, "%s/replay", serve);
    assert_int_equal(mkdir(serve, 0755), 0);
    assert_int_equal(mkdir(path, 0755), 0);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/replay/", serve);
    snprintf(path, sizeof path, "%s/ui.js", rwp);
    copy(path, serve);
    copy(path, sub); /* the replay frame loads ui.js beside sw.js */
    snprintf(path, sizeof path, "%s/sw.js", rwp);
    copy(path, sub);
    /* The replay frame's index, as sw.js serves it once it controls the
     * frame. ReplayWeb.page creates the frame when its service worker has
     * registered, which can be before the worker controls the frame's first
     * navigation: that one then reaches the server, and without a page here
     * it found a 404 and the replay never started (about 1 run in 20 on a
     * loaded machine; it failed CI once). A site that embeds ReplayWeb.page
     * needs this page for the same reason. */
    snprintf(path, sizeof path, "%s/replay/index.html", serve);
    write_file(path, "<!doctype html>\n<html><head><script src=\"./ui.js\"></script></head>\n"
                     "<body><replay-app-main></replay-app-main></body></html>\n");
    find_package(st, pkg, sizeof pkg);
    snprintf(path, sizeof path, "%s/archive.wacz", serve);
    copy(pkg, path);
    snprintf(path, sizeof path, "%s/index.html", serve);
    snprintf(text, sizeof text,
             "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>crawld replay</title>\n"
             "<script src=\"ui.js\"></script>\n<style>html, body { margin: 0; height: 100%%; }\n"
             "replay-web-page { display: block; height: 100vh; }</style></head><body>\n"
             "<replay-web-page source=\"archive.wacz\" url=\"http://a.test:%d/replay/\"\n"
             "  replaybase=\"./replay/\" embed=\"replayonly\"></replay-web-page>\n</body></html>\n",
             p);
    write_file(path, text);

    httpd *h = httpd_start(serve);
    assert_non_null(h);
    char origin[64], profile[256], shot[1200], shotdir[1100];
    snprintf(origin, sizeof origin, "http://127.0.0.1:%d/", httpd_port(h));
    snprintf(profile, sizeof profile, "%s/profile", workdir);
    snprintf(shotdir, sizeof shotdir, "%s/build/replay", root);
    mkdir(shotdir, 0755);
    snprintf(shot, sizeof shot, "%s/screenshot.png", shotdir);
    json_t *r = drive(node, (const char *const[]){ "replay", chromium, profile, origin, origin,
                                                   shot, "90000", NULL });
    char *dump = json_dumps(r, JSON_COMPACT);
    print_message("replay: %s\n", dump);
    free(dump);
    const char *stage = json_string_value(json_object_get(r, "stage"));
    assert_non_null(stage);
    if (strcmp(stage, "loaded") != 0) { /* what the browser asked for, to see where it stopped */
        for (size_t i = 0; i < httpd_requests(h) && i < HTTPD_LOG_MAX; i++)
            print_message("replay server request %zu: %.200s\n", i + 1, httpd_target(h, i));
    }
    assert_string_equal(stage, "loaded");
    assert_string_equal(json_string_value(json_object_get(r, "bg")), BG);
    assert_true(json_integer_value(json_object_get(r, "photoWidth")) > 0);
    assert_true(json_integer_value(json_object_get(r, "tileWidth")) > 0);  /* only in url() */
    assert_true(json_integer_value(json_object_get(r, "inlineWidth")) > 0); /* <style> */
    assert_true(json_integer_value(json_object_get(r, "attrWidth")) > 0);   /* style="" */
    assert_int_equal(json_integer_value(json_object_get(r, "fontStatus")), 200);
    assert_int_equal(json_array_size(json_object_get(r, "offOrigin")), 0);
    assert_int_equal(json_array_size(json_object_get(r, "failedOffOrigin")), 0);
    assert_true(json_integer_value(json_object_get(r, "requests")) > 0);
    assert_true(exists(shot));
    json_decref(r);
    bool wacz_asked = false;
    for (size_t i = 0; i < httpd_requests(h) && i < HTTPD_LOG_MAX; i++)
        wacz_asked |= strncmp(httpd_target(h, i), "/archive.wacz", 13) == 0;
    assert_true(wacz_asked);
    print_message("replay server: %zu requests, %zu of them Range requests\n", httpd_requests(h),
                  httpd_ranges(h));

    /* for the record: the plain --screenshot way */
    char profile2[256], shot2[300];
    snprintf(profile2, sizeof profile2, "%s/profile-old", workdir);
    snprintf(shot2, sizeof shot2, "%s/old.png", workdir);
    r = drive(node, (const char *const[]){ "oldstyle", chromium, profile2, origin, shot2,
                                           "30,107,82", NULL });
    long long match = json_integer_value(json_object_get(r, "matching"));
    long long px = json_integer_value(json_object_get(r, "pixels"));
    print_message("chromium --headless --screenshot: %lld of %lld pixels have the page's "
                  "background: %s\n",
                  match, px, match > 0 ? "it shows the replayed page" : "a blank page");
    json_decref(r);
    httpd_stop(h);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(server_answers_ranges),
        cmocka_unit_test(crawl_packaged_page_replays),
    };
    int rc = cmocka_run_group_tests_name("replay", tests, group_setup, group_teardown);
    curl_global_cleanup();
    return rc;
}
