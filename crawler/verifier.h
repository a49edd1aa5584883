/* crawler/verifier: the seen test's verifier backed by storage/db.
 *
 * record_new queues an INSERT OR IGNORE (asynchronous). check_insert first
 * looks the key up on a read connection: a committed row is a confirmed
 * duplicate, cheaply. Only when no committed row exists does it insert and
 * wait for the commit, so SQLite's UNIQUE constraint gives the final answer
 * also for a row still queued behind the writer. Read connections are kept
 * in a small pool, so any thread may call it. */
#ifndef CRAWLD_VERIFIER_H
#define CRAWLD_VERIFIER_H

#include "dedup/seen.h"
#include "storage/db.h"

typedef struct verifier verifier;

/* The row seen_test passes through to the verifier. */
typedef struct verifier_row {
    db_url u;            /* everything but url/url_len, which the key fills */
    db_done_fn on_new;   /* record_new's insert reports here (writer thread,
                            after COMMIT); may be NULL */
    void *ud;
    int64_t id;          /* OUT of check_insert: the row's id */
} verifier_row;

/* NULL when memory runs out. Free with verifier_free() before db_close(). */
verifier *verifier_new(db *d);
void verifier_free(verifier *v);
/* The seen_verifier interface over v. */
seen_verifier verifier_iface(verifier *v);

/* Restart support, the same for `crawld run` and `crawld dedup`:
 * verifier_snapshot flushes the writer and saves s's Bloom filter to path
 * with the highest committed row id as its mark (every row up to it was
 * added to the filter before it was queued); verifier_catch_up adds the
 * rows after a loaded snapshot's mark. 0 / rows added, or < 0 with err. */
int verifier_snapshot(seen *s, db *d, const char *path, char *err, size_t errlen);
int64_t verifier_catch_up(seen *s, db *d, uint64_t mark, char *err, size_t errlen);

#endif
