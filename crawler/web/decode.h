/* crawler/decode: incremental HTTP content decoding (Content-Encoding) with
 * a hard cap on the decoded size.
 *
 * Bytes in, decoded bytes out through a sink; no I/O. Codings: gzip (also
 * x-gzip, several concatenated members), deflate (zlib-wrapped as RFC 9110
 * says, or raw deflate as some servers send it: told apart by the first two
 * bytes) and br; identity is a pass-through. A Content-Encoding list such as
 * "gzip, br" (gzip applied first) is undone in reverse order, at most
 * DECODE_MAX_LAYERS layers. Every layer's output is capped at max_out bytes,
 * so a compression bomb costs O(max_out) time and a fixed amount of memory
 * (about 50 KB per gzip/deflate layer; a br layer's window can reach 16 MB,
 * which the brotli format allows). Bytes after the end of a stream are
 * ignored, except that a gzip member may follow a gzip member.
 *
 * A decoder is used by one thread at a time. */
#ifndef CRAWLD_DECODE_H
#define CRAWLD_DECODE_H

#include <stddef.h>
#include <stdint.h>

#define DECODE_MAX_LAYERS 3

typedef struct decoder decoder;

/* Receives decoded bytes; returns 0 to go on, nonzero to stop decoding
 * (decoder_write then returns -ECANCELED). */
typedef int (*decode_sink)(void *ctx, const char *data, size_t len);

/* Makes a decoder for a Content-Encoding header value (NULL or "" for none;
 * several header lines may be joined with ","). max_out caps the decoded
 * size (0: no cap). Returns 0, -ENOTSUP for an unknown coding, -E2BIG for
 * more than DECODE_MAX_LAYERS codings, -ENOMEM. On error *out is NULL and
 * errmsg (when given) says why, e.g. "unsupported Content-Encoding 'zstd'".
 * Caller owns *out; free with decoder_free(). */
int decoder_new(const char *content_encoding, size_t max_out, decoder **out /* OUT */,
                char *errmsg /* OUT, may be NULL */, size_t errmsg_size);
void decoder_free(decoder *d);

/* Feeds len encoded bytes; decoded output goes to sink as it is produced,
 * in pieces of at most 16 KB. Returns 0 when all input was taken;
 * -E2BIG when the output reached max_out (exactly max_out bytes were passed
 * to the sink, the rest is dropped); -EBADMSG on corrupt input; -ECANCELED
 * when the sink said stop; -ENOMEM. After any error the decoder refuses
 * more input with the same error. */
int decoder_write(decoder *d, const void *data, size_t len, decode_sink sink, void *ctx);

/* Call once the input has ended: 0 when every layer's stream ended
 * properly (or no byte was ever written), -EPIPE when a stream stopped
 * early, or the error that stopped decoding before. */
int decoder_finish(decoder *d);

/* Bytes given to the sink so far. */
uint64_t decoder_out_bytes(const decoder *d);

/* What went wrong, e.g. "gzip: invalid block type" or "br: stream ended
 * early"; "" when nothing did. Valid until the next call on d. */
const char *decoder_error(const decoder *d);

#endif
