/* tests/site/site: the synthetic web the test site serves, as a pure function.
 *
 * Everything a page says (its status, headers that matter, body, links) is a
 * function of (options, host index, canonical request target): no state, no
 * clock, no I/O. The server (server.c) renders bodies from it, the
 * expected-set printer (expect.c) walks the same link lists, so the two agree
 * by construction. The one exception is the /flaky/ counter, which lives in
 * the server. A "target" is the path plus optional "?query" of a URL, in the
 * canonical form site_canon_target() produces.
 *
 * Links are produced while the HTML is rendered (site_html fills both the body
 * and the link list), so a link the printer follows is exactly a link the page
 * contains, in whatever messy form the renderer chose for it. */
#ifndef CRAWLD_TESTSITE_SITE_H
#define CRAWLD_TESTSITE_SITE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define SITE_MAX_HOSTS 702          /* a..z, aa..zz */
#define SITE_MAX_PAGES 10000000L
#define SITE_CHAIN_LEN 8            /* /redirect/hop/1 .. /redirect/hop/8 */
#define SITE_TRAP_MAX 200           /* server answers 404 past this loop/search depth */
#define SITE_FLAKY_PAGES 3
#define SITE_IMAGES 20
#define SITE_DOCS 10
#define SITE_TARGET_MAX 4096        /* longest target the site answers */

typedef struct site_opts {
    uint64_t seed;
    int hosts;                /* 1..SITE_MAX_HOSTS */
    long pages;               /* regular pages per host, 1..SITE_MAX_PAGES */
    int port;                 /* port in absolute links; 80 is left out */
    int specials;             /* 0: only regular pages, requisites and robots.txt */
    int delay_ms;             /* /slow/ pages */
    int retry_after_s;        /* Retry-After of 503 and 429 answers */
    int flaky;                /* /flaky/ answers 503 to the first N requests per host */
    char crawl_delay[16];     /* Crawl-delay of b.test's robots.txt */
    uint64_t big_bytes;       /* /big/huge.html and /big/chunked.html */
    int bomb_mib;             /* decoded size of /big/bomb.html */
    int sitemaps;             /* a.test serves sitemaps (tests/site/sitemaps.h); the
                                 expected set assumes a crawler that reads them */
    char sitemap_lastmod[40]; /* <lastmod> of / in /sitemap.xml ("": 2026-01-01) */
    /* the site over time (epoch.h): off while epoch < 0 */
    int epoch;                /* -1 = off */
    int change_pct;           /* share of pages changed per epoch, 0..100 */
    int remove_pct;           /* share of pages removed per epoch, 0..100 */
    int add_pages;            /* pages added per host per epoch */
    int keep_epochs;          /* the home page links the pages added in the
                                 last keep_epochs epochs only; 0 = all */
    int plain_host;           /* host index that sends no validators; -1 none */
} site_opts;

void site_opts_default(site_opts *o /* OUT */);

typedef struct site site;

/* Caller owns the result; free with site_free(). NULL when memory runs out. */
site *site_new(const site_opts *o);
void site_free(site *s);
const site_opts *site_options(const site *s);

int site_host_count(const site *s);
const char *site_host_name(const site *s, int h);          /* "a.test" */
/* Index of a host name (case-insensitive, an optional ":port" ignored), or -1. */
int site_host_index(const site *s, const char *name, size_t len);
/* "a.test:PORT" (or "a.test" when the port is 80) into out; 0 or -E2BIG. */
int site_authority(const site *s, int h, char *out, size_t cap);

/* Canonicalizes a raw request target (path[?query][#fragment]) with the
 * project's rules: fragment dropped, unreserved %XX decoded (other escapes
 * get upper-case hex), dot segments removed, empty path = "/", query
 * parameters utm_*, fbclid and gclid dropped, the rest sorted bytewise, an
 * empty query dropped. 0, -EINVAL (not starting with '/'), -E2BIG, -ENOMEM. */
int site_canon_target(const char *raw, size_t len, cr_buf *out /* OUT */);

/* What a target is. */
typedef enum site_kind {
    SK_HTML,         /* a generated HTML page (see site_html) */
    SK_REDIRECT,     /* 3xx; site_redirect gives the Location */
    SK_STATUS,       /* a fixed error status, short text body */
    SK_RETRY,        /* 503 or 429 with Retry-After (seconds, or a date) */
    SK_FLAKY,        /* 503 + Retry-After for the first N requests per host, then HTML */
    SK_SLOW,         /* HTML after delay_ms */
    SK_TRICKLE,      /* HTML whose body is dribbled out over delay_ms */
    SK_BIG,          /* big_bytes of HTML filler with Content-Length, no links */
    SK_CHUNKED,      /* the same without a length (chunked) */
    SK_BOMB,         /* Content-Encoding: gzip, bomb_mib MiB of spaces decoded */
    SK_PNG,
    SK_CSS,
    SK_JS,
    SK_PDF,
    SK_FONT,         /* font/woff2 bytes (not a font a browser accepts) */
    SK_TEXT,         /* text/plain that contains markup with a link */
    SK_ROBOTS,       /* /robots.txt: 200 text, 404 or 500 by host */
    SK_SITEMAP       /* a sitemap or a sitemap-only page (tests/site/sitemaps.h) */
} site_kind;

typedef struct site_res {
    site_kind kind;
    int status;            /* the answer once warmed up (flaky: 200) */
    int n;                 /* image/doc number, redirect code, retry kind ... */
    int html;              /* which HTML generator (SK_HTML, SK_FLAKY, SK_SLOW, SK_TRICKLE) */
    long page;             /* regular page number, calendar month index, trap depth */
    const char *ctype;     /* Content-Type */
    int parsed;            /* 1 when a crawler must parse the body for links */
} site_res;

/* Target of regular page i into out ("/", "/secK/", ...); the regular page
 * number of a canonical target, or -1. */
void site_page_target(long i, char *out, size_t cap);
long site_page_of(const site *s, const char *target);

/* Looks up a canonical target. 0 with *r filled, or -ENOENT (answer 404). */
int site_lookup(const site *s, int h, const char *target, site_res *r /* OUT */);

typedef enum site_elem {
    SE_A,
    SE_AREA,
    SE_IFRAME,
    SE_IMG,
    SE_IMG_SRCSET,
    SE_SCRIPT,
    SE_LINK_STYLESHEET,
    SE_LINK_ICON,
    SE_LINK_CANONICAL,
    SE_META_REFRESH,
    SE_STYLE,              /* url() in a <style> element */
    SE_STYLE_ATTR,         /* url() in a style attribute */
    SE_CSS_URL,            /* url() in a stylesheet */
    SE_CSS_IMPORT          /* @import in a stylesheet */
} site_elem;

typedef struct site_link {
    int host;              /* target host index */
    char *target;          /* canonical target; owned */
    site_elem elem;
    int requisite;         /* page requisite (img, script, stylesheet, icon) */
    int nofollow;          /* rel=nofollow, or the page says meta robots nofollow */
} site_link;

typedef struct site_links {
    site_link *v;
    size_t n;
    size_t cap;
} site_links;

void site_links_release(site_links *l);

/* Renders an HTML resource (r->html set) into html (may be NULL) and appends
 * its links, in document order, to links (may be NULL). 0 or -ENOMEM. */
int site_html(const site *s, int h, const char *target, const site_res *r,
              cr_buf *html, site_links *links);

/* For SK_REDIRECT: the Location header value (may be empty: a 3xx without
 * Location) into loc, and the canonical target it leads to into *to_host and
 * to (left empty when there is no Location). 0 or -ENOMEM. */
int site_redirect(const site *s, int h, const char *target, const site_res *r,
                  cr_buf *loc, int *to_host /* OUT */, cr_buf *to);

/* For SK_CSS: the stylesheet into css (may be NULL) and its references
 * (url() and @import, all requisites), in order, appended to links (may be
 * NULL). Only the /replay/ family's stylesheets have any. 0 or -ENOMEM. */
int site_css(const site *s, int h, const char *target, const site_res *r, cr_buf *css,
             site_links *links);

/* Small non-HTML bodies: SK_STATUS, SK_RETRY, SK_PNG, SK_CSS, SK_JS, SK_PDF, SK_FONT,
 * SK_TEXT, SK_ROBOTS. 0 or -ENOMEM. */
int site_body(const site *s, int h, const char *target, const site_res *r, cr_buf *out);

/* robots.txt of host h: its status (200, 404 or 500) and, for 200, whether
 * the group for "*" allows the canonical target (longest match wins, Allow
 * wins a tie, '*' and '$' patterns, rules compared with unreserved escapes
 * decoded, matched against path?query). 5xx: nothing allowed; 4xx: all. */
int site_robots_status(const site *s, int h);
int site_robots_allowed(const site *s, int h, const char *target);

/* Filler size of SK_BIG / SK_CHUNKED bodies: writes bytes [pos, pos+n). */
void site_big_fill(const site *s, uint64_t pos, char *buf, size_t n);

#endif
