/* storage/samples: the `samples` table's rows, packed and thinned with age.
 *
 * Packing. A sample is some 500 to 800 bytes of JSON, most of it the same
 * keys every time; raw deflate with those keys as a preset dictionary
 * stores it in about a quarter of that. Rows written as TEXT (by crawld
 * before this) are read as they are. The dictionary may never change for
 * format 1: a new one is a new format byte.
 *
 * Thinning.
 * Each tier says: rows at least age_ms old keep one per every_ms, the
 * earliest of each every_ms-aligned bucket. The earliest row of a bucket is
 * never deleted by its own tier, nor by a finer one (its buckets nest inside:
 * every_ms grows by whole multiples), so "has an earlier row in its bucket"
 * can be asked of the table as it stands, and pruning in many small passes
 * leaves exactly what one pass over the whole history would. A pass looks
 * only at the rows that crossed a tier's age since the previous pass: with
 * the table keyed by t_ms, that is one index range per tier and one probe
 * per row in it. */
#include "storage/samples.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "common/alloc.h"

/* The keys of a sample as crawler/sampler writes them (sorted), with the
 * punctuation around them; the end of the dictionary is what deflate finds
 * cheapest to refer to, so the keys every sample has come last. */
static const char dictionary[] =
    "\"errors\":{\"DNS\":,\"TLS\":,\"aborted\":,\"bad URL\":,\"body too large\":,"
    "\"cancelled\":,\"connect\":,\"connect timeout\":,\"decode\":,\"headers too large\":,"
    "\"low speed\":,\"network\":,\"other\":,\"out of memory\":,\"protocol\":,\"timeout\":},"
    "{\"bloom_fill\":[0.,0.],\"bloom_stages\":16,\"by_class\":[0,,,,],\"bytes\":,"
    "\"checked_new\":,\"dup_bloom_trusted\":0,\"dup_recent_cache\":,\"dup_sqlite\":,"
    "\"elapsed_s\":,\"errors\":{},\"fetch_errors\":,\"fp_caught\":,\"fpr_bound\":0.01,"
    "\"fpr_observed\":0,\"fpr_predicted\":,\"frontier_memory\":,\"frontier_sqlite\":,"
    "\"hosts_active\":,\"links\":,\"new_bloom_no\":,\"pages\":,\"pages_per_s\":,\"urls\":}";

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    if (size != 0 && items > SIZE_MAX / size)
        return Z_NULL;
    return cr_malloc((size_t)items * size); /* zlib needs no zeroed memory */
}

static void z_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    cr_free(p);
}

int samples_pack(const char *text, size_t len, unsigned char **out, size_t *outlen)
{
    z_stream z;
    unsigned char *buf = NULL;
    int rc = -ENOMEM;

    *out = NULL;
    *outlen = 0;
    if (len > SAMPLES_TEXT_MAX)
        return -E2BIG;
    memset(&z, 0, sizeof z);
    z.zalloc = z_alloc;
    z.zfree = z_free;
    /* a 4 KiB window and small hash tables (48 KiB in all) hold the
     * dictionary and a sample; inflate reads it with any larger window */
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -12, 6, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    if (deflateSetDictionary(&z, (const Bytef *)dictionary, sizeof dictionary - 1) != Z_OK)
        goto out;
    size_t cap = 1 + deflateBound(&z, (uLong)len);
    buf = cr_malloc(cap);
    if (buf == NULL)
        goto out;
    buf[0] = SAMPLES_FORMAT_DEFLATE;
    z.next_in = (Bytef *)(uintptr_t)text;
    z.avail_in = (uInt)len;
    z.next_out = buf + 1;
    z.avail_out = (uInt)(cap - 1);
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        goto out;
    *outlen = 1 + z.total_out;
    *out = buf;
    buf = NULL;
    rc = 0;
out:
    deflateEnd(&z);
    cr_free(buf);
    return rc;
}

int samples_unpack(const void *row, size_t len, cr_buf *out)
{
    const unsigned char *p = row;
    unsigned char chunk[4096];
    z_stream z;
    int rc = 0, zr;

    if (len < 1 || p[0] != SAMPLES_FORMAT_DEFLATE)
        return -EBADMSG;
    memset(&z, 0, sizeof z);
    z.zalloc = z_alloc;
    z.zfree = z_free;
    if (inflateInit2(&z, -15) != Z_OK)
        return -ENOMEM;
    if (inflateSetDictionary(&z, (const Bytef *)dictionary, sizeof dictionary - 1) != Z_OK) {
        rc = -ENOMEM;
        goto out;
    }
    z.next_in = (Bytef *)(uintptr_t)(p + 1);
    z.avail_in = (uInt)(len - 1);
    size_t start = out->len;
    do {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        zr = inflate(&z, Z_NO_FLUSH);
        if (zr == Z_MEM_ERROR) {
            rc = -ENOMEM;
            break;
        }
        if (zr != Z_OK && zr != Z_STREAM_END) {
            rc = -EBADMSG; /* corrupt, or cut short (Z_BUF_ERROR) */
            break;
        }
        size_t got = sizeof chunk - z.avail_out;
        if (out->len - start + got > SAMPLES_TEXT_MAX) {
            rc = -EBADMSG;
            break;
        }
        rc = cr_buf_append(out, chunk, got);
    } while (rc == 0 && zr != Z_STREAM_END);
out:
    inflateEnd(&z);
    return rc;
}

/* Rows in [?1, ?2) that are not the earliest of their ?3-wide bucket. The
 * WHERE clause reads the table it deletes from: SQLite collects the rows
 * first, so each is judged against the table as it was. */
static const char prune_sql[] =
    "DELETE FROM samples WHERE t_ms >= ?1 AND t_ms < ?2 AND EXISTS ("
    "SELECT 1 FROM samples AS e WHERE e.t_ms >= samples.t_ms - samples.t_ms % ?3"
    " AND e.t_ms < samples.t_ms)";

int samples_tiers_check(const db_sample_tier *tiers, size_t n)
{
    if (tiers == NULL || n == 0 || n > DB_SAMPLE_TIERS_MAX)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (tiers[i].age_ms <= 0 || tiers[i].every_ms <= 0)
            return -EINVAL;
        if (i > 0 && (tiers[i].age_ms <= tiers[i - 1].age_ms ||
                      tiers[i].every_ms % tiers[i - 1].every_ms != 0))
            return -EINVAL;
    }
    return 0;
}

int samples_prune(sqlite3 *conn, const db_sample_tier *tiers, size_t n, int64_t now_ms,
                  int64_t since_ms, int64_t *deleted)
{
    sqlite3_stmt *s = NULL;
    int64_t gone = 0;
    int rc = sqlite3_prepare_v2(conn, prune_sql, -1, &s, NULL);

    if (since_ms <= 0 || since_ms >= now_ms)
        since_ms = 0; /* a first pass, or the clock went back: look at everything */
    for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
        /* t_ms <= now_ms - age_ms: at least age_ms old now, and not at since_ms */
        int64_t hi = now_ms - tiers[i].age_ms + 1;
        int64_t lo = since_ms > 0 ? since_ms - tiers[i].age_ms + 1 : INT64_MIN;
        if (hi <= lo)
            continue;
        sqlite3_bind_int64(s, 1, lo);
        sqlite3_bind_int64(s, 2, hi);
        sqlite3_bind_int64(s, 3, tiers[i].every_ms);
        rc = sqlite3_step(s);
        if (rc == SQLITE_DONE) {
            rc = SQLITE_OK;
            gone += sqlite3_changes(conn);
        }
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    if (deleted != NULL)
        *deleted = gone;
    return rc;
}
