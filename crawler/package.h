/* crawler/package: a crawl's WACZ package (storage/wacz), with page titles
 * read by the web side (content decoding and the link extractor's <title>).
 * Used by `crawld wacz` and by `crawld run` when archive.wacz is on. */
#ifndef CRAWLD_PACKAGE_H
#define CRAWLD_PACKAGE_H

#include <stddef.h>

#include "config/config.h"
#include "storage/wacz.h"

/* Packages the WARC files of the crawl whose state is in state_dir (its
 * archive folder and prefix as cfg's archive.dir and archive.prefix say)
 * into out_path, or, when out_path is NULL, into a new
 * state_dir/wacz/PREFIX-YYYYMMDDhhmmss.wacz (its name into chosen, when
 * given). 0, or a negative errno with a message in err (see wacz_write).
 * st (OUT, may be NULL). */
int package_crawl(const crawl_config *cfg, const char *state_dir, const char *out_path,
                  char *chosen, size_t chosen_len, wacz_stats *st /* OUT */, char *err,
                  size_t errlen);

#endif
