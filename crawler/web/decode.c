/* crawler/decode: Content-Encoding decoding, streamed and capped.
 *
 * A decoder is a short chain of layers. layers[0] takes the encoded input
 * (it undoes the coding listed LAST in Content-Encoding); each layer
 * inflates into its own fixed 16 KB buffer and hands every filled piece to
 * the next layer at once, the last layer to the sink. Nothing grows with the
 * input: memory is the zlib/brotli state plus one buffer per layer. Each
 * layer's output is counted and capped at max_out, so a bomb at any depth
 * stops after max_out bytes of work per layer.
 *
 * Layer states: START (deflate only: sniffing the first two bytes to tell
 * zlib from raw deflate), RUN, BETWEEN (gzip: a member ended; another one may
 * follow), END (the stream ended; later bytes are ignored). The first error
 * is sticky: it is stored in d->err with a message in d->msg. */
#define ZLIB_CONST
#include "decode.h"

#include <brotli/decode.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "common/alloc.h"

#define DECODE_CHUNK 16384

enum coding { CODING_GZIP, CODING_DEFLATE, CODING_BR };
enum lstate { L_START, L_RUN, L_BETWEEN, L_END };

struct layer {
    enum coding kind;
    enum lstate state;
    bool z_ready;                  /* inflateInit2 done */
    z_stream z;
    BrotliDecoderState *br;
    unsigned char hdr[2];          /* deflate: first bytes while sniffing */
    size_t nhdr;
    uint64_t in;                   /* bytes given to this layer */
    uint64_t out;                  /* bytes it produced */
    unsigned char *buf;            /* DECODE_CHUNK bytes */
};

struct decoder {
    size_t max_out;                /* 0: no cap */
    int nlayers;
    struct layer layers[DECODE_MAX_LAYERS];
    uint64_t out;                  /* bytes given to the sink */
    bool any_input;
    int err;                       /* sticky; 0 while all is well */
    char msg[160];
    decode_sink sink;              /* valid during decoder_write only */
    void *ctx;
};

static const char *coding_name(enum coding c)
{
    switch (c) {
    case CODING_GZIP: return "gzip";
    case CODING_DEFLATE: return "deflate";
    case CODING_BR: return "br";
    }
    return "?";
}

static voidpf zalloc_cb(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    if (size != 0 && items > SIZE_MAX / size)
        return Z_NULL;
    return cr_malloc((size_t)items * size);
}

static void zfree_cb(voidpf opaque, voidpf p)
{
    (void)opaque;
    cr_free(p);
}

static void *br_alloc_cb(void *opaque, size_t size)
{
    (void)opaque;
    return cr_malloc(size);
}

static void br_free_cb(void *opaque, void *p)
{
    (void)opaque;
    cr_free(p);
}

static int fail(decoder *d, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(decoder *d, int err, const char *fmt, ...)
{
    if (d->err == 0) {
        va_list ap;
        d->err = err;
        va_start(ap, fmt);
        vsnprintf(d->msg, sizeof d->msg, fmt, ap);
        va_end(ap);
    }
    return err;
}

/* Copies a header token into out for a message: printable ASCII only. */
static void token_copy(char *out, size_t outsz, const char *s, size_t n)
{
    size_t j = 0;
    for (size_t i = 0; i < n && j + 1 < outsz; i++) {
        unsigned char c = (unsigned char)s[i];
        out[j++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (outsz)
        out[j] = '\0';
}

static int parse_codings(const char *v, enum coding *list, int *n, char *errmsg, size_t errsz)
{
    *n = 0;
    const char *p = v ? v : "";
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        size_t len = (size_t)(end - start);
        if (len == 0)
            continue;
        enum coding c;
        if ((len == 4 && strncasecmp(start, "gzip", 4) == 0) ||
            (len == 6 && strncasecmp(start, "x-gzip", 6) == 0))
            c = CODING_GZIP;
        else if (len == 7 && strncasecmp(start, "deflate", 7) == 0)
            c = CODING_DEFLATE;
        else if (len == 2 && strncasecmp(start, "br", 2) == 0)
            c = CODING_BR;
        else if (len == 8 && strncasecmp(start, "identity", 8) == 0)
            continue;
        else {
            char tok[40];
            token_copy(tok, sizeof tok, start, len < 32 ? len : 32);
            if (errmsg && errsz)
                snprintf(errmsg, errsz, "unsupported Content-Encoding '%s'", tok);
            return -ENOTSUP;
        }
        if (*n == DECODE_MAX_LAYERS) {
            if (errmsg && errsz)
                snprintf(errmsg, errsz, "more than %d Content-Encoding layers",
                         DECODE_MAX_LAYERS);
            return -E2BIG;
        }
        list[(*n)++] = c;
    }
    return 0;
}

int decoder_new(const char *content_encoding, size_t max_out, decoder **out,
                char *errmsg, size_t errmsg_size)
{
    enum coding list[DECODE_MAX_LAYERS];
    int n = 0;
    int rc;
    decoder *d = NULL;

    *out = NULL;
    if (errmsg && errmsg_size)
        errmsg[0] = '\0';
    rc = parse_codings(content_encoding, list, &n, errmsg, errmsg_size);
    if (rc < 0)
        goto out;
    rc = -ENOMEM;
    d = cr_calloc(1, sizeof *d);
    if (d == NULL)
        goto fail;
    d->max_out = max_out;
    /* The coding listed last was applied last: it is undone first. */
    for (int i = 0; i < n; i++) {
        struct layer *l = &d->layers[i];
        l->kind = list[n - 1 - i];
        l->state = l->kind == CODING_DEFLATE ? L_START : L_RUN;
        d->nlayers = i + 1;
        l->buf = cr_malloc(DECODE_CHUNK);
        if (l->buf == NULL)
            goto fail;
        l->z.zalloc = zalloc_cb;
        l->z.zfree = zfree_cb;
        if (l->kind == CODING_GZIP) {
            if (inflateInit2(&l->z, 16 + MAX_WBITS) != Z_OK)
                goto fail;
            l->z_ready = true;
        } else if (l->kind == CODING_BR) {
            l->br = BrotliDecoderCreateInstance(br_alloc_cb, br_free_cb, NULL);
            if (l->br == NULL)
                goto fail;
        }
    }
    *out = d;
    d = NULL;
    rc = 0;
    goto out;
fail:
    if (errmsg && errmsg_size)
        snprintf(errmsg, errmsg_size, "out of memory");
out:
    decoder_free(d);
    return rc;
}

void decoder_free(decoder *d)
{
    if (d == NULL)
        return;
    for (int i = 0; i < d->nlayers; i++) {
        struct layer *l = &d->layers[i];
        if (l->z_ready)
            inflateEnd(&l->z);
        if (l->br)
            BrotliDecoderDestroyInstance(l->br);
        cr_free(l->buf);
    }
    cr_free(d);
}

static int push(decoder *d, int i, const unsigned char *p, size_t n);

/* The sink end of the chain, with the cap. */
static int emit(decoder *d, const unsigned char *p, size_t n)
{
    int stop_after = 0;
    if (d->max_out && n > d->max_out - d->out) {
        n = (size_t)(d->max_out - d->out);
        stop_after = 1;
    }
    if (n > 0) {
        if (d->sink(d->ctx, (const char *)p, n) != 0) {
            d->out += n;
            return fail(d, -ECANCELED, "stopped by the receiver");
        }
        d->out += n;
    }
    if (stop_after)
        return fail(d, -E2BIG, "decoded size over the cap");
    return 0;
}

/* Output of layer i goes on to layer i+1 (capped too) or to the sink. */
static int pass(decoder *d, int i, const unsigned char *p, size_t n)
{
    struct layer *l = &d->layers[i];
    if (i + 1 == d->nlayers)
        return emit(d, p, n);
    if (d->max_out && n > d->max_out - l->out) {
        l->out = d->max_out;
        return fail(d, -E2BIG, "%s: inner layer output over the cap", coding_name(l->kind));
    }
    l->out += n;
    return push(d, i + 1, p, n);
}

static bool looks_like_zlib(const unsigned char h[2])
{
    unsigned cmf = h[0], flg = h[1];
    return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 == 0 &&
           (flg & 0x20) == 0;
}

/* Runs inflate over p[0..n) for a gzip or deflate layer. */
static int zrun(decoder *d, int i, const unsigned char *p, size_t n)
{
    struct layer *l = &d->layers[i];
    l->z.next_in = p;
    l->z.avail_in = (uInt)n;
    for (;;) {
        if (l->state == L_BETWEEN) {
            /* gzip: another member may follow; anything else is trailing junk. */
            if (l->z.avail_in == 0)
                return 0;
            if (l->z.next_in[0] != 0x1f) {
                l->state = L_END;
                return 0;
            }
            if (inflateReset(&l->z) != Z_OK)
                return fail(d, -EBADMSG, "%s: %s", coding_name(l->kind), "cannot reset");
            l->state = L_RUN;
        }
        l->z.next_out = l->buf;
        l->z.avail_out = DECODE_CHUNK;
        int r = inflate(&l->z, Z_NO_FLUSH);
        size_t made = DECODE_CHUNK - l->z.avail_out;
        if (r == Z_MEM_ERROR)
            return fail(d, -ENOMEM, "%s: %s", coding_name(l->kind), "out of memory");
        if (r == Z_DATA_ERROR || r == Z_NEED_DICT || r == Z_STREAM_ERROR)
            return fail(d, -EBADMSG, "%s: %s", coding_name(l->kind),
                        r == Z_NEED_DICT ? "needs a preset dictionary"
                        : l->z.msg ? l->z.msg : "corrupt data");
        if (made > 0) {
            int rc = pass(d, i, l->buf, made);
            if (rc < 0)
                return rc;
        }
        if (r == Z_STREAM_END) {
            l->state = l->kind == CODING_GZIP ? L_BETWEEN : L_END;
            if (l->state == L_END)
                return 0;
            continue;
        }
        /* Z_OK or Z_BUF_ERROR: done when the input is used up and inflate
         * had room left (so it holds no pending output). */
        if (l->z.avail_in == 0 && l->z.avail_out > 0)
            return 0;
        if (r == Z_BUF_ERROR && made == 0)
            return 0;
    }
}

static int zpush(decoder *d, int i, const unsigned char *p, size_t n)
{
    struct layer *l = &d->layers[i];
    if (l->state == L_START) {
        while (l->nhdr < 2 && n > 0) {
            l->hdr[l->nhdr++] = *p++;
            n--;
        }
        if (l->nhdr < 2)
            return 0;
        int wbits = looks_like_zlib(l->hdr) ? MAX_WBITS : -MAX_WBITS;
        int r = inflateInit2(&l->z, wbits);
        if (r != Z_OK)
            return fail(d, r == Z_MEM_ERROR ? -ENOMEM : -EBADMSG, "%s: %s",
                        coding_name(l->kind), "cannot start inflate");
        l->z_ready = true;
        l->state = L_RUN;
        unsigned char hdr[2] = {l->hdr[0], l->hdr[1]};
        int rc = zrun(d, i, hdr, 2);
        if (rc < 0)
            return rc;
        if (l->state == L_END)
            return 0;
    }
    while (n > 0 && l->state != L_END) {
        size_t piece = n < (1u << 30) ? n : (1u << 30); /* avail_in is a uInt */
        int rc = zrun(d, i, p, piece);
        if (rc < 0)
            return rc;
        p += piece;
        n -= piece;
    }
    return 0;
}

static int brpush(decoder *d, int i, const unsigned char *p, size_t n)
{
    struct layer *l = &d->layers[i];
    const uint8_t *next_in = p;
    size_t avail_in = n;
    for (;;) {
        uint8_t *next_out = l->buf;
        size_t avail_out = DECODE_CHUNK;
        BrotliDecoderResult r =
            BrotliDecoderDecompressStream(l->br, &avail_in, &next_in, &avail_out, &next_out, NULL);
        size_t made = DECODE_CHUNK - avail_out;
        if (r == BROTLI_DECODER_RESULT_ERROR) {
            BrotliDecoderErrorCode c = BrotliDecoderGetErrorCode(l->br);
            const char *s = BrotliDecoderErrorString(c);
            if (s[0] == '_')
                s++;
            bool oom = c <= BROTLI_DECODER_ERROR_ALLOC_CONTEXT_MODES &&
                       c >= BROTLI_DECODER_ERROR_ALLOC_BLOCK_TYPE_TREES;
            return fail(d, oom ? -ENOMEM : -EBADMSG, "br: %s", s);
        }
        if (made > 0) {
            int rc = pass(d, i, l->buf, made);
            if (rc < 0)
                return rc;
        }
        if (r == BROTLI_DECODER_RESULT_SUCCESS) {
            l->state = L_END;
            return 0;
        }
        if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT)
            return 0;
        /* NEEDS_MORE_OUTPUT: go round with an empty buffer. */
    }
}

static int push(decoder *d, int i, const unsigned char *p, size_t n)
{
    if (i == d->nlayers)
        return emit(d, p, n);
    struct layer *l = &d->layers[i];
    if (l->state == L_END || n == 0)
        return 0;
    l->in += n;
    if (l->kind == CODING_BR)
        return brpush(d, i, p, n);
    return zpush(d, i, p, n);
}

int decoder_write(decoder *d, const void *data, size_t len, decode_sink sink, void *ctx)
{
    if (d->err)
        return d->err;
    if (len == 0)
        return 0;
    d->any_input = true;
    d->sink = sink;
    d->ctx = ctx;
    int rc = push(d, 0, data, len);
    d->sink = NULL;
    d->ctx = NULL;
    return rc;
}

int decoder_finish(decoder *d)
{
    if (d->err)
        return d->err;
    if (!d->any_input)
        return 0;
    for (int i = 0; i < d->nlayers; i++) {
        struct layer *l = &d->layers[i];
        if (l->state == L_END || l->state == L_BETWEEN)
            continue;
        if (l->in == 0 && i > 0 && d->layers[i - 1].state == L_END &&
            d->layers[i - 1].out == 0)
            continue; /* the outer stream was empty: nothing to decode here */
        return fail(d, -EPIPE, "%s: %s", coding_name(l->kind), "stream ended early");
    }
    return 0;
}

uint64_t decoder_out_bytes(const decoder *d) { return d->out; }

const char *decoder_error(const decoder *d) { return d->msg; }
