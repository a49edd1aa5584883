/* crawler/sitemaps: sitemaps in the crawl (crawl.toml [sitemaps]).
 *
 * Where sitemaps come from: when an in-scope host's robots.txt has been
 * answered (any final status), its /sitemap.xml (with well_known) and, for
 * a 2xx, every Sitemap line are handed to the crawl's admit function as
 * rows of kind DB_KIND_SITEMAP, depth 0. They are then ordinary rows: the
 * usual seen test (a sitemap is fetched once per crawl), the frontier's
 * robots.txt rules and politeness, the WARC archive. When such a row is
 * answered 200, the crawl feeds its body to a sitemaps_fetch (the parser of
 * crawler/web/sitemap, never the link extractor), which hands:
 *   - each <url><loc> of a urlset to admit as DB_KIND_SEED at depth 0 (the
 *     crawl applies its scope rules and the seen test; lastmod goes along:
 *     a known page last fetched before its <lastmod> is made due now);
 *   - each <sitemap><loc> of an index to admit as DB_KIND_SITEMAP at the
 *     index's depth + 1, while that is at most max_index_depth and the host
 *     has had fewer than max_per_host sitemaps admitted; the rest are
 *     dropped and counted.
 *
 * The protocol's scope rule (sitemaps.org, "Sitemap file location"): a
 * sitemap may list only URLs on its own scheme, host and port, at or below
 * its own directory; the others are rejected and counted (rejected_scope).
 * Cross submission ("Sitemaps & Cross Submits"): a host's robots.txt that
 * names a sitemap on another host proves the host's owner vouches for it,
 * so that sitemap may also list any URL of the host whose robots.txt named
 * it (same scheme, host and port as that robots.txt, any path). The grant
 * is kept in memory, per sitemap URL (at most GRANTS_MAX, more are counted
 * in grants_dropped), and passes to the children of a granted index (the
 * protocol requires an index's children to be on the index's own site).
 * A restarted crawl learns grants again as robots.txt files are re-read;
 * a cross-submitted sitemap fetched before that counts its foreign URLs as
 * rejected_scope.
 *
 * Threads: sitemaps_robots and the sitemaps_fetch calls run on fetcher
 * threads; a sitemaps_fetch belongs to one fetch (one thread). The grant
 * and per-host tables have one mutex (a leaf: admit is never called with
 * it held); counters are relaxed atomics. */
#ifndef CRAWLD_SITEMAPS_H
#define CRAWLD_SITEMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "crawler/web/url.h"
#include "frontier/scope.h"

typedef struct sitemaps sitemaps;
typedef struct sitemaps_fetch sitemaps_fetch;

/* admit's answers, as the crawl's discover gives them. */
enum sitemaps_admitted {
    SITEMAPS_KNOWN = 0,       /* already seen (or no host) */
    SITEMAPS_NEW = 1,         /* a new row, queued */
    SITEMAPS_OUT_OF_SCOPE = 2 /* refused by the crawl's scope rules */
};

/* The crawl's side: canonical fetch form and key of a URL, its depth, its
 * kind (DB_KIND_SEED for a listed page, DB_KIND_SITEMAP for a sitemap) and
 * the <lastmod> given with it (-1: none). Returns an enum sitemaps_admitted
 * or < 0 (a storage error). Called on fetcher threads, no lock held. */
typedef int (*sitemaps_admit_fn)(void *ud, const char *fetch, size_t flen, const char *key,
                                 size_t klen, int depth, int kind, int64_t lastmod_ms);

typedef struct sitemaps_opts {
    bool well_known;          /* admit /sitemap.xml of each in-scope host */
    size_t max_urls;          /* entries per file (sitemap.h's max_urls) */
    size_t max_bytes;         /* uncompressed bytes per file */
    size_t max_loc;           /* bytes of one <loc> */
    int max_index_depth;      /* index levels followed (0: children not followed) */
    int64_t max_per_host;     /* sitemaps admitted per host at most */
    scope *sc;                /* the crawl's scope: robots.txt of hosts outside it
                                 name no sitemaps to us */
    size_t robots_max_bytes;  /* of robots.txt read for Sitemap lines */
} sitemaps_opts;

typedef struct sitemaps_stats {
    uint64_t queued;          /* sitemap rows admitted new */
    uint64_t fetched;         /* sitemap bodies parsed (200 answers) */
    uint64_t urlsets, indexes, gzip; /* of those: kinds, and gzip-compressed */
    uint64_t parse_errors;    /* files with an error (XML, root, gzip, ...; or no
                                 memory to parse them) */
    uint64_t cut;             /* files cut at max_bytes (or at fetch.max_body_bytes) */
    uint64_t urls_listed;     /* <url> entries read */
    uint64_t urls_new;        /* ... admitted as new rows */
    uint64_t urls_known;      /* ... already known to the crawl */
    uint64_t children_listed; /* <sitemap> entries read */
    uint64_t rejected_scope;  /* entries outside the sitemap's host and path (protocol) */
    uint64_t out_of_scope;    /* entries refused by the crawl's own scope */
    uint64_t invalid;         /* entries whose loc is not an absolute http(s) URL */
    uint64_t dropped_urls;    /* entries past max_urls in a file */
    uint64_t dropped_loc;     /* entries with no loc or one longer than max_loc */
    uint64_t dropped_depth;   /* index children past max_index_depth */
    uint64_t dropped_host;    /* index children past max_per_host */
    uint64_t lastmod;         /* entries with a valid <lastmod> */
    uint64_t lastmod_known;   /* ... of a page already known: handed to the re-crawl
                                 schedule (due now if fetched before its lastmod) */
    uint64_t bad_lastmod;
    uint64_t grants;          /* cross-submit grants learnt from robots.txt */
    uint64_t grants_dropped;  /* past GRANTS_MAX */
    uint64_t storage_errors;  /* admit calls that failed */
} sitemaps_stats;

/* Every sitemaps_stats field, in order, for the outputs that list them all
 * (crawler/report/status: JSON and /metrics). */
#define SITEMAPS_STATS_FIELDS(X)                                                                   \
    X(queued) X(fetched) X(urlsets) X(indexes) X(gzip) X(parse_errors) X(cut) X(urls_listed)     \
    X(urls_new) X(urls_known) X(children_listed) X(rejected_scope) X(out_of_scope) X(invalid)    \
    X(dropped_urls) X(dropped_loc) X(dropped_depth) X(dropped_host) X(lastmod) X(lastmod_known)  \
    X(bad_lastmod)                                                                               \
    X(grants) X(grants_dropped) X(storage_errors)

#define SITEMAPS_GRANTS_MAX 100000

/* NULL only on out of memory. o->sc must outlive the result. Caller owns
 * it; free with sitemaps_free. */
sitemaps *sitemaps_new(const sitemaps_opts *o, sitemaps_admit_fn admit, void *ud);
void sitemaps_free(sitemaps *sm);

/* A host's robots.txt answered: robots_url is the URL first asked (canonical
 * fetch form, "scheme://host[:port]/robots.txt"), status the final one (0: no
 * answer), body the final response's. Admits the host's sitemaps as above,
 * resolving each with uc (the calling thread's). */
void sitemaps_robots(sitemaps *sm, url_canon *uc, const char *robots_url, int status,
                     const char *body, size_t len);

/* A sitemap row answered 200: url is its fetch form, depth the row's. uc
 * (the calling thread's) resolves the entries and must outlive the fetch.
 * NULL on out of memory (the body is then not read; counted in
 * parse_errors). Caller owns it until sitemaps_fetch_end. */
sitemaps_fetch *sitemaps_fetch_begin(sitemaps *sm, url_canon *uc, const char *url, size_t len,
                                     int depth);
void sitemaps_fetch_feed(sitemaps_fetch *f, const char *p, size_t n);
/* Ends the body (truncated: the fetcher cut it), counts, logs a parse error
 * on log (may be NULL) as "crawld: sitemap URL: LINE:COL: message", frees f. */
void sitemaps_fetch_end(sitemaps_fetch *f, bool truncated, FILE *log);
/* Frees f without counting (the fetch was aborted). f may be NULL. */
void sitemaps_fetch_abort(sitemaps_fetch *f);

/* OUT: st */
void sitemaps_stats_get(sitemaps *sm, sitemaps_stats *st);

#endif
