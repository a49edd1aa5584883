/* crawler/wire: configuration -> module options. */
#include "wire.h"

void wire_url_policy(const crawl_config *c, url_policy *out)
{
    url_policy_defaults(out);
    out->max_url_bytes = (size_t)c->canon.max_url_bytes;
    out->strip_params = (const char *const *)c->canon.strip_params.v;
    out->n_strip_params = c->canon.strip_params.n;
    out->strip_session_ids = c->canon.strip_session_ids;
    out->sort_query = c->canon.sort_query;
}

void wire_bloom_params(const crawl_config *c, bloom_params *out)
{
    bloom_params_init(out);
    out->expected_items = (uint64_t)c->dedup.expected_urls;
    out->fp_rate = c->dedup.fp_rate;
    out->shards = (unsigned)c->dedup.shards;
    out->growth = c->dedup.growth;
    out->tightening = c->dedup.tightening;
}
