/* crawler/cmd_robots: `crawld robots` decides URLs against a robots.txt,
 * read from a file or fetched as the crawler fetches it (redirects followed
 * up to 5 hops; 4xx allows all; 5xx or no answer disallows all). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/buf.h"
#include "crawler/web/fetch.h"
#include "crawler/web/url.h"
#include "crawler/wire.h"
#include "frontier/robots.h"

static const char usage[] =
    "usage: crawld robots [--file FILE | --url URL] [--agent NAME] [-c FILE] [--set K=V]...\n"
    "                     [--] URL...\n"
    "\n"
    "Prints one line per URL: allowed or disallowed, a tab, the URL, a tab, the\n"
    "rule that decided (or -), per RFC 9309. The robots.txt comes from FILE, or\n"
    "is fetched from URL (its /robots.txt when URL has another path) as the\n"
    "crawler fetches it: redirects followed up to 5 hops, 4xx allows all, 5xx\n"
    "or no answer disallows all. The agent defaults to crawl.robots_agent.\n"
    "Exits 0 when every URL is allowed, 1 when any is disallowed.\n";

#define MAX_HOPS 5

typedef struct fetched {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    long status;
    char *location;
    cr_buf body;
    char reason[512];
} fetched;

static int on_response(void *ctx, const fetch_job *job, const fetch_response *r)
{
    (void)job;
    fetched *f = ctx;
    f->status = r->status;
    if (r->location)
        f->location = strdup(r->location);
    return 0;
}

static int on_body(void *ctx, const fetch_job *job, const char *p, size_t n)
{
    (void)job;
    fetched *f = ctx;
    cr_buf_append(&f->body, p, n); /* capped: the rest is not parsed anyway */
    return 0;
}

static void on_done(void *ctx, const fetch_job *job, const fetch_result *r)
{
    (void)job;
    fetched *f = ctx;
    pthread_mutex_lock(&f->lock);
    if (r->error != FETCH_OK && r->error != FETCH_ERR_BODY_TOO_LARGE)
        f->status = 0;
    snprintf(f->reason, sizeof f->reason, "%s", r->reason ? r->reason : "");
    f->done = true;
    pthread_cond_signal(&f->cond);
    pthread_mutex_unlock(&f->lock);
}

/* Fetches robots.txt for url's origin; returns the rule set (NULL: OOM). */
static robots *fetch_robots(const crawl_config *cfg, url_canon *uc, const char *url,
                            const char *agent)
{
    fetch_opts fo;
    wire_fetch_opts(cfg, &fo);
    fo.threads = 1;
    fo.connections = 1;
    fo.keep_request = false;
    fetched f = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
    cr_buf_init(&f.body, (size_t)cfg->politeness.robots_max_bytes);
    fetch_hooks hooks = { .on_response = on_response, .on_body = on_body, .on_done = on_done,
                          .ctx = &f };
    fetcher *ft = NULL;
    robots *r = NULL;
    cr_buf cur;
    cr_buf_init(&cur, 0);
    url_reject why;
    if (url_canon_forms(uc, url, strlen(url), "/robots.txt", 11, &cur, NULL, &why) < 0) {
        fprintf(stderr, "crawld robots: --url %s: %s\n", url, url_reject_str(why));
        goto out;
    }
    if (fetcher_new(&fo, &hooks, &ft) < 0) {
        fprintf(stderr, "crawld robots: cannot start the fetcher\n");
        goto out;
    }
    for (int hop = 0;; hop++) {
        f.done = false;
        f.status = 0;
        free(f.location);
        f.location = NULL;
        cr_buf_clear(&f.body);
        fetch_job job = { .id = 1, .url = cur.data, .hops = (unsigned)hop, .user = NULL };
        if (fetcher_submit(ft, &job, -1) < 0)
            break;
        pthread_mutex_lock(&f.lock);
        while (!f.done)
            pthread_cond_wait(&f.cond, &f.lock);
        pthread_mutex_unlock(&f.lock);
        if (f.status == 0)
            fprintf(stderr, "crawld robots: no answer: %s\n", f.reason);
        if (f.status < 300 || f.status >= 400 || f.location == NULL || hop == MAX_HOPS)
            break;
        cr_buf next;
        cr_buf_init(&next, 0);
        if (url_canon_forms(uc, cur.data, cur.len, f.location, strlen(f.location), &next, NULL,
                            &why) < 0) {
            cr_buf_release(&next);
            break;
        }
        cr_buf_release(&cur);
        cur = next;
    }
    fprintf(stderr, "crawld robots: %s answered %ld\n", cur.data, f.status);
    r = robots_for_status((int)f.status, f.body.data, f.body.len, agent,
                          (size_t)cfg->politeness.robots_max_bytes);
out:
    if (ft) {
        fetcher_stop(ft, 0);
        fetcher_free(ft);
    }
    free(f.location);
    cr_buf_release(&f.body);
    cr_buf_release(&cur);
    return r;
}

static robots *read_robots(const crawl_config *cfg, const char *path, const char *agent)
{
    FILE *in = fopen(path, "rb");
    if (in == NULL) {
        fprintf(stderr, "crawld robots: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    cr_buf b;
    cr_buf_init(&b, (size_t)cfg->politeness.robots_max_bytes);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0 && cr_buf_append(&b, buf, n) == 0)
        ;
    fclose(in);
    robots *r = robots_parse(b.data ? b.data : "", b.len, agent,
                             (size_t)cfg->politeness.robots_max_bytes);
    cr_buf_release(&b);
    return r;
}

/* The path and query of a canonical URL: after the host, up to the end. */
static const char *path_of(const char *url, size_t len, size_t *plen)
{
    const char *p = strstr(url, "://");
    p = p ? strchr(p + 3, '/') : NULL;
    if (p == NULL) {
        *plen = 1;
        return "/";
    }
    *plen = len - (size_t)(p - url);
    return p;
}

int cmd_robots(int argc, char **argv)
{
    cli_conf cc = { 0 };
    const char *file = NULL, *from_url = NULL, *agent = NULL;
    int first = argc;
    const cli_opt opts[] = {
        { "--file", NULL, "FILE", &file, NULL,
          "the robots.txt to decide by" },
        { "--url", NULL, "URL", &from_url, NULL,
          "fetch the robots.txt of this URL's origin instead" },
        { "--agent", NULL, "NAME", &agent, NULL,
          "the user agent the rules are chosen for (default: crawl.robots_agent)" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    int code = cli_parse(&cc, "robots", usage, opts, CLI_REST_OPERANDS, argc, argv, NULL, &first);
    if (code != CLI_GO_ON)
        return code;
    if ((file == NULL) == (from_url == NULL)) {
        fprintf(stderr, "crawld robots: give one of --file FILE or --url URL\n");
        return 2;
    }
    if (first >= argc) {
        fprintf(stderr, "crawld robots: no URL to decide (see --help)\n");
        return 2;
    }
    crawl_config cfg;
    if (cli_conf_load(&cc, "robots", &cfg, false) != 0)
        return 1;
    if (agent == NULL)
        agent = cfg.crawl.robots_agent;
    url_policy pol;
    wire_url_policy(&cfg, &pol);
    url_canon *uc = url_canon_new(&pol);
    robots *r = NULL;
    int rc = 1;
    if (uc)
        r = file ? read_robots(&cfg, file, agent) : fetch_robots(&cfg, uc, from_url, agent);
    if (r == NULL)
        goto out;
    rc = 0;
    cr_buf out;
    cr_buf_init(&out, 0);
    for (int i = first; i < argc; i++) {
        url_reject why;
        /* RFC 9309 matches the URL as it is requested: the fetch form */
        if (url_canon_forms(uc, NULL, 0, argv[i], strlen(argv[i]), &out, NULL, &why) < 0) {
            printf("invalid\t%s\t%s\n", argv[i], url_reject_str(why));
            rc = 1;
            continue;
        }
        size_t plen;
        const char *path = path_of(out.data, out.len, &plen);
        robots_rule rule;
        int ok = robots_allowed(r, path, plen, &rule);
        char text[512];
        robots_rule_describe(&rule, text, sizeof text);
        printf("%s\t%s\t%s\n", ok ? "allowed" : "disallowed", out.data, text);
        if (!ok)
            rc = 1;
    }
    cr_buf_release(&out);
out:
    robots_free(r);
    url_canon_free(uc);
    config_release(&cfg);
    return rc;
}
