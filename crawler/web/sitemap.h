/* crawler/web/sitemap: a strict streaming parser for sitemaps
 * (sitemaps.org protocol 0.9): <urlset> and <sitemapindex>, plain or
 * gzip-compressed, fed in chunks of any size as the body arrives.
 *
 * libxml2's push parser with a SAX2 handler reads the XML; zlib inflates a
 * body that starts with the gzip magic (1f 8b), whatever the Content-Type
 * said. No tree is built: each <url> or <sitemap> entry goes out through a
 * callback when its end tag is read, and only the text of the <loc> and
 * <lastmod> being read is held (capped by max_loc).
 *
 * What the protocol says and this parser enforces:
 * - the root is <urlset> (entries <url>) or <sitemapindex> (entries
 *   <sitemap>), in the namespace http://www.sitemaps.org/schemas/sitemap/0.9;
 *   another root is an error; other elements (changefreq, priority,
 *   extensions in other namespaces) are skipped;
 * - at most max_urls entries per file (50,000), and at most max_bytes
 *   uncompressed bytes (52,428,800, also for a gzip file: the limit is on
 *   the inflated size, so a gzip bomb is cut there); entries past the first
 *   limit are counted, not emitted; bytes past the second are not parsed
 *   (the file counts as cut, SITEMAP_ERR_TOO_BIG);
 * - <loc> is required; its value is entity-decoded and trimmed of ASCII
 *   whitespace; longer than max_loc bytes (2048 by default: "less than
 *   2,048 characters") and it is dropped and counted;
 * - <lastmod> in W3C Datetime, every form: YYYY, YYYY-MM, YYYY-MM-DD,
 *   YYYY-MM-DDThh:mmTZD, YYYY-MM-DDThh:mm:ssTZD, YYYY-MM-DDThh:mm:ss.sTZD
 *   (TZD: Z, +hh:mm or -hh:mm); a bad one is counted and the entry kept
 *   without it.
 * The loc is handed out raw: the caller resolves, canonicalizes and applies
 * the protocol's scope rule (sitemap_loc_in_scope()).
 *
 * Hostile input has a bounded cost: a DOCTYPE is refused (so no entity is
 * ever declared: no external entities, no entity expansion), nothing is
 * ever fetched (XML_PARSE_NONET), elements nest at most max_depth deep,
 * and the byte caps above hold for compressed and plain input alike. The
 * first error stops the parse and is kept with its line and column.
 *
 * Threads: one parser per thread at a time; xmlInitParser() must have run
 * (in main). libxml2's own error output is switched off per parser. */
#ifndef CRAWLD_SITEMAP_H
#define CRAWLD_SITEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sitemap_parser sitemap_parser;

#define SITEMAP_DEFAULT_MAX_URLS 50000
#define SITEMAP_DEFAULT_MAX_BYTES 52428800
#define SITEMAP_DEFAULT_MAX_LOC 2048
#define SITEMAP_DEFAULT_MAX_DEPTH 16

enum sitemap_kind {
    SITEMAP_UNKNOWN = 0,   /* no root element seen (yet) */
    SITEMAP_URLSET = 1,
    SITEMAP_INDEX = 2
};

typedef struct sitemap_entry {
    int kind;              /* SITEMAP_URLSET: a page (<url>); SITEMAP_INDEX:
                              a child sitemap (<sitemap>) */
    const char *loc;       /* trimmed, NUL-terminated, never empty */
    size_t loc_len;
    bool has_lastmod;
    int64_t lastmod_ms;    /* Unix time in ms, UTC; valid when has_lastmod */
} sitemap_entry;

/* Called once per entry, in file order; every pointer is valid during the
 * call only. */
typedef void (*sitemap_cb)(void *ud, const sitemap_entry *e);

/* Every field 0 means its default. */
typedef struct sitemap_opts {
    size_t max_urls;       /* entries per file (50000) */
    size_t max_bytes;      /* uncompressed bytes per file (52428800) */
    size_t max_loc;        /* bytes of one <loc> (2048) */
    size_t max_depth;      /* nested elements (16) */
} sitemap_opts;

enum sitemap_error {
    SITEMAP_OK = 0,
    SITEMAP_ERR_XML,       /* not well-formed XML (libxml2's message) */
    SITEMAP_ERR_ROOT,      /* root is not urlset / sitemapindex in the 0.9 namespace */
    SITEMAP_ERR_DOCTYPE,   /* a DOCTYPE (refused: no entities) */
    SITEMAP_ERR_DEPTH,     /* nested deeper than max_depth */
    SITEMAP_ERR_TOO_BIG,   /* more than max_bytes uncompressed: cut there */
    SITEMAP_ERR_GZIP,      /* corrupt gzip stream */
    SITEMAP_ERR_EMPTY,     /* no root element at all */
    SITEMAP_ERR_NOMEM
};

typedef struct sitemap_stats {
    uint64_t entries;      /* entries emitted */
    uint64_t over_limit;   /* entries past max_urls (not emitted) */
    uint64_t no_loc;       /* entries without a (non-empty) <loc> */
    uint64_t loc_too_long; /* entries whose <loc> passed max_loc */
    uint64_t lastmod;      /* entries with a valid <lastmod> */
    uint64_t bad_lastmod;  /* <lastmod> values that are not W3C Datetime */
    uint64_t wrong_entry;  /* <sitemap> in a urlset or <url> in an index */
    uint64_t bytes_in;     /* bytes fed (compressed when gzip) */
    uint64_t bytes_xml;    /* uncompressed bytes parsed */
    bool gzip;             /* the input was gzip */
    int kind;              /* enum sitemap_kind */
} sitemap_stats;

/* A parser (reused across files with sitemap_reset). NULL only on out of
 * memory. Caller owns the result; free with sitemap_free. */
sitemap_parser *sitemap_new(const sitemap_opts *o, sitemap_cb cb, void *ud);
void sitemap_free(sitemap_parser *p);
/* Starts a new file: counters, error and state cleared. */
void sitemap_reset(sitemap_parser *p);
/* Parses the next n bytes. 0, or a negative enum sitemap_error once the
 * parse has stopped (later calls do nothing and return it again). */
int sitemap_feed(sitemap_parser *p, const void *data, size_t n);
/* Ends the file (a truncated document is an XML error). 0 or -error. */
int sitemap_finish(sitemap_parser *p);
/* The first error as "LINE:COL: message" (LINE:COL of the uncompressed
 * XML), or "" when there was none. Valid until the next reset. */
const char *sitemap_error_text(const sitemap_parser *p);
/* OUT: st */
void sitemap_stats_get(const sitemap_parser *p, sitemap_stats *st);
/* A short name for an enum sitemap_error ("xml", "root", ...). */
const char *sitemap_error_name(int err);

/* Parses a W3C Datetime (the six forms above) into Unix ms, UTC. Dates
 * without a time are midnight UTC. 0, or -EINVAL. OUT: ms */
int sitemap_parse_datetime(const char *s, size_t n, int64_t *ms);

/* The protocol's scope rule: 1 if url (canonical, absolute) lies at or
 * below the directory of sitemap_url (canonical): same scheme, host and
 * port, and a path starting with sitemap_url's path up to its last '/'.
 * A sitemap at http://h/a/s.xml may list http://h/a/x, not http://h/b/x
 * nor https://h/a/x. 0 otherwise. */
int sitemap_loc_in_scope(const char *sitemap_url, size_t slen, const char *url, size_t ulen);

#endif
