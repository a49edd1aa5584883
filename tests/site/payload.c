/* tests/site/payload: PNG, PDF and the gzip bomb (see payload.h). */
#include "tests/site/payload.h"

#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "common/alloc.h"

static int put_be32(cr_buf *b, uint32_t v)
{
    unsigned char x[4] = { (unsigned char)(v >> 24), (unsigned char)(v >> 16),
                           (unsigned char)(v >> 8), (unsigned char)v };
    return cr_buf_append(b, x, 4);
}

static int png_chunk(cr_buf *b, const char *type, const unsigned char *data, size_t n)
{
    uLong crc = crc32(0L, (const Bytef *)type, 4);
    if (n > 0)
        crc = crc32(crc, data, (uInt)n);
    int rc = put_be32(b, (uint32_t)n);
    if (rc == 0)
        rc = cr_buf_append(b, type, 4);
    if (rc == 0 && n > 0)
        rc = cr_buf_append(b, data, n);
    if (rc == 0)
        rc = put_be32(b, (uint32_t)crc);
    return rc;
}

int payload_png(int n, cr_buf *out)
{
    enum { W = 4, H = 4 };
    unsigned char raw[H * (1 + 3 * W)];
    unsigned char z[256];
    uLongf zlen = sizeof(z);
    const unsigned char ihdr[13] = { 0, 0, 0, W, 0, 0, 0, H, 8, 2, 0, 0, 0 };
    for (int y = 0; y < H; y++) {
        unsigned char *row = raw + y * (1 + 3 * W);
        row[0] = 0; /* filter: none */
        for (int x = 0; x < W; x++) {
            row[1 + 3 * x] = (unsigned char)(n * 37 + x * 50);
            row[2 + 3 * x] = (unsigned char)(n * 91 + y * 50);
            row[3 + 3 * x] = (unsigned char)(n * 13 + 128);
        }
    }
    if (compress2(z, &zlen, raw, sizeof(raw), 9) != Z_OK)
        return -EIO;
    int rc = cr_buf_append(out, "\x89PNG\r\n\x1a\n", 8);
    if (rc == 0)
        rc = png_chunk(out, "IHDR", ihdr, sizeof(ihdr));
    if (rc == 0)
        rc = png_chunk(out, "IDAT", z, zlen);
    if (rc == 0)
        rc = png_chunk(out, "IEND", NULL, 0);
    return rc;
}

int payload_pdf(int n, cr_buf *out)
{
    return cr_buf_printf(out,
        "%%PDF-1.4\n"
        "1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
        "2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n"
        "3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R\n"
        "   /Annots [<< /Type /Annot /Subtype /Link /Rect [0 0 200 100]\n"
        "   /A << /S /URI /URI (/hidden/from-pdf.html) >> >>] >> endobj\n"
        "4 0 obj << /Length 44 >> stream\n"
        "BT /F1 12 Tf 10 50 Td (document %d) Tj ET\n"
        "endstream endobj\n"
        "trailer << /Root 1 0 R >>\n%%%%EOF\n", n);
}

/* ---- the bomb ---------------------------------------------------------- */

#define SEG_BYTES (1u << 20)

struct payload_bomb {
    unsigned char header[10];
    unsigned char *first;     /* the first 1 MiB segment */
    size_t first_len;
    unsigned char *seg;       /* every later 1 MiB segment */
    size_t seg_len;
    unsigned char tail[10];   /* empty final block + CRC-32 + ISIZE */
    uint64_t count;           /* segments */
    uint64_t size;            /* wire bytes */
};

/* One full-flushed segment of SEG_BYTES spaces from the stream. */
static int deflate_segment(z_stream *zs, const unsigned char *in, unsigned char **out, size_t *len)
{
    size_t cap = 64 * 1024;
    unsigned char *buf = cr_malloc(cap);
    if (buf == NULL)
        return -ENOMEM;
    zs->next_in = (Bytef *)in;
    zs->avail_in = SEG_BYTES;
    zs->next_out = buf;
    zs->avail_out = (uInt)cap;
    int zr = deflate(zs, Z_FULL_FLUSH);
    if (zr != Z_OK || zs->avail_in != 0 || zs->avail_out == 0) {
        cr_free(buf);
        return -EIO;
    }
    *out = buf;
    *len = cap - zs->avail_out;
    return 0;
}

payload_bomb *payload_bomb_new(int mib)
{
    payload_bomb *b = cr_calloc(1, sizeof(*b));
    unsigned char *spaces = cr_malloc(SEG_BYTES);
    z_stream zs;
    int zinit = 0;
    if (b == NULL || spaces == NULL || mib < 1 || mib > 4095)
        goto fail;
    memset(spaces, ' ', SEG_BYTES);
    memset(&zs, 0, sizeof(zs));
    if (deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        goto fail;
    zinit = 1;
    if (deflate_segment(&zs, spaces, &b->first, &b->first_len) != 0 ||
        deflate_segment(&zs, spaces, &b->seg, &b->seg_len) != 0)
        goto fail;

    const unsigned char hdr[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3 };
    memcpy(b->header, hdr, sizeof(hdr));
    uLong one = crc32(0L, spaces, SEG_BYTES);
    uLong crc = one;
    for (int i = 1; i < mib; i++)
        crc = crc32_combine(crc, one, (z_off_t)SEG_BYTES);
    uint32_t isize = (uint32_t)((uint64_t)mib * SEG_BYTES);
    b->tail[0] = 0x03; /* BFINAL=1, fixed Huffman, end-of-block */
    b->tail[1] = 0x00;
    for (int i = 0; i < 4; i++) {
        b->tail[2 + i] = (unsigned char)(crc >> (8 * i));
        b->tail[6 + i] = (unsigned char)(isize >> (8 * i));
    }
    b->count = (uint64_t)mib;
    b->size = sizeof(b->header) + b->first_len + (b->count - 1) * b->seg_len + sizeof(b->tail);
    deflateEnd(&zs);
    cr_free(spaces);
    return b;
fail:
    if (zinit)
        deflateEnd(&zs);
    cr_free(spaces);
    payload_bomb_free(b);
    return NULL;
}

void payload_bomb_free(payload_bomb *b)
{
    if (b == NULL)
        return;
    cr_free(b->first);
    cr_free(b->seg);
    cr_free(b);
}

uint64_t payload_bomb_size(const payload_bomb *b)
{
    return b->size;
}

size_t payload_bomb_read(const payload_bomb *b, uint64_t pos, char *buf, size_t n)
{
    const uint64_t o1 = sizeof(b->header);
    const uint64_t o2 = o1 + b->first_len;
    const uint64_t o3 = o2 + (b->count - 1) * b->seg_len;
    size_t done = 0;
    while (done < n && pos < b->size) {
        const unsigned char *src;
        uint64_t avail;
        if (pos < o1) {
            src = b->header + pos;
            avail = o1 - pos;
        } else if (pos < o2) {
            src = b->first + (pos - o1);
            avail = o2 - pos;
        } else if (pos < o3) {
            uint64_t off = (pos - o2) % b->seg_len;
            src = b->seg + off;
            avail = b->seg_len - off;
        } else {
            src = b->tail + (pos - o3);
            avail = b->size - pos;
        }
        size_t k = avail < n - done ? (size_t)avail : n - done;
        memcpy(buf + done, src, k);
        done += k;
        pos += k;
    }
    return done;
}
