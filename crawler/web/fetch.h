/* crawler/fetch: the HTTP fetcher. Fetcher threads, each driving one libcurl
 * multi handle with many transfers in flight over kept-alive connections.
 *
 * The fetcher decides nothing about WHAT or WHEN to fetch (the frontier
 * does): it takes jobs, runs them, and reports through hooks. It follows no
 * redirect (the Location is reported; the caller makes it a link with
 * hops + 1), sends no cookies, uses no proxy from the environment, speaks
 * only http and https, and sends our User-Agent, an Accept header and
 * "Accept-Encoding: gzip, deflate, br". It decodes the body itself (see
 * crawler/decode.h) so that the raw bytes stay available for the WARC writer
 * and the body cap applies to the decoded size.
 *
 * Hooks run ON THE FETCHER THREAD that owns the transfer, several fetcher
 * threads at once: they must be quick (a fetcher thread blocked in a hook
 * stalls all its transfers) and thread-safe. For one job the order is:
 *   on_response  at most once, when the final (non-1xx) header block is
 *                complete; never for a transfer that failed before that;
 *   on_raw / on_body  as the body arrives: on_raw gets each piece as on the
 *                wire after de-chunking, NOT content-decoded (for WARC);
 *                then on_body gets what that piece decoded to (for the link
 *                extractor); both stop at max_body_bytes;
 *   on_done      exactly once for every accepted job, last, also when the
 *                job failed, was cancelled or aborted at shutdown.
 * Every pointer a hook receives is valid only during the call; the job's
 * user pointer is the caller's and is passed back untouched. A hook that
 * returns nonzero cancels the transfer (on_done then says FETCH_ERR_CANCELLED).
 * A hook may call fetcher_submit with timeout_ms 0 and fetcher_stats, never
 * fetcher_stop or fetcher_free. */
#ifndef CRAWLD_FETCH_H
#define CRAWLD_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FETCH_MAX_URL_BYTES 65536  /* longer URLs are refused at submit */

typedef struct fetcher fetcher;

/* Filled by the composition root from the [fetch] config section. The
 * fetcher copies what it needs; the strings may be freed after
 * fetcher_new. */
typedef struct fetch_opts {
    unsigned threads;          /* fetcher threads, 1..256 */
    unsigned connections;      /* jobs in flight in total, split across the
                                  threads (>= threads); also the bound on open
                                  connections */
    long connect_timeout_ms;   /* 0: curl's default (300 s) */
    long timeout_ms;           /* whole transfer; 0: none */
    long low_speed_bytes;      /* abort when slower than this many bytes/s */
    long low_speed_time_s;     /*   for this many seconds; 0 in either: off */
    uint64_t max_body_bytes;   /* cap on raw AND decoded body bytes, > 0 */
    uint64_t max_header_bytes; /* cap on the response header block(s), >= 256 */
    bool http2;                /* HTTP/2 over TLS where the server offers it */
    const char *user_agent;    /* required; no CR or LF */
    const char *const *resolve;/* "host:port:addr" pins, as curl --resolve */
    size_t nresolve;
    const char *proxy;         /* NULL or "": no proxy at all */
    bool keep_request;         /* capture the request header block as sent
                                  (for WARC request records); uses curl's
                                  debug callback, so costs a little */
} fetch_opts;

/* A job as submitted; the fetcher keeps a copy (url copied). Hooks get
 * the fetcher's copy. */
typedef struct fetch_job {
    uint64_t id;               /* the caller's (e.g. the URL's row id) */
    const char *url;           /* absolute http or https URL */
    unsigned hops;             /* redirect hops that led here; carried only */
    void *user;                /* opaque, handed back to every hook */
} fetch_job;

/* A re-crawl's validators, sent as If-None-Match and If-Modified-Since
 * (fetcher_submit_validated). NULL or "": not sent; a value with a control
 * byte or over 1024 bytes is not sent either. Copied. */
typedef struct fetch_validators {
    const char *if_none_match;
    const char *if_modified_since;
} fetch_validators;

/* What the server answered; given to on_response. Strings are
 * NUL-terminated; the optional ones are NULL when the header is absent. */
typedef struct fetch_response {
    long status;               /* e.g. 200, 301, 503 */
    int http_version;          /* 10, 11, 20 or 30 */
    const char *remote_ip;     /* the address connected to ("" if unknown) */
    const char *content_type;  /* value as sent, e.g. "text/html; charset=utf-8" */
    const char *content_encoding;/* every Content-Encoding line, joined by ", " */
    const char *location;      /* as sent (may be relative); not followed */
    const char *retry_after;   /* as sent */
    long retry_after_s;        /* Retry-After as seconds from now (an
                                  HTTP-date is converted); -1: absent/invalid */
    const char *headers;       /* the raw header block as received: status
                                  line through the empty line, CRLFs kept
                                  (HTTP/2: as curl renders it, "HTTP/2 200") */
    size_t headers_len;
    const char *request;       /* the request header block as sent (request
                                  line through the empty line); "" unless
                                  opts.keep_request */
    size_t request_len;
} fetch_response;

typedef enum fetch_error {
    FETCH_OK = 0,
    FETCH_ERR_URL,             /* malformed URL or not http/https */
    FETCH_ERR_DNS,             /* name not resolved (or resolving timed out) */
    FETCH_ERR_CONNECT,         /* refused, unreachable */
    FETCH_ERR_CONNECT_TIMEOUT,
    FETCH_ERR_TLS,             /* handshake or certificate */
    FETCH_ERR_TIMEOUT,         /* whole-transfer timeout */
    FETCH_ERR_LOW_SPEED,       /* slower than low_speed_bytes for too long */
    FETCH_ERR_NETWORK,         /* reset, closed early, short body */
    FETCH_ERR_PROTOCOL,        /* malformed HTTP */
    FETCH_ERR_HEADERS_TOO_LARGE,
    FETCH_ERR_BODY_TOO_LARGE,  /* body cut at max_body_bytes (truncated set) */
    FETCH_ERR_DECODE,          /* corrupt, truncated or unknown content coding */
    FETCH_ERR_CANCELLED,       /* a hook asked to stop */
    FETCH_ERR_ABORTED,         /* still running when fetcher_stop's grace ran out */
    FETCH_ERR_NOMEM,
    FETCH_ERR_OTHER,
    FETCH_ERR_COUNT
} fetch_error;

/* The outcome, given to on_done. An HTTP error status (404, 503) is not a
 * fetch error: error is FETCH_OK and status says it. */
typedef struct fetch_result {
    long status;               /* final status; 0 when no response came */
    fetch_error error;
    bool truncated;            /* the body was cut at max_body_bytes */
    uint64_t raw_bytes;        /* given to on_raw */
    uint64_t decoded_bytes;    /* given to on_body */
    uint64_t header_bytes;     /* received, 1xx blocks included */
    long total_ms;             /* from start (handed to curl) to done */
    int64_t start_unix_ms;     /* wall-clock start, ms since 1970 (WARC-Date) */
    int new_connections;       /* connections this transfer opened (0: reused) */
    const char *reason;        /* "" when OK, else "KIND: detail (URL)" */
} fetch_result;

typedef struct fetch_hooks {
    int (*on_response)(void *ctx, const fetch_job *job, const fetch_response *resp);
    int (*on_raw)(void *ctx, const fetch_job *job, const char *data, size_t len);
    int (*on_body)(void *ctx, const fetch_job *job, const char *data, size_t len);
    void (*on_done)(void *ctx, const fetch_job *job, const fetch_result *res);
    /* Optional. Once the connection is up, just before the request is
     * written (each time: a request sent again on a new connection asks
     * again): nonzero cancels the transfer unsent (FETCH_ERR_CANCELLED).
     * The last moment a check can come: a cluster node asks its slot
     * lease here, so that a process paused between dispatch and send
     * (SIGSTOP, swapping) sends nothing once its lease ran out. */
    int (*may_send)(void *ctx, const fetch_job *job);
    /* Optional. After transfers ended, with free_slots (> 0) of this
     * thread's slots free: the place to submit more work, which then stays
     * on this thread and needs no wakeup. */
    void (*on_room)(void *ctx, unsigned free_slots);
    void *ctx;                 /* first argument of every hook */
} fetch_hooks;

/* Counters, read with fetcher_stats(); monotonic. */
typedef struct fetch_stats {
    uint64_t submitted;        /* accepted by fetcher_submit */
    uint64_t started;          /* handed to curl */
    uint64_t done;             /* on_done called */
    uint64_t by_error[FETCH_ERR_COUNT];
    uint64_t raw_bytes;
    uint64_t decoded_bytes;
    uint64_t header_bytes;
    uint64_t truncated;
    uint64_t connections;      /* new connections opened */
    uint64_t in_flight;        /* accepted, not yet done (a snapshot) */
} fetch_stats;

/* Short stable name of an error kind: "ok", "bad URL", "DNS", "connect",
 * "connect timeout", "TLS", "timeout", "low speed", "network", "protocol",
 * "headers too large", "body too large", "decode", "cancelled", "aborted",
 * "out of memory", "other". */
const char *fetch_error_name(fetch_error e);

/* Checks opts, starts opts->threads threads. curl_global_init must have run.
 * Returns 0, -EINVAL for bad options, -ENOMEM, or a negative errno when a
 * thread or curl handle could not be made. Caller owns *out; free with
 * fetcher_free(). hooks->on_done is required; the others may be NULL. */
int fetcher_new(const fetch_opts *opts, const fetch_hooks *hooks, fetcher **out /* OUT */);

/* Hands a job to the fetcher (thread-safe). The fetcher holds at most
 * opts.connections jobs; when all are taken it waits up to timeout_ms for
 * one to finish (0: do not wait, < 0: wait as long as it takes).
 * Returns 0 (on_done will be called exactly once for the job), -EAGAIN when
 * no slot freed in time, -ESHUTDOWN once fetcher_stop has begun, -EINVAL for
 * a NULL or over-long URL, -ENOMEM. From a hook (a fetcher thread) it never
 * waits: timeout_ms is taken as 0. */
int fetcher_submit(fetcher *f, const fetch_job *job, long timeout_ms);
/* fetcher_submit with validators (v may be NULL): a conditional request. */
int fetcher_submit_validated(fetcher *f, const fetch_job *job, const fetch_validators *v,
                             long timeout_ms);

/* Slots free right now (a snapshot; thread-safe). */
unsigned fetcher_free_slots(fetcher *f);

/* Stops taking jobs, lets transfers in flight run for up to grace_ms (< 0:
 * until they end by themselves), aborts the rest (on_done with
 * FETCH_ERR_ABORTED), and joins the threads. Call from the owner thread, not
 * from a hook (-EDEADLK). Returns 0; a second call returns 0 at once. */
int fetcher_stop(fetcher *f, long grace_ms);

/* Ends the grace period now: transfers still running are aborted. Safe from
 * any thread (not a signal handler), also while fetcher_stop waits; a
 * no-op before fetcher_stop. */
void fetcher_abort(fetcher *f);

/* Copies the counters (thread-safe). */
void fetcher_stats(fetcher *f, fetch_stats *out /* OUT */);

/* Index (0..threads-1) of the fetcher thread running the caller, -1 when
 * not on a fetcher thread: lets hooks keep per-thread state. */
int fetcher_thread_index(void);

/* Stops with no grace if still running, then frees everything. */
void fetcher_free(fetcher *f);

#endif
