/* storage/samples: how the `samples` table stores its rows (deflated) and
 * thins them with age (see db_put_sample and db_prune_samples in db.h).
 * Internal to storage/: db_put_sample packs on the caller's thread, the
 * writer thread calls samples_prune() on its own connection inside the
 * batch's transaction, and readers unpack. */
#ifndef CRAWLD_STORAGE_SAMPLES_H
#define CRAWLD_STORAGE_SAMPLES_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "storage/db.h"

#define SAMPLES_FORMAT_DEFLATE 1 /* first byte of a packed row */
#define SAMPLES_TEXT_MAX DB_URL_MAX /* bytes of a sample's text */

/* text[0..len) as a packed row: the format byte, then raw deflate with a
 * preset dictionary of the keys a sample holds (about a quarter of the
 * text). *out is the caller's (free with cr_free). 0, -E2BIG (over
 * SAMPLES_TEXT_MAX), -ENOMEM. OUT: out, outlen */
int samples_pack(const char *text, size_t len, unsigned char **out, size_t *outlen);
/* Appends the text of a packed row to out (capped at SAMPLES_TEXT_MAX).
 * 0, -EBADMSG (unknown format, corrupt or over the cap), -ENOMEM. */
int samples_unpack(const void *row, size_t len, cr_buf *out);

/* 0 when tiers[0..n) is usable: 1..DB_SAMPLE_TIERS_MAX tiers, ages
 * increasing, every_ms > 0 and each a multiple of the one before; else
 * -EINVAL. */
int samples_tiers_check(const db_sample_tier *tiers, size_t n);

/* Deletes from `samples`, for each tier in turn, the rows whose age reached
 * tier.age_ms between since_ms and now_ms (all rows old enough when
 * since_ms is 0 or not before now_ms) that have an earlier row in their
 * tier.every_ms bucket (buckets aligned on multiples of every_ms). Returns
 * an SQLite result code; *deleted (may be NULL) gets the rows deleted.
 * OUT: deleted */
int samples_prune(sqlite3 *conn, const db_sample_tier *tiers, size_t n, int64_t now_ms,
                  int64_t since_ms, int64_t *deleted);

#endif
