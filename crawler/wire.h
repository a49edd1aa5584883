/* crawler/wire: the composition root's one place that reads the whole
 * configuration and hands each module its own small options struct.
 * The results borrow strings from the configuration: keep it alive until
 * the module that takes them has copied them (each constructor says). */
#ifndef CRAWLD_WIRE_H
#define CRAWLD_WIRE_H

#include "config/config.h"
#include "crawler/url.h"
#include "dedup/bloom.h"

void wire_url_policy(const crawl_config *c, url_policy *out /* OUT */);
void wire_bloom_params(const crawl_config *c, bloom_params *out /* OUT */);

#endif
