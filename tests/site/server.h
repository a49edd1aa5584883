/* tests/site/server: the test site over HTTP/1.1 on libmicrohttpd.
 *
 * One thread per connection (so slow pages and the --latency-ms wait only
 * hold their own connection; up to SERVER_MAX_CONNECTIONS at once),
 * on a listening socket the caller bound (127.0.0.1). Every request is routed
 * by its Host header and the canonical form of its raw request target, and
 * logged, before its response is queued, as one line of the request log:
 *
 *   ms TAB host TAB method TAB target TAB status TAB bytes NL
 *
 * ms is the wall-clock time (Unix epoch, milliseconds) when the request line
 * arrived; host is the Host header lower-cased without its port ("-" when
 * absent); target is the raw request target as sent (path and query, not
 * canonicalized); bytes is the size of the body the response carries (0 for
 * HEAD). Control, space and non-ASCII bytes in host and target are written as
 * %XX. Lines are appended with one write(2) each under a lock.
 *
 * With SERVER_LOG_TIMING a line is written instead once its response has
 * been sent (or the client went away), with three more fields:
 *
 *   ... bytes TAB start_us TAB end_us TAB user-agent NL
 *
 * start_us and end_us are Unix epoch microseconds (CLOCK_REALTIME) when the
 * request line arrived and when the last byte was handed to the socket; the
 * User-Agent header is escaped as above ("-" when absent). This tells which
 * client (a cluster node names itself in its User-Agent) had a host busy
 * when.
 *
 * Shared state: the site (immutable), the gzip bomb (immutable), the per-host
 * /flaky/ counters (atomics) and the log descriptor (under log_lock). */
#ifndef CRAWLD_TESTSITE_SERVER_H
#define CRAWLD_TESTSITE_SERVER_H

#include "tests/site/site.h"

#define SERVER_MAX_CONNECTIONS 4096

enum { SERVER_LOG_TIMING = 1 };

typedef struct server server;

/* Starts serving site s on the listening socket fd (the server owns it from
 * now on, also on failure). log_path may be NULL (no log). Every answer is
 * held back latency_ms (>= 0) after its request arrived, as a far server's
 * would be; only its own connection waits (each has its own thread). flags:
 * 0 or SERVER_LOG_TIMING. NULL with *err set (negative errno) on failure.
 * Free with server_stop(). */
server *server_start(const site *s, int fd, const char *log_path, int latency_ms, int flags,
                     int *err /* OUT */);
/* Wakes sleeping slow pages, closes every connection, joins the threads and
 * frees the server. */
void server_stop(server *srv);

#endif
