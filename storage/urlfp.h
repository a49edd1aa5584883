/* storage/urlfp: the 64-bit fingerprint that keys the seen-set index
 * (urls.fp, schema 3). It is stored, so it never changes: XXH3-64 with seed
 * 0 of the URL's bytes, as a signed SQLite integer. Two URLs may share one;
 * a lookup always compares the text too, so the seen-set stays exact.
 * This file pair is storage/'s only use of xxHash. */
#ifndef CRAWLD_URLFP_H
#define CRAWLD_URLFP_H

#include <stddef.h>
#include <stdint.h>

/* The fingerprint of len bytes at url. */
int64_t urlfp(const char *url, size_t len);

#endif
