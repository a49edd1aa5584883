/* config/config: option table, defaults, loading, --set, writing.
 *
 * Every option is one row of `options` below: section, name, type, where it
 * lands in crawl_config (offsetof), bounds, default written as TOML text,
 * and a one-line doc. Defaults are applied by parsing each row's default
 * through the same path as a user's file, so a default can never bypass the
 * type and range checks. Loading validates the whole document before it
 * applies anything, so a bad file leaves the configuration as it was. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "config/toml.h"

/* T_AUTO: an integer in [min, max] or the string "auto" (stored as
 * CONFIG_AUTO). */
typedef enum opt_type { T_BOOL, T_INT, T_FLOAT, T_STR, T_LIST, T_ENUM, T_AUTO } opt_type;

/* An enumeration's names and their values (as nginx's ngx_conf_enum_t):
 * the value is written beside its name, never implied by a position. */
typedef struct enum_pair {
    const char *name;
    int value;
} enum_pair;

static const enum_pair scope_names[] = {
    { "host", SCOPE_HOST }, { "domain", SCOPE_DOMAIN }, { "prefix", SCOPE_PREFIX },
    { "any", SCOPE_ANY },   { NULL, 0 },
};

static const enum_pair requisites_scope_names[] = {
    { "same-host", REQUISITES_SAME_HOST }, { "any", REQUISITES_ANY }, { NULL, 0 },
};

static const enum_pair verify_names[] = {
    { "never", VERIFY_NEVER }, { "always", VERIFY_ALWAYS }, { "in-scope", VERIFY_IN_SCOPE },
    { NULL, 0 },
};

typedef struct option {
    const char *section;
    const char *name;
    opt_type type;
    size_t off;
    double min, max;       /* T_INT, T_FLOAT, T_AUTO: inclusive bounds */
    const char *def;       /* default, as TOML text */
    const struct enum_pair *choices; /* T_ENUM: {name, value} pairs, NULL-ended */
    const char *doc;
} option;

#define F(sec, field) offsetof(crawl_config, sec.field)
#define BOOL(sec, name, def, doc) { #sec, #name, T_BOOL, F(sec, name), 0, 0, def, NULL, doc }
#define INT(sec, name, lo, hi, def, doc) { #sec, #name, T_INT, F(sec, name), lo, hi, def, NULL, doc }
#define AUTO(sec, name, lo, hi, doc) { #sec, #name, T_AUTO, F(sec, name), lo, hi, "\"auto\"", NULL, doc }
#define FLT(sec, name, lo, hi, def, doc) { #sec, #name, T_FLOAT, F(sec, name), lo, hi, def, NULL, doc }
#define STR(sec, name, def, doc) { #sec, #name, T_STR, F(sec, name), 0, 0, def, NULL, doc }
#define LIST(sec, name, def, doc) { #sec, #name, T_LIST, F(sec, name), 0, 0, def, NULL, doc }
#define ENUM(sec, name, choices, def, doc) { #sec, #name, T_ENUM, F(sec, name), 0, 0, def, choices, doc }

static const option options[] = {
    LIST(crawl, seeds, "[]", "URLs the crawl starts from"),
    STR(crawl, seeds_file, "\"\"", "file with more seed URLs, one per line (\"\" for none; re-read on SIGHUP)"),
    STR(crawl, user_agent, "\"crawld/0.1\"", "User-Agent header sent with every request (add a contact URL for real crawls)"),
    STR(crawl, robots_agent, "\"crawld\"", "product token matched against robots.txt user-agent lines"),
    ENUM(crawl, scope, scope_names, "\"host\"", "what is in scope: the seeds' hosts, their registrable domains, URLs under a seed, or anything"),
    LIST(crawl, include, "[]", "URL patterns (* wildcard) that are in scope besides the scope rule"),
    LIST(crawl, exclude, "[]", "URL patterns (* wildcard) never fetched"),
    INT(crawl, max_depth, 0, 100000, "50", "links followed from a seed at most (0: the seeds only)"),
    INT(crawl, max_pages, 0, 1e15, "0", "pages fetched in all at most (0: no limit)"),
    INT(crawl, max_pages_per_host, 0, 1e15, "0", "pages fetched per host at most (0: no limit)"),
    INT(crawl, max_links_per_page, 1, 10000000, "100000",
        "links read from one page at most; the rest are dropped and counted (links_dropped)"),
    BOOL(crawl, fetch_requisites, "true", "fetch what in-scope pages need to render (images, CSS and what it loads, fonts, scripts) outside the scope, past max_depth, as requisites_scope and requisite_depth allow"),
    ENUM(crawl, requisites_scope, requisites_scope_names, "\"any\"", "hosts requisites come from: the host of the page or stylesheet that needs them, or any (a CDN); each host's robots.txt and politeness still apply"),
    INT(crawl, requisite_depth, 0, 100, "3", "levels of requisites fetched past max_depth (a page's stylesheet, its @import, the images and fonts they load; 0: requisites obey max_depth)"),
    BOOL(crawl, follow_nofollow, "false", "follow rel=nofollow links and pages with meta robots nofollow"),
    BOOL(crawl, daemon, "false", "keep running when the frontier is empty, waiting for seeds from the API"),
    INT(crawl, max_path_depth, 1, 1000, "32", "trap limit: path segments per URL"),
    INT(crawl, max_repeated_segment, 1, 1000, "3", "trap limit: longest run of one path segment repeated in a row (/a/a/a/ is 3)"),
    INT(crawl, max_query_params, 0, 10000, "32", "trap limit: query parameters per URL (0: no query allowed)"),

    INT(fetch, threads, 1, 64, "2", "fetcher threads, each driving one libcurl multi handle"),
    AUTO(fetch, connections, 1, 65536,
         "transfers in flight in all, across threads; \"auto\": one for every host that is ready, as many as the file-descriptor limit allows (at most 8192)"),
    INT(fetch, connect_timeout_ms, 1, 600000, "10000", "connect timeout"),
    INT(fetch, timeout_ms, 1, 3600000, "60000", "whole-transfer timeout"),
    INT(fetch, low_speed_bytes, 0, 1e9, "1000", "abort a transfer slower than this many bytes/s ..."),
    INT(fetch, low_speed_time_s, 0, 3600, "30", "... for this many seconds (0: never)"),
    INT(fetch, max_body_bytes, 1024, 1e12, "10485760", "body size cap, applied to the decoded size"),
    INT(fetch, max_header_bytes, 1024, 1e8, "65536", "response header size cap"),
    INT(fetch, max_redirects, 0, 100, "5", "redirect hops followed from one URL"),
    BOOL(fetch, http2, "true", "use HTTP/2 where the server offers it"),
    LIST(fetch, resolve, "[]", "pin names to addresses, as curl --resolve: [\"host:port:addr\", ...]"),

    BOOL(politeness, obey_robots, "true", "fetch and obey robots.txt (RFC 9309)"),
    INT(politeness, delay_ms, 0, 86400000, "1000", "least time between two requests to one host"),
    FLT(politeness, delay_factor, 0, 1000, "2.0", "adaptive delay: this many times the host's last response time"),
    INT(politeness, max_delay_ms, 0, 86400000, "30000", "cap on the adaptive delay"),
    INT(politeness, max_per_host, 1, 64, "1", "requests in flight per host at most"),
    INT(politeness, robots_cache_s, 0, 31536000, "86400", "how long a robots.txt is cached"),
    INT(politeness, robots_max_bytes, 1024, 1e8, "512000", "bytes of robots.txt parsed at most"),
    INT(politeness, max_retry_after_s, 0, 604800, "3600", "cap on a Retry-After pause"),
    INT(politeness, max_attempts, 1, 100, "3", "attempts per URL on 5xx, 429 and network errors (also per robots.txt fetch)"),
    INT(politeness, backoff_ms, 0, 86400000, "5000", "first retry delay, doubled each attempt"),
    INT(politeness, host_max_failures, 0, 1000000, "10", "failed requests in a row (5xx or network) that pause a host; after max_attempts such pauses it is given up (0: never)"),

    INT(frontier, max_in_memory, 100, 1e9, "100000", "URLs held in memory across all host queues; the rest wait in SQLite"),

    INT(dedup, expected_urls, 1000, 1e12, "10000000", "URLs the first Bloom stage is sized for; the chain grows past it"),
    FLT(dedup, fp_rate, 1e-9, 0.5, "0.01", "false-positive bound of the whole Bloom chain"),
    INT(dedup, shards, 1, 4096, "16", "Bloom shards, a power of two"),
    FLT(dedup, growth, 1.1, 16, "2.0", "capacity factor of each new Bloom stage"),
    FLT(dedup, tightening, 0.05, 0.95, "0.85", "error factor of each new Bloom stage"),
    ENUM(dedup, verify, verify_names, "\"in-scope\"", "settle a Bloom MAYBE by SQLite: never, always, or for URLs the crawl would fetch"),
    INT(dedup, recent_cache, 0, 1e9, "1048576", "exact recent-fingerprint cache entries"),
    INT(dedup, snapshot_interval_s, 0, 86400, "300", "seconds between Bloom snapshots (0: only at shutdown)"),
    INT(dedup, retention_s, 0, 3153600000, "0", "forget URLs nobody linked for this long (0: keep every URL forever); at least one second per generation"),
    INT(dedup, generations, 2, 8, "4", "Bloom generations the retention is cut into (with retention_s); the ring holds one more"),
    INT(dedup, bloom_max_mib, 0, 1048576, "4096", "cap on the Bloom filter's memory (0: none); past it no stage is added, the false-positive rate rises past fp_rate and SQLite settles more (saturated shards are counted)"),

    LIST(canon, strip_params, "[\"utm_*\", \"fbclid\", \"gclid\"]", "query parameters removed by name (* wildcard at the end)"),
    BOOL(canon, strip_session_ids, "true", "drop session ids: jsessionid, phpsessid, sid query parameters and ;jsessionid= path parameters"),
    BOOL(canon, sort_query, "true", "sort query parameters by name"),
    INT(canon, max_url_bytes, CONFIG_URL_BYTES_MIN, CONFIG_URL_BYTES_MAX, "2048", "URLs longer than this are rejected"),

    STR(storage, state_dir, "\"state\"", "folder for the SQLite database and Bloom snapshots"),
    INT(storage, sqlite_cache_mb, 1, 65536, "64", "SQLite page cache"),
    INT(storage, batch_size, 1, 100000, "10000", "operations per SQLite write transaction at most"),
    INT(storage, seen_run_rows, 1000, 100000000, "1000000",
        "URLs the seen-set's newest fingerprint run takes before it is frozen; frozen runs are merged"
        " four at a time (a larger run costs more writes per commit, a smaller one more runs per look-up)"),
    INT(storage, commit_interval_ms, 0, 10000, "20",
        "longest wait gathering discovered URLs into one SQLite transaction (0: commit at once)"),
    INT(storage, max_stall_s, 0, 31536000, "600",
        "while the store fails (disk full, I/O error, locked), crawld pauses and retries; it gives up"
        " with an error after this long (0: retry forever)"),

    BOOL(archive, warc, "false", "write WARC/1.1 files"),
    STR(archive, dir, "\"warc\"", "folder for WARC files (relative to state_dir)"),
    STR(archive, prefix, "\"crawld\"", "WARC file name prefix"),
    INT(archive, max_file_bytes, 1048576, 1e13, "1073741824", "rotate WARC files at this size"),
    BOOL(archive, revisits, "true", "write revisit records for payloads already archived"),
    INT(archive, spool_mem_bytes, 4096, 1073741824, "1048576",
        "a body on its way to the WARC file is kept in memory up to this size; a bigger one goes to an unlinked temp file in state_dir"),
    BOOL(archive, wacz, "false", "at the end of a crawl, package its WARC files as a WACZ (state_dir/wacz/PREFIX-TIMESTAMP.wacz, a new file each run)"),

    BOOL(sitemaps, enabled, "false", "read sitemaps (sitemaps.org): each in-scope host's robots.txt Sitemap lines and /sitemap.xml; the pages they list are queued as seeds (scope rules apply). Off by default: it costs a request per host, and a crawl then fetches more than its links reach"),
    BOOL(sitemaps, well_known, "true", "with enabled, also ask each in-scope host for /sitemap.xml (not only the Sitemap lines of its robots.txt)"),
    INT(sitemaps, max_urls, 1, 10000000, "50000", "entries read from one sitemap file at most (the protocol's limit); the rest are dropped and counted"),
    INT(sitemaps, max_bytes, 1024, 1e10, "52428800", "uncompressed bytes read from one sitemap file at most (the protocol's 50 MB, also for gzip: a bomb is cut there); a body is also cut at fetch.max_body_bytes"),
    INT(sitemaps, max_index_depth, 0, 10, "1", "sitemap index levels followed (1: an index's child sitemaps are read, as the protocol has it; 0: none); deeper ones are dropped and counted"),
    INT(sitemaps, max_per_host, 1, 1e9, "1000", "sitemap files queued per host at most; more are dropped and counted"),

    INT(recrawl, after_s, 0, 315360000, "0",
        "a page fetched is due again after this long (seconds; 0: one pass, nothing is revisited);"
        " `crawld run` on the state then fetches what is due, with If-None-Match/If-Modified-Since"),
    INT(recrawl, min_s, 1, 315360000, "60", "shortest interval the adaptive schedule may choose"),
    INT(recrawl, max_s, 1, 315360000, "2592000", "longest interval the adaptive schedule may choose"),
    BOOL(recrawl, adaptive, "false",
         "a page found changed comes back after half its last interval, an unchanged one after"
         " twice it, within [min_s, max_s]"),
    LIST(recrawl, rules, "[]",
         "\"PATTERN=SECONDS\" entries overriding after_s for matching URLs, first match wins;"
         " PATTERN globs ('*') the path and query, or the whole URL when it has \"://\""
         " (e.g. \"/news/*=3600\")"),

    STR(control, listen, "\"unix\"", "control API: \"unix\" (a socket in state_dir), \"unix:PATH\", ADDRESS:PORT (TCP), or \"\" for none"),
    STR(control, token, "\"\"", "bearer token; required when listen is a TCP address other than loopback"),
    INT(control, max_body_bytes, 1024, 1e9, "1048576", "request body cap"),
    INT(control, request_timeout_ms, 100, 600000, "2000", "a connection that has not sent its request line by then is closed before it takes a slot"),
    INT(control, idle_timeout_s, 1, 3600, "10", "a connection idle this long within or between requests is closed"),
    INT(control, max_connections, 1, 4096, "64", "connections served at once (twice as many may wait for their request line)"),
    INT(control, max_per_address, 1, 4096, "16", "connections from one client address, waiting and (TCP) served; the oldest waiting one makes room"),

    STR(cluster, redis, "\"\"", "share one crawl among several nodes through Redis Streams: \"unix:/path/to.sock\" or \"tcp:HOST:PORT\" (\"\": a single node, no Redis code runs)"),
    STR(cluster, crawl_id, "\"crawld\"", "name of the shared crawl in Redis (its keys start with crawld:NAME:); nodes with the same name join one crawl"),
    STR(cluster, node_id, "\"\"", "this node's name in the cluster (\"\": the hostname and the absolute state_dir)"),
    INT(cluster, slots, 1, 4096, "64", "host slots (slot = XXH3(host) mod slots); fixed when the crawl is created, a joining node takes the crawl's value"),
    INT(cluster, lease_ms, 100, 600000, "10000", "node and slot lease; renewed every quarter, a node that could not renew for half of it stops fetching"),
    INT(cluster, grace_ms, 0, 86400000, "30000", "a node whose lease ran out (a crash) keeps its slots this long after its last renewal, so a restart on the same state_dir within it finds them and fetches again only what was in flight; 0: its slots move when its lease runs out"),
    STR(cluster, shared_dir, "\"\"", "a folder every node can read and write (shared storage), where a node that hands a slot over writes its checkpoint (the slot's rows) for the new owner; set, each node also registers its state_dir, from which the others rescue its slots should it be gone for good, so the state_dirs must be on shared storage too (\"\": nothing registered, and a slot that moves takes its rows through Redis, see checkpoint_max_mib)"),
    INT(cluster, checkpoint_max_mib, 0, 500, "64", "without shared_dir, a slot that moves to another node goes with its rows as a checkpoint sent through Redis, up to this size; a larger slot stays with its node (its move is tried again each tick, counted and logged) until shared_dir is set or the limit raised (0: no checkpoints: a slot that moves starts empty at its new owner and its rows stay behind, unfetched)"),
};
#define N_OPTIONS (sizeof options / sizeof options[0])

int config_recrawl_rule(const char *rule, size_t *pattern_len, int64_t *seconds)
{
    const char *eq = rule ? strrchr(rule, '=') : NULL;
    if (eq == NULL || eq == rule || eq[1] == '\0')
        return -EINVAL;
    int64_t x = 0;
    for (const char *p = eq + 1; *p; p++) {
        if (*p < '0' || *p > '9' || x > 315360000)
            return -EINVAL;
        x = x * 10 + (*p - '0');
    }
    if (x < 1 || x > 315360000)
        return -EINVAL;
    *pattern_len = (size_t)(eq - rule);
    *seconds = x;
    return 0;
}

/* ---- errors ------------------------------------------------------------ */

int config_check_redis_addr(const char *s, char *msg, size_t msglen)
{
    if (s[0] == '\0')
        return 0;
    if (strncmp(s, "unix:", 5) == 0) {
        if (s[5] != '/') {
            snprintf(msg, msglen, "'unix:' must be followed by an absolute socket path, not '%.60s'", s + 5);
            return -EINVAL;
        }
        if (strlen(s + 5) >= 108) {
            snprintf(msg, msglen, "the socket path is longer than 107 bytes");
            return -EINVAL;
        }
        return 0;
    }
    if (strncmp(s, "tcp:", 4) == 0) {
        const char *colon = strrchr(s + 4, ':');
        if (colon == NULL || colon == s + 4) {
            snprintf(msg, msglen, "'%.60s' must read tcp:HOST:PORT", s);
            return -EINVAL;
        }
        char *end;
        errno = 0;
        long port = strtol(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || errno != 0 || port < 1 || port > 65535) {
            snprintf(msg, msglen, "port '%.20s' must be a number 1..65535", colon + 1);
            return -EINVAL;
        }
        return 0;
    }
    snprintf(msg, msglen, "'%.60s' must be \"unix:/PATH\", \"tcp:HOST:PORT\" or \"\"", s);
    return -EINVAL;
}

static int fail(config_error *err, const char *name, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail(config_error *err, const char *name, int line, int col, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        snprintf(err->msg, sizeof err->msg, "%s:%d:%d: %s", name, line, col, msg);
    else
        snprintf(err->msg, sizeof err->msg, "%s: %s", name, msg);
    return -EINVAL;
}

/* ---- the nearest known name, by edit distance -------------------------- */

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return (size_t)-1;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The known "section.name" (or section, when name is NULL) nearest to want. */
static void nearest(const char *section, const char *name, char *out, size_t outlen)
{
    char want[160], cand[160];
    size_t best = (size_t)-1;
    out[0] = '\0';
    if (name)
        snprintf(want, sizeof want, "%s.%s", section, name);
    else
        snprintf(want, sizeof want, "%s", section);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        if (name)
            snprintf(cand, sizeof cand, "%s.%s", options[i].section, options[i].name);
        else
            snprintf(cand, sizeof cand, "%s", options[i].section);
        size_t d = edit_distance(want, cand);
        if (d < best) {
            best = d;
            snprintf(out, outlen, "%s", cand);
        }
    }
}

static const option *find_option(const char *section, const char *name)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strcmp(options[i].section, section) == 0 && strcmp(options[i].name, name) == 0)
            return &options[i];
    return NULL;
}

static bool known_section(const char *section)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strcmp(options[i].section, section) == 0)
            return true;
    return false;
}

/* ---- checking and applying one value ------------------------------------ */

/* The value named s[0..len), or -1 (every value is >= 0). */
static int enum_value(const enum_pair *choices, const char *s, size_t len)
{
    for (const enum_pair *e = choices; e->name != NULL; e++)
        if (strlen(e->name) == len && memcmp(e->name, s, len) == 0)
            return e->value;
    return -1;
}

/* "a, b, c" into out. */
static void enum_list(const enum_pair *choices, char *out, size_t outlen)
{
    size_t j = 0;
    out[0] = '\0';
    for (const enum_pair *e = choices; e->name != NULL && j < outlen; e++) {
        int n = snprintf(out + j, outlen - j, "%s%s", e == choices ? "" : ", ", e->name);
        if (n < 0)
            break;
        j += (size_t)n;
    }
}

/* The name of value, or "?". */
static const char *enum_name(const enum_pair *choices, int value)
{
    for (const enum_pair *e = choices; e->name != NULL; e++)
        if (e->value == value)
            return e->name;
    return "?";
}

static const char *type_word(opt_type t)
{
    switch (t) {
    case T_BOOL: return "a boolean";
    case T_INT: return "an integer";
    case T_FLOAT: return "a number";
    case T_STR: return "a string";
    case T_LIST: return "an array of strings";
    case T_ENUM: return "a string";
    case T_AUTO: return "an integer or \"auto\"";
    }
    return "?";
}

static int check_string(const toml_value *v, const char *what, const char *name,
                        config_error *err)
{
    size_t len;
    const char *s = toml_string(v, &len);
    if (strlen(s) != len) {
        int line, col;
        toml_pos(v, &line, &col);
        return fail(err, name, line, col, "%s: strings must not contain NUL", what);
    }
    return 0;
}

/* Checks v against o; with apply, stores it into c. */
static int check_value(crawl_config *c, const option *o, const toml_value *v, bool apply,
                       const char *name, config_error *err)
{
    char what[160];
    int line, col;
    snprintf(what, sizeof what, "%s.%s", o->section, o->name);
    toml_pos(v, &line, &col);
    toml_type t = toml_type_of(v);
    bool ok = (o->type == T_BOOL && t == TOML_BOOL) || (o->type == T_INT && t == TOML_INTEGER) ||
              (o->type == T_FLOAT && (t == TOML_FLOAT || t == TOML_INTEGER)) ||
              ((o->type == T_STR || o->type == T_ENUM) && t == TOML_STRING) ||
              (o->type == T_LIST && t == TOML_ARRAY) ||
              (o->type == T_AUTO && (t == TOML_INTEGER || t == TOML_STRING));
    if (!ok)
        return fail(err, name, line, col, "%s must be %s, not %s", what, type_word(o->type),
                    toml_type_name(t));
    char *field = (char *)c + o->off;
    if (o->type == T_AUTO && t == TOML_STRING) {
        size_t len;
        const char *s = toml_string(v, &len);
        if (len != 4 || memcmp(s, "auto", 4) != 0)
            return fail(err, name, line, col, "%s must be an integer or \"auto\", not '%.60s'",
                        what, s);
        if (apply)
            *(int64_t *)field = CONFIG_AUTO;
        return 0;
    }
    switch (o->type) {
    case T_BOOL:
        if (apply)
            *(bool *)field = toml_bool(v) != 0;
        return 0;
    case T_AUTO:
    case T_INT: {
        int64_t x = toml_int(v);
        if ((double)x < o->min || (double)x > o->max)
            return fail(err, name, line, col, "%s = %lld is out of range %.0f..%.0f", what,
                        (long long)x, o->min, o->max);
        if (apply)
            *(int64_t *)field = x;
        return 0;
    }
    case T_FLOAT: {
        double x = t == TOML_INTEGER ? (double)toml_int(v) : toml_float(v);
        if (!(x >= o->min && x <= o->max))
            return fail(err, name, line, col, "%s = %g is out of range %g..%g", what, x, o->min,
                        o->max);
        if (apply)
            *(double *)field = x;
        return 0;
    }
    case T_ENUM: {
        size_t len;
        const char *s = toml_string(v, &len);
        int idx = enum_value(o->choices, s, len);
        if (idx < 0) {
            char list[120];
            enum_list(o->choices, list, sizeof list);
            return fail(err, name, line, col, "%s: '%.60s' is not one of %s", what, s, list);
        }
        if (apply)
            *(int *)field = idx;
        return 0;
    }
    case T_STR: {
        int rc = check_string(v, what, name, err);
        if (rc < 0)
            return rc;
        char why[200];
        if (strcmp(o->section, "cluster") == 0 && strcmp(o->name, "redis") == 0 &&
            config_check_redis_addr(toml_string(v, NULL), why, sizeof why) < 0)
            return fail(err, name, line, col, "%s: %s", what, why);
        if (!apply)
            return 0;
        char *dup = cr_strdup(toml_string(v, NULL));
        if (dup == NULL)
            return fail(err, name, 0, 0, "out of memory");
        cr_free(*(char **)field);
        *(char **)field = dup;
        return 0;
    }
    case T_LIST: {
        size_t n = toml_count(v);
        for (size_t i = 0; i < n; i++) {
            const toml_value *e = toml_at(v, i);
            if (toml_type_of(e) != TOML_STRING) {
                toml_pos(e, &line, &col);
                return fail(err, name, line, col, "%s[%zu] must be a string, not %s", what, i,
                            toml_type_name(toml_type_of(e)));
            }
            int rc = check_string(e, what, name, err);
            if (rc < 0)
                return rc;
            size_t pl;
            int64_t secs;
            if (o->off == F(recrawl, rules) &&
                config_recrawl_rule(toml_string(e, NULL), &pl, &secs) < 0) {
                toml_pos(e, &line, &col);
                return fail(err, name, line, col,
                            "%s[%zu] = \"%.60s\" is not PATTERN=SECONDS (SECONDS 1..315360000)",
                            what, i, toml_string(e, NULL));
            }
        }
        if (!apply)
            return 0;
        str_list nl = { cr_calloc(n ? n : 1, sizeof(char *)), 0 };
        if (nl.v == NULL)
            return fail(err, name, 0, 0, "out of memory");
        for (; nl.n < n; nl.n++) {
            nl.v[nl.n] = cr_strdup(toml_string(toml_at(v, nl.n), NULL));
            if (nl.v[nl.n] == NULL) {
                for (size_t i = 0; i < nl.n; i++)
                    cr_free(nl.v[i]);
                cr_free(nl.v);
                return fail(err, name, 0, 0, "out of memory");
            }
        }
        str_list *old = (str_list *)field;
        for (size_t i = 0; i < old->n; i++)
            cr_free(old->v[i]);
        cr_free(old->v);
        *old = nl;
        return 0;
    }
    }
    return 0;
}

/* Walks a parsed document: every top-level key must be a known section
 * holding known options. With apply, stores the values. */
static int walk(crawl_config *c, const toml_value *root, bool apply, const char *name,
                config_error *err)
{
    char hint[160];
    for (size_t i = 0; i < toml_count(root); i++) {
        const char *sec = toml_key_at(root, i);
        const toml_value *tab = toml_at(root, i);
        int line, col;
        toml_pos(tab, &line, &col);
        if (!known_section(sec)) {
            nearest(sec, NULL, hint, sizeof hint);
            return fail(err, name, line, col, "unknown section '%.60s'; did you mean '%s'?", sec,
                        hint);
        }
        if (toml_type_of(tab) != TOML_TABLE)
            return fail(err, name, line, col, "'%s' must be a table of options, not %s", sec,
                        toml_type_name(toml_type_of(tab)));
        for (size_t j = 0; j < toml_count(tab); j++) {
            const char *key = toml_key_at(tab, j);
            const toml_value *v = toml_at(tab, j);
            const option *o = find_option(sec, key);
            if (o == NULL) {
                toml_pos(v, &line, &col);
                nearest(sec, key, hint, sizeof hint);
                return fail(err, name, line, col, "unknown key '%s.%.60s'; did you mean '%s'?",
                            sec, key, hint);
            }
            int rc = check_value(c, o, v, apply, name, err);
            if (rc < 0)
                return rc;
        }
        if (apply && strcmp(sec, "recrawl") == 0 && c->recrawl.max_s > 0 && /* 0: config_init */
            c->recrawl.min_s > c->recrawl.max_s)
            return fail(err, name, line, col, "recrawl.min_s (%lld) is above recrawl.max_s (%lld)",
                        (long long)c->recrawl.min_s, (long long)c->recrawl.max_s);
    }
    return 0;
}

int config_load_text(crawl_config *c, const char *name, const char *text, size_t len,
                     bool syntax_only, config_error *err)
{
    toml_error terr;
    toml_value *root = toml_parse(text, len, &terr);
    if (root == NULL)
        return fail(err, name, terr.line, terr.col, "%s", terr.msg);
    int rc = 0;
    if (!syntax_only) {
        rc = walk(c, root, false, name, err);
        if (rc == 0)
            rc = walk(c, root, true, name, err);
    }
    toml_free(root);
    return rc;
}

int config_load_file(crawl_config *c, const char *path, bool syntax_only, config_error *err)
{
    int rc = 0;
    char *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, path, 0, 0, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        rc = fail(err, path, 0, 0, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = fail(err, path, 0, 0, "is a directory, not a configuration file");
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = fail(err, path, 0, 0, "not a regular file");
        goto out;
    }
    if ((unsigned long long)st.st_size > TOML_MAX_INPUT) {
        rc = fail(err, path, 0, 0, "file too large (%lld bytes; the limit is %u)",
                  (long long)st.st_size, TOML_MAX_INPUT);
        goto out;
    }
    size_t size = (size_t)st.st_size, got = 0;
    buf = cr_malloc(size + 1);
    if (buf == NULL) {
        rc = fail(err, path, 0, 0, "out of memory");
        goto out;
    }
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = fail(err, path, 0, 0, "read error: %s", strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    rc = config_load_text(c, path, buf, got, syntax_only, err);
out:
    cr_free(buf);
    close(fd);
    return rc;
}

int config_set(crawl_config *c, const char *assignment, config_error *err)
{
    if (strchr(assignment, '=') == NULL)
        return fail(err, "--set", 0, 0, "'%.100s' is not section.key=value", assignment);
    return config_load_text(c, "--set", assignment, strlen(assignment), false, err);
}

/* ---- defaults and release ----------------------------------------------- */

void config_release(crawl_config *c)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        char *field = (char *)c + options[i].off;
        if (options[i].type == T_STR) {
            cr_free(*(char **)field);
            *(char **)field = NULL;
        } else if (options[i].type == T_LIST) {
            str_list *l = (str_list *)field;
            for (size_t j = 0; j < l->n; j++)
                cr_free(l->v[j]);
            cr_free(l->v);
            l->v = NULL;
            l->n = 0;
        }
    }
}

int config_init(crawl_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        char text[256];
        config_error err;
        snprintf(text, sizeof text, "%s.%s = %s", options[i].section, options[i].name,
                 options[i].def);
        if (config_load_text(c, "default", text, strlen(text), false, &err) < 0) {
            config_release(c);
            return -ENOMEM; /* the table is tested: only allocation can fail */
        }
    }
    return 0;
}

/* ---- writing ----------------------------------------------------------- */

static void write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void write_float(FILE *f, double x)
{
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    fputs(buf, f);
    if (strpbrk(buf, ".eEn") == NULL) /* keep it a TOML float: 2 -> 2.0 */
        fputs(".0", f);
}

static void write_value(FILE *f, const crawl_config *c, const option *o)
{
    const char *field = (const char *)c + o->off;
    switch (o->type) {
    case T_BOOL: fputs(*(const bool *)field ? "true" : "false", f); break;
    case T_INT: fprintf(f, "%lld", (long long)*(const int64_t *)field); break;
    case T_AUTO:
        if (*(const int64_t *)field == CONFIG_AUTO)
            fputs("\"auto\"", f);
        else
            fprintf(f, "%lld", (long long)*(const int64_t *)field);
        break;
    case T_FLOAT: write_float(f, *(const double *)field); break;
    case T_STR: write_string(f, *(char *const *)field ? *(char *const *)field : ""); break;
    case T_ENUM: fprintf(f, "\"%s\"", enum_name(o->choices, *(const int *)field)); break;
    case T_LIST: {
        const str_list *l = (const str_list *)field;
        fputc('[', f);
        for (size_t i = 0; i < l->n; i++) {
            if (i)
                fputs(", ", f);
            write_string(f, l->v[i]);
        }
        fputc(']', f);
        break;
    }
    }
}

int config_write(const crawl_config *c, FILE *f, bool docs)
{
    const char *section = "";
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const option *o = &options[i];
        if (strcmp(o->section, section) != 0) {
            fprintf(f, "%s[%s]\n", i ? "\n" : "", o->section);
            section = o->section;
        }
        if (docs) {
            fprintf(f, "# %s\n# default: %s", o->doc, o->def);
            if (o->type == T_INT)
                fprintf(f, "; range %.0f..%.0f", o->min, o->max);
            else if (o->type == T_AUTO)
                fprintf(f, "; range %.0f..%.0f or \"auto\"", o->min, o->max);
            else if (o->type == T_FLOAT)
                fprintf(f, "; range %g..%g", o->min, o->max);
            else if (o->type == T_ENUM) {
                char list[120];
                enum_list(o->choices, list, sizeof list);
                fprintf(f, "; one of %s", list);
            }
            fputc('\n', f);
        }
        fprintf(f, "%s = ", o->name);
        write_value(f, c, o);
        fputc('\n', f);
    }
    return ferror(f) ? -EIO : 0;
}

const char *config_scope_name(int scope) { return enum_name(scope_names, scope); }
