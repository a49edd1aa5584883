/* config/config: the crawl configuration (crawl.toml and --set overrides).
 *
 * One table of options (config.c) gives each option its section, name, type,
 * bounds, default and one-line doc; the struct below is where values land.
 * Defaults, the shipped crawl.toml (config_write) and `check-config` output
 * all come from that table, so they cannot disagree with the code.
 * An unknown key is an error naming the nearest known key. Errors read
 * "FILE:LINE:COL: message". Depends on config/toml and libc only. */
#ifndef CRAWLD_CONFIG_H
#define CRAWLD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct str_list {
    char **v;   /* each NUL-terminated; owned by the config */
    size_t n;
} str_list;

/* The value of an integer option set to "auto" (fetch.connections). */
#define CONFIG_AUTO 0

enum crawl_scope { SCOPE_HOST, SCOPE_DOMAIN, SCOPE_PREFIX, SCOPE_ANY };
enum dedup_verify { VERIFY_NEVER, VERIFY_ALWAYS, VERIFY_IN_SCOPE };
enum requisites_scope { REQUISITES_SAME_HOST, REQUISITES_ANY };

typedef struct crawl_config {
    struct {
        str_list seeds;
        char *seeds_file;
        char *user_agent;
        char *robots_agent;
        int scope;                 /* enum crawl_scope */
        str_list include;
        str_list exclude;
        int64_t max_depth;
        int64_t max_pages;         /* 0: no limit */
        int64_t max_pages_per_host;
        int64_t max_links_per_page;
        bool fetch_requisites;
        int requisites_scope;      /* enum requisites_scope */
        int64_t requisite_depth;
        bool follow_nofollow;
        bool daemon;
        int64_t max_path_depth;
        int64_t max_repeated_segment;
        int64_t max_query_params;
    } crawl;
    struct {
        int64_t threads;
        int64_t connections;       /* CONFIG_AUTO: "auto" */
        int64_t connect_timeout_ms;
        int64_t timeout_ms;
        int64_t low_speed_bytes;
        int64_t low_speed_time_s;
        int64_t max_body_bytes;
        int64_t max_header_bytes;
        int64_t max_redirects;
        bool http2;
        str_list resolve;
    } fetch;
    struct {
        bool obey_robots;
        int64_t delay_ms;
        double delay_factor;
        int64_t max_delay_ms;
        int64_t max_per_host;
        int64_t robots_cache_s;
        int64_t robots_max_bytes;
        int64_t max_retry_after_s;
        int64_t max_attempts;
        int64_t backoff_ms;
        int64_t host_max_failures;
    } politeness;
    struct {
        int64_t max_in_memory;
    } frontier;
    struct {
        int64_t expected_urls;
        double fp_rate;
        int64_t shards;
        double growth;
        double tightening;
        int verify;                /* enum dedup_verify */
        int64_t recent_cache;
        int64_t snapshot_interval_s;
        int64_t retention_s;       /* 0: no retention (dedup/gens.h) */
        int64_t generations;
        int64_t bloom_max_mib;     /* cap on the Bloom filter's bits (0: none) */
    } dedup;
    struct {
        str_list strip_params;
        bool strip_session_ids;
        bool sort_query;
        int64_t max_url_bytes;
    } canon;
    struct {
        char *state_dir;
        int64_t sqlite_cache_mb;
        int64_t batch_size;
        int64_t seen_run_rows;
        int64_t commit_interval_ms;
        int64_t max_stall_s;
    } storage;
    struct {
        bool warc;
        char *dir;
        char *prefix;
        int64_t max_file_bytes;
        bool revisits;
        int64_t spool_mem_bytes;
        bool wacz;
    } archive;
    struct {
        bool enabled;
        bool well_known;
        int64_t max_urls;
        int64_t max_bytes;
        int64_t max_index_depth;
        int64_t max_per_host;
    } sitemaps;
    struct {
        int64_t after_s;           /* 0: one pass, nothing is revisited */
        int64_t min_s, max_s;      /* adaptive intervals stay in [min_s, max_s] */
        bool adaptive;
        str_list rules;            /* "PATTERN=SECONDS" (config_recrawl_rule) */
    } recrawl;
    struct {
        char *listen;
        char *token;
        int64_t max_body_bytes;
        int64_t request_timeout_ms;
        int64_t idle_timeout_s;
        int64_t max_connections;
        int64_t max_per_address;
    } control;
    struct {
        char *redis;               /* "": single node (no Redis code runs) */
        char *crawl_id;
        char *node_id;             /* "": hostname:state_dir */
        int64_t slots;
        int64_t lease_ms;
        int64_t grace_ms;
        char *shared_dir;          /* "": checkpoints through Redis (checkpoint_max_mib) */
        int64_t checkpoint_max_mib; /* without shared_dir: the largest sent through Redis */
    } cluster;
} crawl_config;

typedef struct config_error {
    char msg[512]; /* "FILE:LINE:COL: message" */
} config_error;

/* Fills every option with its default. 0, or -ENOMEM. */
int config_init(crawl_config *c);
void config_release(crawl_config *c);

/* Reads a TOML file over the current values. A missing file, a directory,
 * a file over the size cap, bad TOML, an unknown key, a wrong type or a value
 * out of range: -EINVAL (or -errno) with *err filled. With syntax_only, only
 * the TOML is checked and unknown keys are ignored; nothing is applied. */
int config_load_file(crawl_config *c, const char *path, bool syntax_only,
                     config_error *err /* OUT */);
/* The same for text in memory; name is used in messages. */
int config_load_text(crawl_config *c, const char *name, const char *text,
                     size_t len, bool syntax_only, config_error *err /* OUT */);
/* Applies one `section.key=value` override, the value written as in TOML;
 * errors read "--set:1:COL: message". */
int config_set(crawl_config *c, const char *assignment, config_error *err /* OUT */);

/* Writes the configuration as TOML, every option; with docs, each option is
 * preceded by its doc line and default (the shipped crawl.toml). */
int config_write(const crawl_config *c, FILE *f, bool docs);

/* canon.max_url_bytes's range: what crawler/web/url accepts (wire.c
 * asserts they agree); scope's max_url_length gets the same value. */
#define CONFIG_URL_BYTES_MIN 64
#define CONFIG_URL_BYTES_MAX 65536

/* Checks a cluster.redis address: "" (off), "unix:/PATH" or "tcp:HOST:PORT".
 * 0, or -EINVAL with why (a phrase) in msg. */
int config_check_redis_addr(const char *s, char *msg, size_t msglen);

/* One recrawl.rules entry, "PATTERN=SECONDS": PATTERN (up to the last
 * '=') is a glob ('*' any run of bytes) over the URL's path and query, or
 * over the whole URL when it holds "://"; SECONDS the interval (1..
 * 315360000) that replaces after_s for the URLs it matches. 0 with
 * *pattern_len and *seconds, or -EINVAL. OUT: pattern_len, seconds */
int config_recrawl_rule(const char *rule, size_t *pattern_len, int64_t *seconds);

/* The name of a crawl.scope value ("host", ...), or "?". */
const char *config_scope_name(int scope);

#endif
