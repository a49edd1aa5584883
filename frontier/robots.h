/* frontier/robots: a strict, bounded robots.txt parser and matcher (RFC 9309).
 *
 * Bytes in, an immutable rule set for one crawler out; no I/O. The parser
 * keeps only what applies to the given agent: the rules of every group whose
 * user-agent product token equals the agent's (case-insensitive, merged),
 * else those of every `*` group (merged), else none (allow all); plus every
 * Sitemap line and the chosen groups' Crawl-delay. Matching follows RFC 9309
 * §2.2.2: the longest pattern (in octets, after normalization) that matches
 * the path+query wins, Allow wins a tie, no match means allowed, /robots.txt
 * is always allowed; `*` matches any run of octets, a final `$` anchors the
 * end; both sides are compared percent-encoding-normalized.
 *
 * Cost is bounded: only the first max_bytes of the file are read (a line cut
 * by the cap is dropped), lines longer than ROBOTS_MAX_LINE are skipped, at
 * most ROBOTS_MAX_RULES rules and ROBOTS_MAX_SITEMAPS sitemaps are kept (the
 * rest are counted). Matching never allocates: the rules worth trying are
 * found in O(path × log rules) by walking the path over rules sorted by
 * their literal head (the part before the first '*'), and each costs
 * O(path + pattern) (KMP per '*'-separated segment), never exponential. A
 * robots object is immutable after construction, so any number of threads
 * may call the const functions on it at once; none accepts a NULL robots.
 * What the caller decides (RFC 9309 §2.3): 4xx → robots_allow_all(), 5xx
 * or unreachable → robots_disallow_all(). */
#ifndef CRAWLD_ROBOTS_H
#define CRAWLD_ROBOTS_H

#include <stddef.h>

typedef struct robots robots;

#define ROBOTS_DEFAULT_MAX_BYTES 512000u /* RFC 9309 §2.5: at least 500 KiB */
#define ROBOTS_MAX_LINE 16384u           /* longer lines are skipped */
#define ROBOTS_MAX_RULES 100000u         /* kept for the chosen agent */
#define ROBOTS_MAX_SITEMAPS 10000u
#define ROBOTS_MAX_DELAY_MS 86400000L    /* Crawl-delay is clamped to one day */

typedef enum robots_rule_kind {
    ROBOTS_RULE_NONE,        /* no rule matched: allowed */
    ROBOTS_RULE_ALLOW,       /* an Allow line decided */
    ROBOTS_RULE_DISALLOW,    /* a Disallow line decided */
    ROBOTS_RULE_IMPLICIT,    /* the path is /robots.txt: always allowed */
    ROBOTS_RULE_UNAVAILABLE  /* robots_disallow_all(): robots.txt unavailable */
} robots_rule_kind;

/* The rule that decided a robots_allowed() call. pattern points into the
 * robots object (valid until robots_free) and is the value as written in the
 * file, trimmed; NULL unless kind is ALLOW or DISALLOW. */
typedef struct robots_rule {
    robots_rule_kind kind;
    const char *pattern;
    size_t pattern_len;
    size_t line;             /* 1-based line in the file; 0 when none */
} robots_rule;

typedef struct robots_stats {
    size_t bytes_parsed;     /* after the cap (and the cut last line) */
    size_t bytes_ignored;    /* input beyond what was parsed */
    size_t lines;            /* lines read */
    size_t lines_skipped;    /* too long, no ':', or an unknown key */
    size_t rules;            /* kept for the agent */
    size_t rules_dropped;    /* for the agent, over ROBOTS_MAX_RULES */
    size_t sitemaps_dropped; /* over ROBOTS_MAX_SITEMAPS or not printable */
} robots_stats;

/* Parses the first max_bytes of data (0 means ROBOTS_DEFAULT_MAX_BYTES) for
 * the crawler named agent: its product token is its leading [A-Za-z_-] run
 * ("crawld/1.0" → "crawld"); NULL or no token means only `*` groups apply.
 * Accepted keys, case-insensitive: user-agent (also "useragent", "user
 * agent"), allow, disallow (also "disalow", "dissallow", "dissalow"),
 * sitemap (also "site-map"), crawl-delay (also "crawldelay", "crawl delay").
 * Returns NULL only when memory runs out. Caller owns the result; free with
 * robots_free(). */
robots *robots_parse(const char *data, size_t len, const char *agent, size_t max_bytes);
/* Everything allowed (robots.txt answered 4xx). NULL only on out of memory. */
robots *robots_allow_all(void);
/* Everything but /robots.txt disallowed (5xx or unreachable). NULL only on
 * out of memory. */
robots *robots_disallow_all(void);
/* The rule set a robots.txt fetch implies (RFC 9309 §2.3): a 2xx body is
 * parsed; 4xx allows all; anything else (5xx, no answer: status 0, or a
 * redirect chain that did not end) disallows all. NULL only on out of
 * memory. */
robots *robots_for_status(int status, const char *body, size_t len, const char *agent,
                          size_t max_bytes);
void robots_free(robots *r);

/* 1 if the crawler may fetch path_and_query (the URL's path, '?', query; no
 * scheme, host or fragment; empty means "/"), else 0. Fills *why when why is
 * not NULL. Never allocates; r must not be NULL. */
int robots_allowed(const robots *r, const char *path_and_query, size_t len,
                   robots_rule *why /* OUT: the rule that decided, or NONE */);

/* Writes a one-line description of why into out (always NUL-terminated when
 * size > 0): "allow: /pub/", "disallow: *.gif$", "-" for NONE,
 * "implicit allow: /robots.txt", "disallow all: robots.txt unavailable".
 * Control bytes of the pattern are shown as %XX. Returns 0, or -ENOSPC when
 * the text was truncated. */
int robots_rule_describe(const robots_rule *why, char *out, size_t size);

/* Crawl-delay of the chosen group(s) in milliseconds (the largest valid one
 * when merged groups give several), or -1 when there is none. */
long robots_crawl_delay_ms(const robots *r);
/* Sitemap URLs in file order, whichever group they sit in. The strings are
 * owned by r. */
size_t robots_sitemap_count(const robots *r);
const char *robots_sitemap(const robots *r, size_t i); /* NULL if i is out of range */
/* Number of rules kept for the agent. */
size_t robots_rule_count(const robots *r);
void robots_get_stats(const robots *r, robots_stats *out /* OUT */);

#endif
