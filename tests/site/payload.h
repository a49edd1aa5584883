/* tests/site/payload: binary bodies of the test site.
 *
 * A small valid PNG and a small PDF per number, and a gzip bomb that is
 * streamed, never held: a gzip header, one deflate segment that expands to
 * 1 MiB of spaces, repeated (each segment ends with a full flush, so it is
 * byte-aligned and refers to nothing before it), an empty final block and
 * the trailer (CRC-32 and size of the decoded bytes). */
#ifndef CRAWLD_TESTSITE_PAYLOAD_H
#define CRAWLD_TESTSITE_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* A 4x4 RGB PNG whose colour depends on n. 0 or -ENOMEM/-EIO. */
int payload_png(int n, cr_buf *out);
/* A one-page PDF that mentions a URL in its text. 0 or -ENOMEM. */
int payload_pdf(int n, cr_buf *out);

typedef struct payload_bomb payload_bomb;

/* A bomb of mib MiB decoded (1..4095). NULL when memory runs out or zlib fails.
 * Caller owns the result; free with payload_bomb_free(). Immutable after
 * creation, so threads may read it at once. */
payload_bomb *payload_bomb_new(int mib);
void payload_bomb_free(payload_bomb *b);
uint64_t payload_bomb_size(const payload_bomb *b);      /* bytes on the wire */
/* Copies wire bytes [pos, pos+n) into buf; returns how many (0 at the end). */
size_t payload_bomb_read(const payload_bomb *b, uint64_t pos, char *buf, size_t n);

#endif
