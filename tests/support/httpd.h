/* tests/support/httpd: a small static file server for tests, on 127.0.0.1.
 *
 * Serves one folder over HTTP/1.1 (libmicrohttpd, a thread per connection,
 * in the test process): GET and HEAD, Range requests (one range: bytes=A-B,
 * A- or -N, answered 206 with Content-Range; an unsatisfiable one 416),
 * Content-Type by file extension, a folder's index.html for a target that
 * ends in '/' (query aside), 404 for anything missing or outside the
 * folder ("..", or a name starting with '.'). Every request is counted and
 * its target kept (the first HTTPD_LOG_MAX), so a test can check what a
 * browser asked for. Not a general server: paths are taken as they come,
 * with no %-decoding. */
#ifndef CRAWLD_TESTS_HTTPD_H
#define CRAWLD_TESTS_HTTPD_H

#include <stddef.h>

#define HTTPD_LOG_MAX 4096

typedef struct httpd httpd;

/* Starts serving root on 127.0.0.1 and a free port. NULL on failure. */
httpd *httpd_start(const char *root);
int httpd_port(const httpd *h);
/* Requests answered so far, and how many of them were Range requests (206). */
size_t httpd_requests(httpd *h);
size_t httpd_ranges(httpd *h);
/* The target of request i (< httpd_requests and < HTTPD_LOG_MAX), "" past
 * that; valid until httpd_stop. */
const char *httpd_target(httpd *h, size_t i);
/* Stops the server (waits for its threads) and frees it. h may be NULL. */
void httpd_stop(httpd *h);

#endif
