/* tests/site/expect: the exact set of URLs a correct crawl of the site fetches.
 *
 * A breadth-first walk over the generated link graph (no HTTP), with the
 * same generator the server uses. The rules it assumes a crawler follows:
 *
 *  - Seeds have depth 0 and hop 0. A link found on a page gets depth + 1 and
 *    hop 0; a redirect's Location is a discovered link with depth + 1 and
 *    hop + 1. Depth is the shortest distance from a seed (breadth-first).
 *  - A discovered URL is checked, in this order: scope, limits (max depth,
 *    max redirect hops, URL length, path depth, repeated segment, query
 *    parameter count), robots.txt; only then the seen test. A URL rejected
 *    by a check is not marked seen, so another path to it may still admit it.
 *  - robots.txt: the group for "*" (a crawler whose product token is not
 *    "BadBot"); 200 = its rules, 4xx = allow all, 5xx = disallow all. A
 *    host's robots.txt is fetched as soon as one of its URLs passes scope
 *    and limits, even when robots.txt then disallows that URL.
 *  - Links are taken only from 200 answers whose Content-Type is text/html
 *    or application/xhtml+xml (case-insensitive), never from error pages,
 *    3xx bodies, text/plain, scripts or PDFs (CSS: see requisites). Every link kind counts:
 *    a/area href, iframe src, img src and srcset, script src, link href
 *    (stylesheet, icon, canonical) and meta refresh. The first <base href>
 *    wins. rel=nofollow links and all links of a page with meta robots
 *    nofollow are skipped unless follow_nofollow.
 *  - Requisites (img, script, stylesheet, icon, url() in <style> and style
 *    attributes) obey scope like any link, except that with
 *    fetch_requisites those of an in-scope page are fetched from any host
 *    of the site (with requisites_same_host: only from the page's own host)
 *    and down to max_depth + requisite_depth. A stylesheet's url() and
 *    @import references are requisites too (CSS is read only for them; the
 *    test site's only such stylesheets are under /replay/).
 *  - /flaky/ pages are retried until they answer 200; slow, oversized and
 *    gzip-bomb pages count as fetched whatever the crawler's caps did (they
 *    contain no links). A 3xx without Location leads nowhere.
 *  - Limits: path depth = number of '/' in the path; repeated segment = the
 *    longest run of one identical non-empty segment in a row; query
 *    parameters = '&'-separated parameters of the canonical query; URL length
 *    in bytes of the canonical URL. 0 (or -1 for depth) turns a limit off.
 *  - Nothing depends on timing, politeness or crawl order, except that
 *    depth limits assume pages are processed in order of depth.
 */
#ifndef CRAWLD_TESTSITE_EXPECT_H
#define CRAWLD_TESTSITE_EXPECT_H

#include <stdio.h>

#include "tests/site/site.h"

typedef enum expect_scope {
    EXPECT_HOST,      /* the seeds' hosts (also "domain": every *.test is its own) */
    EXPECT_PREFIX,    /* URLs starting with a seed up to the last '/' of its path */
    EXPECT_ALL        /* every host of the site */
} expect_scope;

#define EXPECT_MAX_SEEDS 64

typedef struct expect_opts {
    expect_scope scope;
    const char *seeds[EXPECT_MAX_SEEDS];   /* absolute URLs; none = http://a.test:PORT/ */
    int nseeds;
    long max_depth;           /* -1: unlimited */
    int max_redirects;        /* hops of consecutive redirects */
    int max_path_depth;       /* 0: off */
    int max_repeat_segment;   /* 0: off */
    int max_query_params;     /* 0: off */
    int max_url_length;       /* 0: off */
    int follow_nofollow;
    int fetch_requisites;
    int requisites_same_host;
    long requisite_depth;     /* levels past max_depth for requisites */
    int with_robots;          /* list each contacted host's /robots.txt */
    int annotate;             /* URL TAB depth TAB status */
    long max_urls;            /* give up (unbounded trap) past this many */
} expect_opts;

void expect_opts_default(expect_opts *o /* OUT */);

/* Writes the sorted set, one URL per line, to out. 0, or a negative errno
 * with a message in err (e.g. -EINVAL for a seed not on the site, -E2BIG
 * when the set passes max_urls). */
int expect_print(const site *s, const expect_opts *o, FILE *out, char *err, size_t errcap);

#endif
