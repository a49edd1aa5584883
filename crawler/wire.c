/* crawler/wire: configuration -> module options. */
#include "wire.h"

#include <string.h>

void wire_url_policy(const crawl_config *c, url_policy *out)
{
    url_policy_defaults(out);
    out->max_url_bytes = (size_t)c->canon.max_url_bytes;
    out->strip_params = (const char *const *)c->canon.strip_params.v;
    out->n_strip_params = c->canon.strip_params.n;
    out->strip_session_ids = c->canon.strip_session_ids;
    out->sort_query = c->canon.sort_query;
}

void wire_fetch_opts(const crawl_config *c, fetch_opts *out)
{
    memset(out, 0, sizeof *out);
    out->threads = (unsigned)c->fetch.threads;
    out->connections = (unsigned)c->fetch.connections;
    if (out->connections < out->threads)
        out->connections = out->threads;
    out->connect_timeout_ms = (long)c->fetch.connect_timeout_ms;
    out->timeout_ms = (long)c->fetch.timeout_ms;
    out->low_speed_bytes = (long)c->fetch.low_speed_bytes;
    out->low_speed_time_s = (long)c->fetch.low_speed_time_s;
    out->max_body_bytes = (uint64_t)c->fetch.max_body_bytes;
    out->max_header_bytes = (uint64_t)c->fetch.max_header_bytes;
    out->http2 = c->fetch.http2;
    out->user_agent = c->crawl.user_agent;
    out->resolve = (const char *const *)c->fetch.resolve.v;
    out->nresolve = c->fetch.resolve.n;
    out->proxy = NULL;
    out->keep_request = c->archive.warc;
}
