/* frontier/schedule: when a fetched page is due again (re-crawl).
 *
 * A pure policy, no I/O and no clock: the base interval of a URL is the
 * first matching rule's (a glob over its path and query, or over the whole
 * URL when the pattern holds "://"), else after_s; 0 = never scheduled (the
 * one-pass crawl). With adaptive on, the interval then follows what each
 * fetch found: changed -> half the last interval, unchanged -> twice it,
 * clamped to [min_s, max_s]; without it, always the base interval. A page
 * found gone (404/410 after a 200) is never due again; a re-crawl that
 * fails (no answer, or 5xx/429 to its last attempt: an outage) leaves the
 * row failed with its interval, and it is due again one interval after the
 * failure (storage/db's db_reader_due). Where the due times live: storage/db's
 * fetch history (db_record_history, db_reader_due; db_make_due is the hook
 * a sitemap's <lastmod> uses to make a known URL due now). Immutable after
 * schedule_new: any thread may call it. */
#ifndef CRAWLD_SCHEDULE_H
#define CRAWLD_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct schedule schedule;

typedef struct schedule_rule {
    const char *pattern; /* glob: '*' any run of bytes; copied */
    size_t len;
    int64_t seconds;     /* >= 1 */
} schedule_rule;

typedef struct schedule_opts {
    int64_t after_s;     /* 0: nothing is scheduled unless a rule matches */
    int64_t min_s, max_s;
    bool adaptive;
    const schedule_rule *rules;
    size_t n_rules;
} schedule_opts;

/* What a fetch found, for the next interval. */
enum schedule_outcome {
    SCHEDULE_FIRST = 0,   /* first fetch (or no earlier interval): the base */
    SCHEDULE_CHANGED,     /* new payload */
    SCHEDULE_UNCHANGED,   /* 304, or the same payload digest */
    SCHEDULE_GONE,        /* 404/410 after a 200: never again */
    SCHEDULE_OTHER        /* any other answer (redirect, error page): the base */
};

/* NULL on bad options (min_s > max_s, a rule without seconds) or no
 * memory. Caller owns the result; free with schedule_free. */
schedule *schedule_new(const schedule_opts *o);
void schedule_free(schedule *s);

/* Whether anything can ever be scheduled (after_s > 0 or a rule). */
bool schedule_enabled(const schedule *s);

/* The base interval of url (url_len bytes), seconds; 0 = not scheduled. */
int64_t schedule_base_s(const schedule *s, const char *url, size_t url_len);

/* The interval after a fetch that found `outcome`, given the interval that
 * led to it (prev_s; 0 = none). 0 = not scheduled again. */
int64_t schedule_next_s(const schedule *s, const char *url, size_t url_len, int64_t prev_s,
                        int outcome);

/* '*'-glob match of pattern against text (both with lengths). */
bool schedule_glob(const char *pattern, size_t plen, const char *text, size_t tlen);

#endif
